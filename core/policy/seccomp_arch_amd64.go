//go:build linux && amd64

package policy

import "golang.org/x/sys/unix"

// seccompArch is the audit architecture our filter is written for.
const seccompArch = unix.AUDIT_ARCH_X86_64

// x32SyscallBit marks x32 system calls, which reach the same kernel
// entry points under other numbers; the filter refuses them all.
const x32SyscallBit = 0x40000000
