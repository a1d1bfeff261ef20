//go:build unix

package review

import (
	"os/exec"
	"syscall"
)

// groupAttr starts git as the leader of a process group of its own, so
// that what it starts is killed with it.
func groupAttr() *syscall.SysProcAttr { return procAttr() }

// killGroup kills git's process group.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
