package exec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitFor is how long tests wait for something that should happen.
const waitFor = 10 * time.Second

func newTestManager(t *testing.T, o Options) *Manager {
	m := NewManager(o)
	t.Cleanup(func() { m.Close() })
	return m
}

// recorder collects OnOutput calls.
type recorder struct {
	mu     sync.Mutex
	chunks []string
	stream []string
	bytes  int64
}

func (r *recorder) on(stream string, chunk []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = append(r.chunks, string(chunk))
	r.stream = append(r.stream, stream)
	r.bytes += int64(len(chunk))
}

func (r *recorder) text(stream string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, c := range r.chunks {
		if stream == "" || r.stream[i] == stream {
			b.WriteString(c)
		}
	}
	return b.String()
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// start runs Start and fails the test if it does not return in time.
func start(t *testing.T, m *Manager, ctx context.Context, req Request) (*Result, error) {
	t.Helper()
	type out struct {
		r   *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := m.Start(ctx, req)
		ch <- out{r, err}
	}()
	select {
	case o := <-ch:
		return o.r, o.err
	case <-time.After(waitFor + 5*time.Second):
		t.Fatalf("Start(%q) did not return", req.Argv)
		return nil, nil
	}
}

func TestStartReportsOutputAndExit(t *testing.T) {
	m := newTestManager(t, Options{})
	var rec recorder
	r, err := start(t, m, context.Background(), Request{Argv: sh("echo out; echo err >&2; exit 3"), OnOutput: rec.on, Timeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	if r.Running || r.SessionID != 0 || r.ExitCode != 3 || r.TimedOut {
		t.Fatalf("result %+v", r)
	}
	if r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Fatalf("streams %q %q", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Aggregated, "out\n") || !strings.Contains(r.Aggregated, "err\n") || len(r.Aggregated) != 8 {
		t.Fatalf("aggregated %q", r.Aggregated)
	}
	if r.Output != r.Aggregated || r.OutputBytes != 8 || r.PID == 0 || r.Duration <= 0 {
		t.Fatalf("result %+v", r)
	}
	if rec.text(StreamStdout) != "out\n" || rec.text(StreamStderr) != "err\n" {
		t.Fatalf("streamed %q / %q", rec.text(StreamStdout), rec.text(StreamStderr))
	}
}

func TestOutputStreamsBeforeExit(t *testing.T) {
	// The command only ends once the test has seen its first line
	// through OnOutput: without streaming it would run into its timeout.
	dir := t.TempDir()
	flag := filepath.Join(dir, "flag")
	m := newTestManager(t, Options{})
	var once sync.Once
	var rec recorder
	on := func(stream string, chunk []byte) {
		rec.on(stream, chunk)
		if strings.Contains(rec.text(""), "first") {
			once.Do(func() { os.WriteFile(flag, nil, 0o644) })
		}
	}
	r, err := start(t, m, context.Background(), Request{
		Argv:     sh("echo first; while [ ! -e " + flag + " ]; do sleep 0.01; done; echo second"),
		OnOutput: on, Timeout: waitFor,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.TimedOut || r.ExitCode != 0 || rec.text("") != "first\nsecond\n" {
		t.Fatalf("result %+v, streamed %q", r, rec.text(""))
	}
}

func TestOutputCapKeepsHeadAndTail(t *testing.T) {
	m := newTestManager(t, Options{OutputCap: 1000})
	var rec recorder
	r, err := start(t, m, context.Background(), Request{Argv: []string{"seq", "1", "100000"}, OnOutput: rec.on, Timeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	full := rec.text("")
	if !strings.HasPrefix(full, "1\n2\n") || !strings.HasSuffix(full, "99999\n100000\n") || r.OutputBytes != int64(len(full)) {
		t.Fatalf("streamed output incomplete (%d bytes, reported %d)", len(full), r.OutputBytes)
	}
	for name, s := range map[string]string{"aggregated": r.Aggregated, "stdout": r.Stdout, "output": r.Output} {
		if !strings.HasPrefix(s, "1\n2\n3\n") || !strings.HasSuffix(s, "99999\n100000\n") {
			t.Errorf("%s lost its head or tail: %q…%q", name, s[:20], s[len(s)-20:])
		}
		if !strings.Contains(s, "bytes omitted") || len(s) > 1100 {
			t.Errorf("%s not capped: %d bytes", name, len(s))
		}
	}
	text := r.ModelText()
	if !strings.Contains(text, "Original token count: "+strconv.FormatInt((int64(len(full))+3)/4, 10)+"\n") {
		t.Errorf("token count does not cover the whole output: %q", text[:120])
	}
}

func TestTTY(t *testing.T) {
	m := newTestManager(t, Options{})
	var rec recorder
	r, err := start(t, m, context.Background(), Request{
		Argv: sh("test -t 0 && test -t 1 && test -t 2 && echo is-a-tty; stty size"), TTY: true, Rows: 30, Cols: 90,
		OnOutput: rec.on, Timeout: waitFor,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || r.Aggregated != "is-a-tty\r\n30 90\r\n" || r.Stderr != "" {
		t.Fatalf("result %+v", r)
	}
	for _, s := range rec.stream {
		if s != StreamStdout {
			t.Fatalf("terminal output on stream %q", s)
		}
	}
	r, err = start(t, m, context.Background(), Request{Argv: sh("test -t 1 || echo not-a-tty"), Timeout: waitFor})
	if err != nil || r.Aggregated != "not-a-tty\n" {
		t.Fatalf("pipe command: %+v %v", r, err)
	}
}

// pollUntil calls WriteStdin with no input until the session's output so
// far contains want or the command ends.
func pollUntil(t *testing.T, m *Manager, id int, first *Result, want string) (string, *Result) {
	t.Helper()
	got := first.Output
	r := first
	deadline := time.Now().Add(waitFor)
	for !strings.Contains(got, want) && r.Running && time.Now().Before(deadline) {
		var err error
		r, err = m.WriteStdin(context.Background(), id, "", 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got += r.Output
	}
	return got, r
}

func TestWriteStdinSession(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run("tty="+strconv.FormatBool(tty), func(t *testing.T) {
			m := newTestManager(t, Options{})
			r, err := start(t, m, context.Background(), Request{Argv: []string{"cat"}, TTY: tty, YieldTime: 250 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Running || r.SessionID == 0 {
				t.Fatalf("cat did not yield a session: %+v", r)
			}
			if !strings.Contains(r.ModelText(), "Process running with session ID "+strconv.Itoa(r.SessionID)+"\n") {
				t.Fatalf("model text %q", r.ModelText())
			}
			id := r.SessionID
			if s := m.Sessions(); len(s) != 1 || s[0].ID != id || !s[0].Running || s[0].TTY != tty {
				t.Fatalf("sessions %+v", s)
			}
			w, err := m.WriteStdin(context.Background(), id, "hello\n", 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			got, last := pollUntil(t, m, id, w, "hello")
			if !strings.Contains(got, "hello") || !last.Running || last.SessionID != id {
				t.Fatalf("read back %q, %+v", got, last)
			}
			end, err := m.Terminate(id)
			if err != nil || end.Running || end.ExitCode != 128+int(syscall.SIGKILL) {
				t.Fatalf("terminate: %+v %v", end, err)
			}
			if _, err := m.WriteStdin(context.Background(), id, "x", time.Millisecond); !errors.Is(err, ErrUnknownSession) {
				t.Fatalf("write after terminate: %v", err)
			}
			if len(m.Sessions()) != 0 {
				t.Fatalf("session left: %+v", m.Sessions())
			}
		})
	}
}

func TestSessionEndReportedByWriteStdin(t *testing.T) {
	m := newTestManager(t, Options{})
	r, err := start(t, m, context.Background(), Request{Argv: sh("read line; echo got:$line; exit 5"), YieldTime: 250 * time.Millisecond})
	if err != nil || !r.Running {
		t.Fatalf("%+v %v", r, err)
	}
	w, err := m.WriteStdin(context.Background(), r.SessionID, "abc\n", waitFor)
	if err != nil {
		t.Fatal(err)
	}
	if w.Running || w.ExitCode != 5 || w.Output != "got:abc\n" || w.SessionID != 0 {
		t.Fatalf("final poll %+v", w)
	}
	if !strings.Contains(w.ModelText(), "Process exited with code 5\n") {
		t.Fatalf("model text %q", w.ModelText())
	}
	if len(m.Sessions()) != 0 {
		t.Fatal("ended session still listed")
	}
}

func TestQuickCommandDoesNotWaitForYield(t *testing.T) {
	m := newTestManager(t, Options{})
	r, err := start(t, m, context.Background(), Request{Argv: sh("echo quick"), YieldTime: time.Hour})
	if err != nil || r.Running || r.Output != "quick\n" {
		t.Fatalf("%+v %v", r, err)
	}
}

// gone reports whether pid has exited (or is a zombie nobody reaps).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func firstInt(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(strings.TrimSpace(s), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("no pid in %q", s)
	}
	return n
}

func TestTimeoutKillsGrandchildren(t *testing.T) {
	m := newTestManager(t, Options{})
	// The timeout leaves the shell ample time to start its background
	// sleep and print its pid first.
	r, err := start(t, m, context.Background(), Request{Argv: sh("sleep 100 & echo $!; sleep 100"), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.ExitCode != 124 {
		t.Fatalf("result %+v", r)
	}
	waitGone(t, firstInt(t, r.Output))
	waitGone(t, r.PID)
}

func TestEscapedGrandchildDoesNotBlockRead(t *testing.T) {
	// setsid puts the sleep in its own session and group: no kill of
	// ours reaches it, and it holds the output pipe (or terminal) open.
	for _, tty := range []bool{false, true} {
		m := newTestManager(t, Options{})
		pidFile := filepath.Join(t.TempDir(), "pid")
		r, err := start(t, m, context.Background(), Request{
			Argv: sh("setsid sh -c 'echo $$ > " + pidFile + "; exec sleep 100' & while [ ! -s " + pidFile + " ]; do sleep 0.01; done; echo parent-done"),
			TTY:  tty, Timeout: waitFor,
		})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(pidFile)
		pid := firstInt(t, string(b))
		syscall.Kill(pid, syscall.SIGKILL)
		if r.ExitCode != 0 || !strings.Contains(r.Output, "parent-done") {
			t.Fatalf("tty=%t: %+v", tty, r)
		}
	}
}

func TestCancelKillsCommand(t *testing.T) {
	m := newTestManager(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	on := func(stream string, chunk []byte) {
		if strings.Contains(string(chunk), "ready") {
			cancel()
		}
	}
	r, err := start(t, m, ctx, Request{Argv: sh("sleep 100 & echo $!; echo ready; sleep 100"), OnOutput: on, Timeout: waitFor})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if r == nil || r.Running || r.ExitCode != 128+int(syscall.SIGKILL) || r.TimedOut {
		t.Fatalf("result %+v", r)
	}
	waitGone(t, firstInt(t, r.Output))
}

func TestExitCodesAndSignals(t *testing.T) {
	m := newTestManager(t, Options{})
	for _, c := range []struct {
		script string
		code   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
	} {
		r, err := start(t, m, context.Background(), Request{Argv: sh(c.script), Timeout: waitFor})
		if err != nil || r.ExitCode != c.code {
			t.Errorf("%q: %+v %v, want code %d", c.script, r, err, c.code)
		}
	}
	if _, err := m.Start(context.Background(), Request{Argv: []string{"/no/such/binary"}}); err == nil {
		t.Error("missing binary started")
	}
	if _, err := m.Start(context.Background(), Request{Argv: []string{"true"}, Cwd: "/no/such/dir"}); err == nil {
		t.Error("missing cwd accepted")
	}
	if _, err := m.Start(context.Background(), Request{}); err == nil {
		t.Error("empty argv accepted")
	}
}

func TestEnvAndCwd(t *testing.T) {
	t.Setenv("AGENTD_DROP_ME", "x")
	dir := t.TempDir()
	m := newTestManager(t, Options{})
	r, err := start(t, m, context.Background(), Request{
		Argv: sh(`echo "$AGENTD_FOO|${AGENTD_DROP_ME-unset}|$(pwd)"`), Cwd: dir,
		Env: map[string]string{"AGENTD_FOO": "bar"}, UnsetEnv: []string{"AGENTD_DROP_ME"}, Timeout: waitFor,
	})
	real, _ := filepath.EvalSymlinks(dir)
	if err != nil || r.Output != "bar|unset|"+real+"\n" {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestHugeOutputIsStreamedWithBoundedMemory(t *testing.T) {
	m := newTestManager(t, Options{})
	var n int64
	on := func(_ string, chunk []byte) { n += int64(len(chunk)) }
	// Sample the heap while 100 MB pass through: what is kept must stay
	// near the output caps, far below the output's size.
	stop := make(chan struct{})
	peak := make(chan uint64, 1)
	go func() {
		var ms runtime.MemStats
		var max uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > max {
				max = ms.HeapInuse
			}
			select {
			case <-stop:
				peak <- max
				return
			case <-tick.C:
			}
		}
	}()
	r, err := start(t, m, context.Background(), Request{Argv: []string{"head", "-c", "100000000", "/dev/zero"}, OnOutput: on, Timeout: 60 * time.Second})
	close(stop)
	maxHeap := <-peak
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	if n != 100_000_000 || r.OutputBytes != 100_000_000 {
		t.Fatalf("streamed %d bytes, counted %d", n, r.OutputBytes)
	}
	if len(r.Aggregated) > DefaultOutputCap+100 {
		t.Fatalf("aggregated output not capped: %d bytes", len(r.Aggregated))
	}
	if maxHeap > 48<<20 {
		t.Fatalf("heap reached %d MiB for 100 MB of output", maxHeap>>20)
	}
}

func TestOnOutputMayKeepChunks(t *testing.T) {
	m := newTestManager(t, Options{})
	var kept [][]byte
	var mu sync.Mutex
	on := func(_ string, chunk []byte) { mu.Lock(); kept = append(kept, chunk); mu.Unlock() }
	r, err := start(t, m, context.Background(), Request{Argv: []string{"seq", "1", "200000"}, OnOutput: on, Timeout: waitFor})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := string(bytes.Join(kept, nil)); !strings.HasPrefix(got, "1\n2\n3\n") || int64(len(got)) != r.OutputBytes ||
		strings.Count(got, "\n") != 200000 || !strings.HasSuffix(got, "199999\n200000\n") {
		t.Fatalf("kept chunks were overwritten (%d bytes, %d lines)", len(got), strings.Count(got, "\n"))
	}
}

func TestSessionLimitEndsLeastRecentlyUsed(t *testing.T) {
	m := newTestManager(t, Options{MaxSessions: 2})
	var ids, pids []int
	var last *Result
	for range 3 {
		r, err := start(t, m, context.Background(), Request{Argv: []string{"sleep", "100"}, YieldTime: 250 * time.Millisecond})
		if err != nil || !r.Running {
			t.Fatalf("%+v %v", r, err)
		}
		ids, pids, last = append(ids, r.SessionID), append(pids, r.PID), r
	}
	if len(last.Notes) != 1 || !strings.Contains(last.Notes[0], "session "+strconv.Itoa(ids[0])+" (sleep 100) was terminated") {
		t.Fatalf("notes %q", last.Notes)
	}
	if !strings.Contains(last.ModelText(), "Note: session "+strconv.Itoa(ids[0])) {
		t.Fatalf("note missing from model text: %q", last.ModelText())
	}
	waitGone(t, pids[0])
	s := m.Sessions()
	if len(s) != 2 || s[0].ID != ids[1] || s[1].ID != ids[2] {
		t.Fatalf("sessions %+v", s)
	}
	// Using session 2 makes session 3 the least recently used.
	if _, err := m.WriteStdin(context.Background(), ids[1], "", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r, err := start(t, m, context.Background(), Request{Argv: []string{"sleep", "100"}, YieldTime: 250 * time.Millisecond})
	if err != nil || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "session "+strconv.Itoa(ids[2])) {
		t.Fatalf("%+v %v", r, err)
	}
	pids = append(pids, r.PID)
	m.Close()
	for _, pid := range pids {
		waitGone(t, pid)
	}
	if _, err := m.Start(context.Background(), Request{Argv: []string{"true"}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}
}

func TestCloseKillsForegroundCommand(t *testing.T) {
	m := NewManager(Options{})
	ready := make(chan struct{})
	var once sync.Once
	type out struct {
		r   *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := m.Start(context.Background(), Request{Argv: sh("echo ready; sleep 100"), OnOutput: func(string, []byte) {
			once.Do(func() { close(ready) })
		}})
		done <- out{r, err}
	}()
	select {
	case <-ready:
	case <-time.After(waitFor):
		t.Fatal("command did not start")
	}
	m.Close()
	select {
	case o := <-done:
		if o.err != nil || o.r.ExitCode != 128+int(syscall.SIGKILL) {
			t.Fatalf("%+v %v", o.r, o.err)
		}
	case <-time.After(waitFor):
		t.Fatal("Close did not end the command")
	}
}

func TestResize(t *testing.T) {
	m := newTestManager(t, Options{})
	r, err := start(t, m, context.Background(), Request{Argv: sh("read x; stty size"), TTY: true, YieldTime: 250 * time.Millisecond})
	if err != nil || !r.Running {
		t.Fatalf("%+v %v", r, err)
	}
	if err := m.Resize(r.SessionID, 40, 100); err != nil {
		t.Fatal(err)
	}
	w, err := m.WriteStdin(context.Background(), r.SessionID, "\n", waitFor)
	if err != nil || w.Running || !strings.Contains(w.Output, "40 100") {
		t.Fatalf("%+v %v", w, err)
	}
	p, err := start(t, m, context.Background(), Request{Argv: []string{"cat"}, YieldTime: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Resize(p.SessionID, 1, 1); !errors.Is(err, ErrNotTTY) {
		t.Fatalf("resize of a pipe command: %v", err)
	}
	if err := m.Resize(999, 1, 1); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("resize of unknown session: %v", err)
	}
}

func TestRunUserShell(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh")
	m := newTestManager(t, Options{})
	var rec recorder
	dir := t.TempDir()
	r, err := m.RunUserShell(context.Background(), UserShellRequest{Command: "echo shell-out; echo e >&2; cat; exit 2", Cwd: dir, OnOutput: rec.on})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 2 || !strings.Contains(r.Aggregated, "shell-out\n") || !strings.Contains(r.Aggregated, "e\n") {
		t.Fatalf("%+v", r)
	}
	if rec.text("") == "" {
		t.Fatal("no streamed output")
	}
	text := UserShellText("echo shell-out; echo e >&2; cat; exit 2", r, 0)
	if !strings.HasPrefix(text, "<user_shell_command>\n<command>\necho shell-out") || !strings.Contains(text, "Exit code: 2\n") {
		t.Fatalf("text %q", text)
	}
	r, err = m.RunUserShell(context.Background(), UserShellRequest{Command: "sleep 100", Timeout: 200 * time.Millisecond})
	if err != nil || r.ExitCode != 124 || !r.TimedOut {
		t.Fatalf("timeout: %+v %v", r, err)
	}
	if _, err := m.RunUserShell(context.Background(), UserShellRequest{Command: "  "}); err == nil {
		t.Fatal("empty command accepted")
	}
}

func TestDetectShell(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh")
	if s := DetectShell(); s.Path != "/bin/sh" || s.Name() != "sh" {
		t.Fatalf("%+v", s)
	}
	t.Setenv("SHELL", "")
	if s := DetectShell(); s.Path == "" || !isExecutable(s.Path) {
		t.Fatalf("fallback %+v", s)
	}
	t.Setenv("SHELL", "/no/such/shell")
	if s := DetectShell(); s.Path == "/no/such/shell" {
		t.Fatal("missing $SHELL used")
	}
	s := Shell{Path: "/bin/bash"}
	if got := s.Argv("ls", true); strings.Join(got, " ") != "/bin/bash -lc ls" {
		t.Fatal(got)
	}
	if got := s.Argv("ls", false); strings.Join(got, " ") != "/bin/bash -c ls" {
		t.Fatal(got)
	}
}

func BenchmarkOutputThroughput(b *testing.B) {
	m := NewManager(Options{})
	defer m.Close()
	const size = 100_000_000
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		var n int64
		r, err := m.Start(context.Background(), Request{Argv: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"},
			OnOutput: func(_ string, c []byte) { n += int64(len(c)) }})
		if err != nil || r.ExitCode != 0 || n != size {
			b.Fatalf("%+v %v %d", r, err, n)
		}
	}
}

func TestOutputNotLostWhenReaderIsLate(t *testing.T) {
	// OnOutput holds the reader past the drain grace after the first
	// chunk; what the command printed meanwhile is still in the kernel
	// and must not be dropped when reading stops.
	for _, tty := range []bool{false, true} {
		m := newTestManager(t, Options{})
		var once sync.Once
		var rec recorder
		on := func(stream string, chunk []byte) {
			rec.on(stream, chunk)
			once.Do(func() { time.Sleep(2 * drainGrace) })
		}
		r, err := start(t, m, context.Background(), Request{Argv: sh("printf first; sleep 0.05; printf second"), TTY: tty, OnOutput: on, Timeout: waitFor})
		if err != nil {
			t.Fatal(err)
		}
		if r.Aggregated != "firstsecond" || rec.text("") != "firstsecond" {
			t.Fatalf("tty=%t: aggregated %q, streamed %q", tty, r.Aggregated, rec.text(""))
		}
	}
}

// CloseStdin ends a pipe input: cat sees end of file and exits.
func TestCloseStdinEndsPipeInput(t *testing.T) {
	m := NewManager(Options{})
	defer m.Close()
	ctx := context.Background()
	res, err := m.Start(ctx, Request{Argv: []string{"cat"}, YieldTime: 200 * time.Millisecond})
	if err != nil || !res.Running {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := m.WriteStdin(ctx, res.SessionID, "bye", 0); err != nil {
		t.Fatal(err)
	}
	if err := m.CloseStdin(res.SessionID); err != nil {
		t.Fatal(err)
	}
	end, err := m.WriteStdin(ctx, res.SessionID, "", 10*time.Second)
	if err != nil || end.Running || end.ExitCode != 0 || end.Aggregated != "bye" {
		t.Fatalf("after CloseStdin: %+v %v", end, err)
	}
	if _, err := m.WriteStdin(ctx, res.SessionID, "more", 0); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("write after the end: %v", err)
	}
}

// OnEvict is told which session made room for a new one.
func TestOnEvictReportsSession(t *testing.T) {
	var evicted []int
	m := NewManager(Options{MaxSessions: 1, OnEvict: func(id int) { evicted = append(evicted, id) }})
	defer m.Close()
	ctx := context.Background()
	first, err := m.Start(ctx, Request{Argv: []string{"sleep", "30"}, YieldTime: 100 * time.Millisecond})
	if err != nil || !first.Running {
		t.Fatalf("%+v %v", first, err)
	}
	second, err := m.Start(ctx, Request{Argv: []string{"sleep", "30"}, YieldTime: 100 * time.Millisecond})
	if err != nil || !second.Running {
		t.Fatalf("%+v %v", second, err)
	}
	if len(evicted) != 1 || evicted[0] != first.SessionID {
		t.Fatalf("evicted %v, want [%d]", evicted, first.SessionID)
	}
}
