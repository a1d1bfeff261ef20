package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SandboxHelperArg, as the first argument of the agentd binary, selects
// the sandbox helper entry point (SandboxMain) instead of the normal
// command line. The helper confines itself and then becomes the command.
const SandboxHelperArg = "__sandbox"

// ErrSandboxUnavailable is returned when this host cannot enforce a
// sandbox policy.
var ErrSandboxUnavailable = errors.New("no sandbox is available on this host")

// Launcher turns a command into the command line that runs it confined by
// one sandbox policy. Landlock is never applied to the daemon itself (it
// would confine the daemon and everything it starts later): the command
// runs through a fresh copy of our own executable (Helper, entered by
// SandboxHelperArg), which confines itself and then execs the command.
type Launcher struct {
	Method SandboxMethod
	Policy SandboxPolicy
	// Helper is the executable that serves SandboxMain when called with
	// SandboxHelperArg. NewLauncher sets it to os.Executable(); a test
	// binary serves as its own helper from TestMain.
	Helper string
	// Bwrap is the bubblewrap binary for MethodBwrap.
	Bwrap string
}

// NewLauncher returns a launcher enforcing p with the best method this
// host has (see Detect). It fails with ErrSandboxUnavailable when none
// works, and with another error when p does not sandbox at all (such
// commands need no launcher).
func NewLauncher(p SandboxPolicy) (*Launcher, error) {
	if !p.Sandboxed() {
		return nil, fmt.Errorf("sandbox mode %q does not confine commands; run them without a launcher", p.Mode)
	}
	caps := Detect()
	m := caps.MethodFor(p)
	if m == MethodNone {
		return nil, fmt.Errorf("%w (%s)", ErrSandboxUnavailable, caps)
	}
	l := &Launcher{Method: m, Policy: p, Bwrap: caps.Bwrap}
	if m == MethodLandlock {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox helper: %w", err)
		}
		l.Helper = exe
	}
	return l, nil
}

// Wrap returns the command line running argv confined, for a command
// whose working directory is cwd (absolute; "" means the daemon's).
func (l *Launcher) Wrap(argv []string, cwd string) ([]string, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		cwd = wd
	}
	if !filepath.IsAbs(cwd) {
		return nil, fmt.Errorf("sandbox: working directory %q is not absolute", cwd)
	}
	roots := WritableRoots(l.Policy, cwd)
	switch l.Method {
	case MethodLandlock:
		if l.Helper == "" {
			return nil, errors.New("sandbox: no helper executable")
		}
		out := []string{l.Helper, SandboxHelperArg}
		for _, r := range roots {
			out = append(out, "--write", r)
		}
		if l.Policy.NetworkAccess {
			out = append(out, "--net")
		}
		out = append(out, "--")
		return append(out, argv...), nil
	case MethodBwrap:
		if l.Bwrap == "" {
			return nil, errors.New("sandbox: bubblewrap not found")
		}
		return bwrapArgv(l.Bwrap, roots, l.Policy.NetworkAccess, argv), nil
	}
	return nil, ErrSandboxUnavailable
}

// bwrapArgv builds the bubblewrap command line: the whole filesystem
// read-only, the host's /dev, each existing writable root bound
// read-write with its .git read-only again, and a new network namespace
// when the network is off. bwrap applies binds in order, so the
// read-only .git binds come after their roots.
func bwrapArgv(bwrap string, roots []string, network bool, argv []string) []string {
	out := []string{bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev"}
	for _, r := range roots {
		if _, err := os.Stat(r); err != nil {
			continue
		}
		out = append(out, "--bind", r, r)
		for _, ro := range ReadOnlySubpaths(r) {
			out = append(out, "--ro-bind", ro, ro)
		}
	}
	if !network {
		out = append(out, "--unshare-net")
	}
	out = append(out, "--die-with-parent", "--")
	return append(out, argv...)
}
