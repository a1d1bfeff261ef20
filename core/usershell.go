package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

// defaultShellTimeout bounds a user shell command without its own timeout.
const defaultShellTimeout = time.Hour

// runUserShell runs the user's own command, unsandboxed, as the user
// asked. Standalone, it is its own turn; otherwise an item of turn t. Its
// output goes into the model's context.
func (s *Session) runUserShell(t *turn, op OpShellCommand, standalone bool) {
	if standalone {
		s.emitTurnStarted(t, TurnUserShell)
	}
	timeout := op.Timeout
	if timeout <= 0 {
		timeout = defaultShellTimeout
	}
	id := newItemID()
	argv := []string{userShell(), "-lc", op.Command}
	cwd := t.tc.Cwd
	item := CommandExecutionItem{ID: id, Command: op.Command, Argv: argv, Cwd: cwd, Status: StatusInProgress, Source: SourceUserShell}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	s.emit(t.subID, t.id, ExecCommandBegin{CallID: id, Command: argv, Cwd: cwd, Source: SourceUserShell})

	ctx, cancel := context.WithTimeout(t.ctx, timeout)
	defer cancel()
	start := s.cfg.Now()
	out, code := runStreaming(ctx, argv, cwd, func(stream OutputStream, chunk []byte) {
		s.emit(t.subID, t.id, ExecCommandOutputDelta{CallID: id, Stream: stream, Chunk: chunk})
	})
	dur := s.cfg.Now().Sub(start)
	ms := dur.Milliseconds()
	item.AggregatedOutput, item.ExitCode, item.DurationMs = &out, &code, &ms
	item.Status = StatusCompleted
	if code != 0 {
		item.Status = StatusFailed
	}
	s.emit(t.subID, t.id, ExecCommandEnd{CallID: id, ExitCode: code, AggregatedOutput: out, Duration: dur, Status: item.Status})
	s.emit(t.subID, t.id, ItemCompleted{Item: item})
	s.record(t.id, model.NewTextMessage(newMessageID(), "user", userShellRecord(op.Command, code, dur, out)))
	if standalone {
		s.endTurn(t, "", nil)
	}
}

// userShellRecord is what the model later sees of a user shell command.
func userShellRecord(cmd string, code int, dur time.Duration, out string) string {
	return fmt.Sprintf("<user_shell_command>\n<command>\n%s\n</command>\n<result>\nExit code: %d\nDuration: %.4f seconds\nOutput:\n%s\n</result>\n</user_shell_command>", cmd, code, dur.Seconds(), out)
}

func userShell() string {
	if sh := os.Getenv("SHELL"); sh != "" {
		return sh
	}
	return "bash"
}

// runStreaming runs argv in its own process group, streams output, and
// returns the combined output and exit code (124 on timeout, as the
// reference's command/exec).
func runStreaming(ctx context.Context, argv []string, cwd string, onOutput func(OutputStream, []byte)) (string, int) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var mu sync.Mutex
	var all bytes.Buffer
	w := func(stream OutputStream) *streamWriter {
		return &streamWriter{fn: func(b []byte) {
			mu.Lock()
			all.Write(b)
			mu.Unlock()
			onOutput(stream, append([]byte(nil), b...))
		}}
	}
	cmd.Stdout, cmd.Stderr = w(Stdout), w(Stderr)
	if err := cmd.Start(); err != nil {
		return err.Error(), 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	mu.Lock()
	out := all.String()
	mu.Unlock()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, 124
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return out, 128 + int(ws.Signal())
		}
		return out, ee.ExitCode()
	}
	if err != nil {
		return out + err.Error(), 1
	}
	return out, 0
}

type streamWriter struct{ fn func([]byte) }

func (w *streamWriter) Write(b []byte) (int, error) {
	w.fn(b)
	return len(b), nil
}
