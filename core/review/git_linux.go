//go:build linux

package review

import "syscall"

// procAttr: a group of its own, killed if the daemon dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
