//go:build linux

package policy

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArg0 = 16 // low 32 bits of args[0] on little-endian machines
)

// networkFilter returns a seccomp program that lets every system call
// through except the ones that reach the network: socket(2) for any
// family but AF_UNIX, and io_uring_setup(2), whose rings can open and
// connect sockets without calling socket(2). Both fail with EPERM. A
// system call made under another architecture (32-bit or x32 entry
// points) kills the process: its numbers mean other calls.
func networkFilter() []unix.SockFilter {
	const (
		ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jgeK = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		retK = unix.BPF_RET | unix.BPF_K
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	x32 := uint32(x32SyscallBit)
	if x32 == 0 {
		x32 = 0xffffffff // no such call numbers: the jump never fires
	}
	// Jump offsets count instructions after the current one.
	return []unix.SockFilter{
		/* 0 */ {Code: ldW, K: seccompDataArch},
		/* 1 */ {Code: jeqK, Jt: 1, Jf: 0, K: uint32(seccompArch)},
		/* 2 */ {Code: retK, K: unix.SECCOMP_RET_KILL_PROCESS},
		/* 3 */ {Code: ldW, K: seccompDataNr},
		/* 4 */ {Code: jgeK, Jt: 5, Jf: 0, K: x32}, // → 10 deny
		/* 5 */ {Code: jeqK, Jt: 4, Jf: 0, K: uint32(unix.SYS_IO_URING_SETUP)}, // → 10 deny
		/* 6 */ {Code: jeqK, Jt: 0, Jf: 2, K: uint32(unix.SYS_SOCKET)}, // → 7, else → 9 allow
		/* 7 */ {Code: ldW, K: seccompDataArg0},
		/* 8 */ {Code: jeqK, Jt: 0, Jf: 1, K: unix.AF_UNIX}, // → 9 allow, else → 10 deny
		/* 9 */ {Code: retK, K: unix.SECCOMP_RET_ALLOW},
		/* 10 */ {Code: retK, K: deny},
	}
}

// installNetworkFilter applies networkFilter to the calling thread, which
// must be locked to its goroutine and must execve afterwards: the filter
// is inherited across execve and by every child.
func installNetworkFilter() error {
	if seccompArch == 0 {
		return errors.New("no seccomp filter for this architecture")
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	prog := networkFilter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return errno
	}
	return nil
}
