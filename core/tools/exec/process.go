package exec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Stream names passed to OnOutput.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// drainGrace bounds how long output is still read after the command
// itself has exited (or was killed). A background grandchild holding the
// pipe or terminal open would otherwise keep the read, and the call,
// blocked for as long as it lives.
const drainGrace = 250 * time.Millisecond

// readChunk is the read buffer size of each output stream.
const readChunk = 64 << 10

// timeoutExitCode is reported for a command killed by its timeout, as
// timeout(1) and the reference's command/exec do.
const timeoutExitCode = 124

// process is one running command and everything it has printed.
type process struct {
	argv    []string
	cmd     *osexec.Cmd
	pid     int
	tty     bool
	started time.Time
	// interactive commands can be polled more than once, so they keep
	// the output not yet returned apart from the aggregate.
	interactive bool

	// stdin is the pipe or terminal the command reads; nil when its
	// input is /dev/null.
	stdin *os.File
	// stdinClosed is set once CloseStdin ended a pipe input.
	stdinClosed atomic.Bool
	// master is the terminal's controlling side (tty only).
	master *os.File
	// readers are our ends of the output pipes (or the master).
	readers []*os.File

	onOutput func(stream string, chunk []byte)
	// emitMu serialises output handling so OnOutput sees chunks one at
	// a time, in the order they were read; it is held while OnOutput
	// runs, p.mu is not.
	emitMu sync.Mutex

	// exited is closed once the command has ended and its output has
	// been read.
	exited chan struct{}

	// mu guards the fields that follow.
	mu             sync.Mutex
	agg            *headTail
	stdout, stderr *headTail
	pending        *headTail // output not yet returned by a call
	exitCode       int
	timedOut       bool
	ended          time.Time
	lastUsed       time.Time
	killReason     string
}

// startProcess starts argv as described by req; begin starts reading its
// output. interactive says whether stdin stays open for WriteStdin.
func startProcess(argv []string, req Request, outputCap int, interactive bool) (*process, error) {
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Dir = req.Cwd
	base := req.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = mergeEnv(base, req.Env, req.UnsetEnv)
	p := &process{
		argv:        argv,
		cmd:         cmd,
		tty:         req.TTY,
		interactive: interactive,
		onOutput:    req.OnOutput,
		exited:      make(chan struct{}),
		agg:         newHeadTail(outputCap),
		stdout:      newHeadTail(outputCap),
		stderr:      newHeadTail(outputCap),
		pending:     newHeadTail(outputCap),
	}
	var err error
	if req.TTY {
		err = p.startTTY(req)
	} else {
		err = p.startPipes(interactive)
	}
	if err != nil {
		return nil, err
	}
	p.pid = cmd.Process.Pid
	p.started = time.Now()
	p.lastUsed = p.started
	return p, nil
}

// begin starts reading the command's output and waiting for its end.
// Until it is called nothing is read: the command blocks once its pipes
// are full.
func (p *process) begin() {
	var wg sync.WaitGroup
	if p.tty {
		wg.Go(func() { p.readLoop(StreamStdout, p.master) })
	} else {
		wg.Go(func() { p.readLoop(StreamStdout, p.readers[0]) })
		wg.Go(func() { p.readLoop(StreamStderr, p.readers[1]) })
	}
	go p.wait(&wg)
}

func (p *process) startPipes(interactive bool) error {
	// A new process group, so that a kill reaches every descendant that
	// did not leave it on purpose.
	p.cmd.SysProcAttr = groupAttr()
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return err
	}
	var inR, inW *os.File
	if interactive {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return err
		}
		p.cmd.Stdin = inR
	}
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	err = p.cmd.Start()
	// The child has its copies; ours of its ends must go, or we never
	// see end of file.
	closeAll(outW, errW, inR)
	if err != nil {
		closeAll(outR, errR, inW)
		return err
	}
	p.readers = []*os.File{outR, errR}
	p.stdin = inW
	return nil
}

func (p *process) startTTY(req Request) error {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return fmt.Errorf("open pseudo-terminal: %w", err)
	}
	// pty.Open leaves the master in blocking mode, where neither a read
	// deadline nor Close can interrupt a Read. A non-blocking duplicate
	// goes through the runtime poller.
	master, err := pollable(ptmx)
	ptmx.Close()
	if err != nil {
		tty.Close()
		return err
	}
	rows, cols := req.Rows, req.Cols
	if rows == 0 {
		rows = 24
	}
	if cols == 0 {
		cols = 80
	}
	if err := setWinsize(master, rows, cols); err != nil {
		closeAll(master, tty)
		return err
	}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, tty, tty
	// A new session makes the terminal the controlling one and the
	// command the leader of a new process group.
	p.cmd.SysProcAttr = sessionAttr()
	err = p.cmd.Start()
	tty.Close()
	if err != nil {
		master.Close()
		return err
	}
	p.master = master
	p.stdin = master
	p.readers = []*os.File{master}
	return nil
}

// pollable returns a non-blocking duplicate of f, registered with the
// runtime poller.
func pollable(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup int
	var dupErr error
	if err := sc.Control(func(fd uintptr) {
		dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, err
	}
	return os.NewFile(uintptr(dup), f.Name()), nil
}

func setWinsize(f *os.File, rows, cols uint16) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := sc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return err
	}
	return ioErr
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// readLoop copies one output stream until end of file, an error, or the
// deadline set after exit.
func (p *process) readLoop(stream string, f *os.File) {
	buf := make([]byte, readChunk)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			p.emit(stream, bytes.Clone(buf[:n]))
		}
		if err != nil {
			// io.EOF for pipes; EIO from a terminal whose other side
			// is closed; a deadline or close error after exit.
			return
		}
	}
}

// drainNow reads what f holds right now, without blocking, once the
// reader of f has stopped.
func (p *process) drainNow(stream string, f *os.File) {
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, readChunk)
	for {
		var n int
		var rerr error
		if sc.Control(func(fd uintptr) { n, rerr = unix.Read(int(fd), buf) }) != nil {
			return
		}
		if n > 0 {
			p.emit(stream, bytes.Clone(buf[:n]))
		}
		// EAGAIN: nothing more now; EIO or 0: the writers are gone.
		if rerr != nil || n <= 0 {
			return
		}
	}
}

// emit records a chunk and hands it to OnOutput. The chunk is a fresh
// copy the receiver may keep: events carrying it are queued and read
// long after the next chunk arrives.
func (p *process) emit(stream string, chunk []byte) {
	p.emitMu.Lock()
	defer p.emitMu.Unlock()
	p.mu.Lock()
	p.agg.Write(chunk)
	if p.interactive {
		p.pending.Write(chunk)
	}
	if stream == StreamStderr {
		p.stderr.Write(chunk)
	} else {
		p.stdout.Write(chunk)
	}
	p.mu.Unlock()
	if p.onOutput != nil {
		p.onOutput(stream, chunk)
	}
}

// wait reaps the command, lets the readers drain for a bounded time, and
// records the exit.
func (p *process) wait(readers *sync.WaitGroup) {
	err := p.cmd.Wait()
	ended := time.Now()
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		// Something else still holds the output open, or the readers
		// were not scheduled in time. Stop them, then take what the
		// kernel still buffers without waiting: a deadline in the past
		// makes Read fail before it looks at the data.
		for _, f := range p.readers {
			_ = f.SetReadDeadline(time.Now())
		}
		<-drained
		streams := []string{StreamStdout, StreamStderr}
		for i, f := range p.readers {
			p.drainNow(streams[i], f)
		}
	}
	closeAll(p.readers...)
	if p.stdin != nil && p.stdin != p.master {
		p.stdin.Close()
	}
	code := exitCode(p.cmd.ProcessState, err)
	p.mu.Lock()
	if p.timedOut {
		code = timeoutExitCode
	}
	p.exitCode = code
	p.ended = ended
	p.mu.Unlock()
	close(p.exited)
}

// exitCode turns a wait result into a shell-style exit code: the status,
// or 128+n for a command killed by signal n.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return -1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// kill sends SIGKILL to the command's process group. Safe to call at any
// time, more than once.
func (p *process) kill(reason string) {
	p.mu.Lock()
	if p.killReason == "" {
		p.killReason = reason
	}
	p.mu.Unlock()
	// The group id is the command's pid (Setpgid / Setsid). Once the
	// leader has been reaped, the id may be reused by another group: what
	// is left of this one is the manager's (lingering groups, checked
	// member by member).
	if p.done() {
		return
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
}

// timeout kills the command because its time is up.
func (p *process) timeout() {
	p.mu.Lock()
	p.timedOut = true
	p.mu.Unlock()
	p.kill("timed out")
}

func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// closeStdin ends the command's input: end of file on a pipe, the EOF
// character (Ctrl-D) on a terminal, which the terminal turns into end of
// file for the reader.
func (p *process) closeStdin() error {
	if p.tty {
		return p.writeStdin("\x04", time.Now().Add(time.Second))
	}
	if p.stdin == nil || !p.stdinClosed.CompareAndSwap(false, true) {
		return nil
	}
	return p.stdin.Close()
}

// writeStdin writes chars to the command's input, giving up at deadline
// when the command does not read.
func (p *process) writeStdin(chars string, deadline time.Time) error {
	if p.stdin == nil || p.stdinClosed.Load() {
		return errors.New("the command's input is closed")
	}
	if p.done() {
		return nil
	}
	_ = p.stdin.SetWriteDeadline(deadline)
	_, err := io.WriteString(p.stdin, chars)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.New("the command is not reading its input")
	}
	if err != nil && p.done() {
		return nil // it ended meanwhile; its exit is the news
	}
	return err
}

// mergeEnv returns base with overrides applied and unset names removed.
func mergeEnv(base []string, set map[string]string, unset []string) []string {
	if len(set) == 0 && len(unset) == 0 {
		return base
	}
	drop := make(map[string]bool, len(set)+len(unset))
	for k := range set {
		drop[k] = true
	}
	for _, k := range unset {
		drop[k] = true
	}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				name = kv[:i]
				break
			}
		}
		if !drop[name] {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		if !containsString(unset, k) {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
