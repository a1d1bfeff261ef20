//go:build linux

package mcp

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupAttr makes the server the leader of a new process group; if the
// daemon dies, the kernel kills the server.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// awaitExit waits for the server to exit without reaping it: while it is
// a zombie its pid, and so its group id, cannot be reused, and signalling
// the group cannot reach a stranger.
func awaitExit(cmd *exec.Cmd) (reaped bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return false
		}
	}
}

// signal sends sig to the server's whole process group.
func (p *process) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}
