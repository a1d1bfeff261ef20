//go:build !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// groupAttr makes the server the leader of a new process group.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// awaitExit waits for the server to exit, and reaps it: without waitid's
// WNOWAIT the group is signalled only while the leader runs.
func awaitExit(cmd *exec.Cmd) (reaped bool) {
	_ = cmd.Wait()
	return true
}

// signal sends sig to the server's process group while its leader runs.
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}
