// Package policy decides who must say yes before the agent acts, and limits
// what an approved command can touch: approval policies and the decisions
// they imply (DecideExec, DecidePatch), the known-safe command classifier,
// command actions for display, the session's approvals, and the sandbox.
//
// The sandbox never confines the daemon itself. A sandboxed command runs
// through a fresh copy of the agentd binary (SandboxHelperArg, SandboxMain),
// which restricts its own process and then execs the command, so the
// restrictions bind the command and all its children:
//   - files: Landlock, reading everywhere and writing only under the
//     writable roots (and to a few device files such as /dev/null);
//   - network, when off: a seccomp filter refusing socket(2) for every
//     family but AF_UNIX (and io_uring, which could open sockets on its
//     own), plus Landlock's TCP bind/connect restriction where the kernel
//     has it (ABI 4+). Landlock alone leaves UDP open before ABI 10, which
//     is why the filter is what we rely on.
//
// Where Landlock is missing, bubblewrap is used instead when it works
// (read-only bind of /, writable roots bound read-write with their .git
// read-only again, a new network namespace when the network is off). When
// neither works, commands that should be sandboxed are never run
// unsandboxed silently: DecideExec asks for approval, or refuses under
// "never".
package policy

// ApprovalPolicy says when the user must approve an action.
type ApprovalPolicy string

const (
	// ApprovalUntrusted asks before any command not known to be safe and
	// before every patch.
	ApprovalUntrusted ApprovalPolicy = "untrusted"
	// ApprovalOnRequest runs sandboxed without asking; asks when the model
	// requests escalation or a patch writes outside the writable roots.
	ApprovalOnRequest ApprovalPolicy = "on-request"
	// ApprovalOnFailure runs sandboxed; asks to rerun unsandboxed when the
	// sandbox blocks a command.
	ApprovalOnFailure ApprovalPolicy = "on-failure"
	// ApprovalNever never asks; a denied action fails back to the model.
	ApprovalNever ApprovalPolicy = "never"
)

// Valid reports whether p is one of the known policies.
func (p ApprovalPolicy) Valid() bool {
	switch p {
	case ApprovalUntrusted, ApprovalOnRequest, ApprovalOnFailure, ApprovalNever:
		return true
	}
	return false
}

// SandboxMode is the coarse sandbox setting (config key sandbox_mode).
type SandboxMode string

const (
	SandboxReadOnly         SandboxMode = "read-only"
	SandboxWorkspaceWrite   SandboxMode = "workspace-write"
	SandboxDangerFullAccess SandboxMode = "danger-full-access"
	// SandboxExternal means the host already sandboxes us; commands run
	// as they are.
	SandboxExternal SandboxMode = "external-sandbox"
)

// SandboxPolicy is what a sandboxed command may touch.
type SandboxPolicy struct {
	Mode SandboxMode
	// WritableRoots are extra roots writable in workspace-write mode, in
	// addition to the cwd and the temp dirs.
	WritableRoots []string
	// NetworkAccess allows outbound network from sandboxed commands.
	NetworkAccess bool
	// ExcludeTmpdirEnvVar leaves $TMPDIR out of the writable roots.
	ExcludeTmpdirEnvVar bool
	// ExcludeSlashTmp leaves /tmp out of the writable roots.
	ExcludeSlashTmp bool
}

// ReadOnly returns the read-only policy.
func ReadOnly() SandboxPolicy { return SandboxPolicy{Mode: SandboxReadOnly} }

// WorkspaceWrite returns the workspace-write policy with no extra roots.
func WorkspaceWrite() SandboxPolicy { return SandboxPolicy{Mode: SandboxWorkspaceWrite} }

// FullAccess returns the policy that does not sandbox at all.
func FullAccess() SandboxPolicy { return SandboxPolicy{Mode: SandboxDangerFullAccess} }

// Sandboxed reports whether commands under p run inside our sandbox.
func (p SandboxPolicy) Sandboxed() bool {
	return p.Mode == SandboxReadOnly || p.Mode == SandboxWorkspaceWrite
}
