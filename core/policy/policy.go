// Package policy decides who must say yes before the agent acts, and limits
// what an approved command can touch: approval policies, the known-safe
// command classifier, and the sandbox (Landlock, bubblewrap).
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
