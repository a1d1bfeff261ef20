package scope

import (
	"fmt"

	"github.com/agentd-dev/agentd/protocol"
)

// These checks refuse what would widen the sandbox beyond the operator's
// limits, for a client below admin. Each returns nil when the request may
// go ahead.

// SandboxMode refuses danger-full-access as a thread's sandbox (thread/
// start, resume, fork, and sandbox_mode in their config).
func SandboxMode(s Scope, method string, m *protocol.SandboxMode) *protocol.Error {
	if m == nil || s.Allows(Admin) || *m != protocol.SandboxDangerFullAccess {
		return nil
	}
	return Deny(s, method, fmt.Sprintf("with sandbox %q", string(*m)))
}

// SandboxPolicy refuses dangerFullAccess and externalSandbox (turn/start,
// thread/settings/update, command/exec): both run commands without
// agentd's sandbox.
func SandboxPolicy(s Scope, method string, p *protocol.SandboxPolicy) *protocol.Error {
	if p == nil || s.Allows(Admin) {
		return nil
	}
	switch {
	case p.DangerFullAccess != nil:
		return Deny(s, method, `with sandboxPolicy "dangerFullAccess"`)
	case p.ExternalSandbox != nil:
		return Deny(s, method, `with sandboxPolicy "externalSandbox"`)
	}
	return nil
}

// Approval refuses approvalPolicy "never" unless the configuration
// already says never (configured is the running approval_policy): without
// approvals, nothing stops what the sandbox allows.
func Approval(s Scope, method string, a *protocol.AskForApproval, configured string) *protocol.Error {
	if a == nil || s.Allows(Admin) || a.Granular != nil || a.Mode != protocol.ApprovalNever {
		return nil
	}
	if configured == string(protocol.ApprovalNever) {
		return nil
	}
	return Deny(s, method, fmt.Sprintf(`with approvalPolicy "never" (the configured approval_policy is %q)`, configured))
}
