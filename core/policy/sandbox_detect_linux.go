//go:build linux

package policy

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func detect() Capabilities {
	c := Capabilities{LandlockABI: landlockABI(), Seccomp: seccompUsable()}
	if p, err := exec.LookPath("bwrap"); err == nil {
		c.Bwrap = p
		c.BwrapWorks = probeBwrap(p)
	}
	c.UserNetNS = probeUserNetNS()
	return c
}

// landlockABI asks the kernel for its Landlock ABI version.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// seccompUsable reports whether the kernel has seccomp and we know how to
// write a filter for this architecture.
func seccompUsable() bool {
	if seccompArch == 0 {
		return false
	}
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil
}

// probeTimeout bounds each probe: a wedged probe must not stall startup.
const probeTimeout = 5 * time.Second

func probeBwrap(bwrap string) bool {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--die-with-parent", "--", truePath)
	return cmd.Run() == nil
}

func probeUserNetNS() bool {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, truePath)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	return cmd.Run() == nil
}
