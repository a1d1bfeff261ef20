package mcp

import (
	"bufio"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// maxStderrLine caps one logged line of a server's stderr.
const maxStderrLine = 4 << 10

// process is a stdio server: the leader of its own process group, so that
// stopping it also ends whatever it started (an npx wrapper's node, a
// shell's children).
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the server's stdin
	stdout *os.File // our end of the server's stdout
	// exited is closed once the leader has exited (on Linux, before it is
	// reaped, so that its group id cannot be reused while we signal it).
	exited chan struct{}
	reaped bool // awaitExit reaped it already (not Linux)
	once   sync.Once
}

// startProcess starts a stdio server with the environment the reference
// gives one (see childEnv). Its stderr is logged line by line.
func startProcess(c ServerConfig, getenv func(string) (string, bool), log *zap.Logger) (*process, error) {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = childEnv(c, getenv)
	cmd.Dir = c.Cwd
	cmd.SysProcAttr = groupAttr()
	// Our own pipes: cmd.Wait then never waits for a copy that a
	// grandchild holding the pipe open could keep going.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW, outR, outW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	closeFiles(inR, outW, errW) // the child has its copies
	if err != nil {
		closeFiles(inW, outR, errR)
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go func() {
		p.reaped = awaitExit(cmd)
		close(p.exited)
	}()
	go logStderr(errR, log.With(zap.Int("pid", cmd.Process.Pid)))
	return p, nil
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

func logStderr(r *os.File, log *zap.Logger) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxStderrLine)
	for sc.Scan() {
		log.Info("MCP server stderr", zap.String("line", sc.Text()))
	}
}

// stop ends the server: its stdin is closed (the MCP way to ask a stdio
// server to exit); after grace it gets SIGTERM, after another grace
// SIGKILL; then whatever is left of its process group is killed. Safe to
// call more than once.
func (p *process) stop(grace time.Duration) {
	p.once.Do(func() {
		_ = p.stdin.Close()
		if !p.waitExit(grace) {
			p.signal(syscall.SIGTERM)
			if !p.waitExit(grace) {
				p.signal(syscall.SIGKILL)
				<-p.exited
			}
		}
		p.signal(syscall.SIGKILL) // what the server left behind
		if !p.reaped {
			_ = p.cmd.Wait()
		}
		_ = p.stdout.Close()
	})
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitStatus describes how the server ended ("exit status 3", "signal:
// killed"); call it after stop.
func (p *process) exitStatus() string {
	if p.cmd.ProcessState == nil {
		return "exited"
	}
	return p.cmd.ProcessState.String()
}
