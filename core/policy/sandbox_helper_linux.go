//go:build linux

package policy

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// SandboxMain is the sandbox helper entry point: main calls it with the
// arguments after SandboxHelperArg, before any other setup, and exits
// with its result. It confines its own process (Landlock: read
// everywhere, write only under the --write directories; without --net,
// TCP connect/bind refused by Landlock where the kernel can and every
// non-Unix socket refused by a seccomp filter) and then replaces itself
// with the command, which inherits the confinement, as do its children.
// It never runs the command unconfined: when a restriction cannot be
// applied it exits with HelperSetupFailed and a message on stderr.
func SandboxMain(args []string) int {
	// Landlock and seccomp bind the thread that applies them; execve
	// must come from that same thread.
	runtime.LockOSThread()
	spec, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(2, "%v", err)
	}
	path, err := exec.LookPath(spec.argv[0])
	if err != nil {
		return helperFail(HelperNotFound, "%s: command not found", spec.argv[0])
	}
	if err := confineSelf(spec); err != nil {
		return helperFail(HelperSetupFailed, "cannot apply the sandbox, the command was not run: %v", err)
	}
	err = syscall.Exec(path, spec.argv, os.Environ())
	if errors.Is(err, syscall.ENOENT) {
		return helperFail(HelperNotFound, "%s: %v", spec.argv[0], err)
	}
	return helperFail(HelperSetupFailed, "%s: %v", spec.argv[0], err)
}

// devFiles are device files any command may open for writing: they hold
// no data.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

func confineSelf(s helperSpec) error {
	if abi := landlockABI(); abi < 1 {
		// Best-effort mode would silently do nothing here.
		return errors.New("this kernel does not offer Landlock")
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devFiles...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts").WithIoctlDev().IgnoreIfMissing(),
	}
	if len(s.writable) > 0 {
		rules = append(rules, landlock.RWDirs(s.writable...).WithRefer().IgnoreIfMissing())
	}
	cfg := landlock.V11.BestEffort()
	if err := cfg.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock (files): %w", err)
	}
	if s.network {
		return nil
	}
	// No rules: TCP bind and connect are refused (ABI 4 and later).
	// Kept even though the seccomp filter below covers it, in case a
	// socket is passed in from outside.
	if err := cfg.RestrictNet(); err != nil {
		return fmt.Errorf("landlock (network): %w", err)
	}
	if err := installNetworkFilter(); err != nil {
		return fmt.Errorf("seccomp (network): %w", err)
	}
	return nil
}
