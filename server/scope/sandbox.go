package scope

import (
	"fmt"
	"path/filepath"

	"github.com/agentd-dev/agentd/core/policy"
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

// modeRank orders the sandbox modes from the narrowest: read-only, then
// workspace-write, then the two that leave commands unconfined by agentd.
func modeRank(m policy.SandboxMode) int {
	switch m {
	case policy.SandboxReadOnly:
		return 0
	case policy.SandboxWorkspaceWrite:
		return 1
	}
	return 2
}

// Wider says how sandbox asked would let a command in cwd do more than
// the configured sandbox limit ("" when it would not): a wider mode, a
// writable root outside limit's roots, network access limit has not, a
// temp directory limit excludes. Under a full-access limit nothing is
// wider but the external sandbox, which the other checks refuse.
func Wider(asked, limit policy.SandboxPolicy, cwd string) string {
	if modeRank(asked.Mode) > modeRank(limit.Mode) {
		return fmt.Sprintf("with sandbox %q (the configured sandbox is %q)", string(asked.Mode), string(limit.Mode))
	}
	if modeRank(limit.Mode) == 2 {
		return ""
	}
	if asked.NetworkAccess && !limit.NetworkAccess {
		return "with network access (the configured sandbox has none)"
	}
	if asked.Mode != policy.SandboxWorkspaceWrite {
		return ""
	}
	allowed := rootsIn(limit.WritableRoots, cwd)
	for _, r := range rootsIn(asked.WritableRoots, cwd) {
		if !policy.Within(r, allowed) {
			return fmt.Sprintf("with writable root %q (not within a writable root of the configured sandbox)", protocol.Cut(r))
		}
	}
	if !asked.ExcludeSlashTmp && limit.ExcludeSlashTmp {
		return "with /tmp writable (the configured sandbox excludes it)"
	}
	if !asked.ExcludeTmpdirEnvVar && limit.ExcludeTmpdirEnvVar {
		return "with $TMPDIR writable (the configured sandbox excludes it)"
	}
	return ""
}

// rootsIn makes writable roots absolute as policy.WritableRoots does:
// relative ones are taken from cwd.
func rootsIn(roots []string, cwd string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			r = filepath.Join(cwd, r)
		}
		out = append(out, filepath.Clean(r))
	}
	return out
}

// Sandbox refuses, below admin, a sandbox wider than the configured one
// (limit) for a command in cwd: see Wider.
func Sandbox(s Scope, method string, asked, limit policy.SandboxPolicy, cwd string) *protocol.Error {
	if s.Allows(Admin) {
		return nil
	}
	if why := Wider(asked, limit, cwd); why != "" {
		return Deny(s, method, why)
	}
	return nil
}

// HomeCwd refuses, below admin, a cwd that the sandbox sp would make
// writable when that would make agentd's home writable: the home itself,
// a directory inside it, or one of its ancestors (such as /tmp holding a
// test's home). The home holds config.toml, whose token tables grant
// scopes at the next start, and the stored threads.
func HomeCwd(s Scope, method, cwd, home string, sp policy.SandboxPolicy) *protocol.Error {
	if s.Allows(Admin) || home == "" || cwd == "" || !CwdWritable(sp) {
		return nil
	}
	if policy.Within(cwd, []string{home}) || policy.Within(home, []string{cwd}) {
		return Deny(s, method, fmt.Sprintf("with cwd %q (agentd's home %q would be writable)", protocol.Cut(cwd), protocol.Cut(home)))
	}
	return nil
}

// CwdWritable reports whether sp makes a command's cwd writable by
// itself: workspace-write does. Full access makes everything writable, the
// operator's choice, which no cwd changes.
func CwdWritable(sp policy.SandboxPolicy) bool { return sp.Mode == policy.SandboxWorkspaceWrite }

// Clamp narrows the settings a thread brings with it (a stored rollout's,
// or a loaded thread's) to the configuration, below admin: a sandbox
// wider than limit becomes limit, approvals "never" become the
// configured approval unless that is never too. changed says whether
// anything was narrowed.
func Clamp(s Scope, sp, limit policy.SandboxPolicy, cwd string, ap, configured policy.ApprovalPolicy) (policy.SandboxPolicy, policy.ApprovalPolicy, bool) {
	if s.Allows(Admin) {
		return sp, ap, false
	}
	changed := false
	if Wider(sp, limit, cwd) != "" {
		sp, changed = limit, true
	}
	if ap == policy.ApprovalNever && configured != policy.ApprovalNever {
		ap, changed = configured, true
	}
	return sp, ap, changed
}
