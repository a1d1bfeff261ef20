package policy

import (
	"fmt"
	"strings"
	"sync"
)

// SandboxMethod names how commands are confined.
type SandboxMethod string

const (
	// MethodNone: nothing can confine commands on this host.
	MethodNone SandboxMethod = "none"
	// MethodLandlock: our own helper applies Landlock (filesystem) and a
	// seccomp filter (network) to itself, then runs the command.
	MethodLandlock SandboxMethod = "landlock"
	// MethodBwrap: bubblewrap runs the command in read-only bind mounts
	// with the writable roots bound read-write and, without network, a new
	// network namespace.
	MethodBwrap SandboxMethod = "bubblewrap"
)

// Capabilities is what this host can do to confine commands.
type Capabilities struct {
	// LandlockABI is the kernel's Landlock ABI version; 0 when Landlock is
	// missing or disabled.
	LandlockABI int
	// Seccomp is set when seccomp filters can be installed (needed by the
	// Landlock method to block the network).
	Seccomp bool
	// Bwrap is the path of the bubblewrap binary, "" when not installed.
	Bwrap string
	// BwrapWorks is set when bubblewrap could run a command in a new
	// network namespace here.
	BwrapWorks bool
	// UserNetNS is set when an unprivileged process can create a user and
	// network namespace (informational).
	UserNetNS bool
}

var (
	detectOnce sync.Once
	detected   Capabilities
)

// Detect probes the host once and returns what it supports. Later calls
// return the first answer.
func Detect() Capabilities {
	detectOnce.Do(func() { detected = detect() })
	return detected
}

// MethodFor returns the method that can enforce p here, MethodNone when
// none can. Policies that do not sandbox get MethodNone too.
func (c Capabilities) MethodFor(p SandboxPolicy) SandboxMethod {
	if !p.Sandboxed() {
		return MethodNone
	}
	if c.LandlockABI >= 1 && (p.NetworkAccess || c.Seccomp) {
		return MethodLandlock
	}
	if c.BwrapWorks {
		return MethodBwrap
	}
	return MethodNone
}

// Supports reports whether commands under p can run as p says: always for
// policies that do not sandbox, otherwise when some method works.
func (c Capabilities) Supports(p SandboxPolicy) bool {
	return !p.Sandboxed() || c.MethodFor(p) != MethodNone
}

// Warning returns a sentence for a configuration warning when no method
// can sandbox commands here, "" otherwise.
func (c Capabilities) Warning() string {
	if c.MethodFor(SandboxPolicy{Mode: SandboxWorkspaceWrite}) != MethodNone {
		return ""
	}
	var why []string
	if c.LandlockABI == 0 {
		why = append(why, "the kernel does not offer Landlock")
	} else if !c.Seccomp {
		why = append(why, "seccomp filters are unavailable")
	}
	switch {
	case c.Bwrap == "":
		why = append(why, "bubblewrap (bwrap) is not installed")
	case !c.BwrapWorks:
		why = append(why, "bubblewrap cannot create namespaces here")
	}
	return fmt.Sprintf("agentd cannot sandbox commands on this host: %s. "+
		"Commands that should run sandboxed will ask for approval first, and are refused under approval policy \"never\"; "+
		"install bubblewrap or use a kernel with Landlock (5.13 or later) to fix this.", strings.Join(why, " and "))
}

// String summarises the capabilities for logs.
func (c Capabilities) String() string {
	bw := "absent"
	if c.Bwrap != "" {
		bw = c.Bwrap
		if !c.BwrapWorks {
			bw += " (not working)"
		}
	}
	return fmt.Sprintf("landlock ABI %d, seccomp %t, bubblewrap %s, user+net namespaces %t", c.LandlockABI, c.Seccomp, bw, c.UserNetNS)
}
