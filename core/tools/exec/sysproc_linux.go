//go:build linux

package exec

import "syscall"

// groupAttr starts a command as the leader of a new process group. If the
// daemon dies, the kernel kills the command too.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// sessionAttr starts a command in a new session (and so a new process
// group) with its terminal, on descriptor 0, as controlling terminal.
func sessionAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
}
