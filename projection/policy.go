package projection

import (
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/protocol"
)

// CoreSandboxPolicy maps a wire SandboxPolicy (a turn's, or command/exec's)
// to the core's.
func CoreSandboxPolicy(p protocol.SandboxPolicy) policy.SandboxPolicy {
	switch {
	case p.DangerFullAccess != nil:
		return policy.FullAccess()
	case p.ReadOnly != nil:
		return policy.SandboxPolicy{Mode: policy.SandboxReadOnly, NetworkAccess: p.ReadOnly.NetworkAccess}
	case p.ExternalSandbox != nil:
		return policy.SandboxPolicy{Mode: policy.SandboxExternal, NetworkAccess: p.ExternalSandbox.NetworkAccess != nil && *p.ExternalSandbox.NetworkAccess == protocol.NetworkEnabled}
	case p.WorkspaceWrite != nil:
		out := policy.SandboxPolicy{Mode: policy.SandboxWorkspaceWrite, NetworkAccess: p.WorkspaceWrite.NetworkAccess,
			ExcludeTmpdirEnvVar: p.WorkspaceWrite.ExcludeTmpdirEnvVar, ExcludeSlashTmp: p.WorkspaceWrite.ExcludeSlashTmp}
		for _, r := range p.WorkspaceWrite.WritableRoots {
			out.WritableRoots = append(out.WritableRoots, string(r))
		}
		return out
	}
	return policy.ReadOnly()
}

// SandboxPolicy maps a sandbox policy to the wire.
func SandboxPolicy(p policy.SandboxPolicy) protocol.SandboxPolicy {
	switch p.Mode {
	case policy.SandboxDangerFullAccess:
		return protocol.SandboxPolicy{DangerFullAccess: &protocol.Empty{}}
	case policy.SandboxExternal:
		n := protocol.NetworkRestricted
		if p.NetworkAccess {
			n = protocol.NetworkEnabled
		}
		return protocol.SandboxPolicy{ExternalSandbox: &protocol.ExternalSandbox{NetworkAccess: &n}}
	case policy.SandboxWorkspaceWrite:
		roots := protocol.List[protocol.AbsPath]{}
		for _, r := range p.WritableRoots {
			roots = append(roots, protocol.AbsPath(r))
		}
		return protocol.SandboxPolicy{WorkspaceWrite: &protocol.WorkspaceWriteSandbox{WritableRoots: roots, NetworkAccess: p.NetworkAccess,
			ExcludeTmpdirEnvVar: p.ExcludeTmpdirEnvVar, ExcludeSlashTmp: p.ExcludeSlashTmp}}
	}
	return protocol.SandboxPolicy{ReadOnly: &protocol.ReadOnlySandbox{NetworkAccess: p.NetworkAccess}}
}

// ApprovalPolicy maps an approval policy. The wire has no on-failure
// (the reference dropped it); it is reported as on-request, the closest.
func ApprovalPolicy(p policy.ApprovalPolicy) protocol.AskForApproval {
	if p == policy.ApprovalOnFailure {
		return protocol.ApprovalPolicy(protocol.ApprovalOnRequest)
	}
	return protocol.ApprovalPolicy(protocol.ApprovalMode(p))
}
