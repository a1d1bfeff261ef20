//go:build linux && arm64

package policy

import "golang.org/x/sys/unix"

// seccompArch is the audit architecture our filter is written for.
const seccompArch = unix.AUDIT_ARCH_AARCH64

// x32SyscallBit is 0: arm64 has no second system call numbering.
const x32SyscallBit = 0
