//go:build unix && !linux

package review

import "syscall"

// procAttr: a group of its own.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
