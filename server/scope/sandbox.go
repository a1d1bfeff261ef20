package scope

import (
	"fmt"
	"path/filepath"
	"strings"

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

// modeName is a sandbox policy's mode as sandbox_mode spells it, and
// modeRank orders them from the narrowest: read-only, workspace-write,
// then the two that leave commands unconfined by agentd.
func modeName(p protocol.SandboxPolicy) (string, int) {
	switch {
	case p.WorkspaceWrite != nil:
		return "workspace-write", 1
	case p.DangerFullAccess != nil:
		return "danger-full-access", 2
	case p.ExternalSandbox != nil:
		return "external-sandbox", 2
	}
	return "read-only", 0
}

// network reports whether p lets commands reach the network.
func network(p protocol.SandboxPolicy) bool {
	switch {
	case p.WorkspaceWrite != nil:
		return p.WorkspaceWrite.NetworkAccess
	case p.ReadOnly != nil:
		return p.ReadOnly.NetworkAccess
	}
	return true // no sandbox of agentd's
}

// Wider says how sandbox asked would let a command in cwd do more than
// the configured sandbox limit ("" when it would not): a wider mode, a
// writable root outside limit's roots, network access limit has not, a
// temp directory limit excludes. Under a full-access limit nothing is
// wider (an external sandbox is refused by SandboxPolicy).
func Wider(asked, limit protocol.SandboxPolicy, cwd string) string {
	askedMode, askedRank := modeName(asked)
	limitMode, limitRank := modeName(limit)
	if askedRank > limitRank {
		return fmt.Sprintf("with sandbox %q (the configured sandbox is %q)", askedMode, limitMode)
	}
	if limitRank == 2 {
		return ""
	}
	if network(asked) && !network(limit) {
		return "with network access (the configured sandbox has none)"
	}
	a, l := asked.WorkspaceWrite, limit.WorkspaceWrite
	if a == nil {
		return ""
	}
	allowed := rootsIn(l.WritableRoots, cwd)
	for _, r := range rootsIn(a.WritableRoots, cwd) {
		if !within(r, allowed) {
			return fmt.Sprintf("with writable root %q (not within a writable root of the configured sandbox)", protocol.Cut(r))
		}
	}
	if !a.ExcludeSlashTmp && l.ExcludeSlashTmp {
		return "with /tmp writable (the configured sandbox excludes it)"
	}
	if !a.ExcludeTmpdirEnvVar && l.ExcludeTmpdirEnvVar {
		return "with $TMPDIR writable (the configured sandbox excludes it)"
	}
	return ""
}

// rootsIn makes writable roots absolute and clean, as the sandbox does:
// relative ones are taken from cwd.
func rootsIn(roots []protocol.AbsPath, cwd string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		p := string(r)
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// within reports whether path is one of roots or beneath one, links
// resolved in both: a link inside a root may lead elsewhere, and the
// sandbox grants what a root's path resolves to.
func within(path string, roots []string) bool {
	p := resolve(path)
	for _, r := range roots {
		rr := resolve(r)
		if p == rr || strings.HasPrefix(p, strings.TrimSuffix(rr, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// resolve resolves the links of the longest existing prefix of the
// clean, absolute path and keeps the rest as it is.
func resolve(path string) string {
	path = filepath.Clean(path)
	var rest []string
	for cur := path; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return path
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

// Sandbox refuses, below admin, a sandbox wider than the configured one
// (limit) for a command in cwd: see Wider.
func Sandbox(s Scope, method string, asked, limit protocol.SandboxPolicy, cwd string) *protocol.Error {
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
// scopes at the next start, and the stored threads. Only workspace-write
// makes the cwd writable by itself; full access makes everything
// writable, the operator's choice, which no cwd changes.
func HomeCwd(s Scope, method, cwd, home string, sp protocol.SandboxPolicy) *protocol.Error {
	if s.Allows(Admin) || home == "" || cwd == "" || sp.WorkspaceWrite == nil {
		return nil
	}
	if within(cwd, []string{home}) || within(home, []string{cwd}) {
		return Deny(s, method, fmt.Sprintf("with cwd %q (agentd's home %q would be writable)", protocol.Cut(cwd), protocol.Cut(home)))
	}
	return nil
}

// Clamp narrows the settings a thread brings with it (a stored rollout's,
// or a loaded thread's) to the configuration, below admin: a sandbox
// wider than limit becomes limit, approvals "never" become the
// configured approval unless that is never too. changed says whether
// anything was narrowed.
func Clamp(s Scope, sp, limit protocol.SandboxPolicy, cwd string, approval, configured string) (protocol.SandboxPolicy, string, bool) {
	if s.Allows(Admin) {
		return sp, approval, false
	}
	changed := false
	if Wider(sp, limit, cwd) != "" {
		sp, changed = limit, true
	}
	never := string(protocol.ApprovalNever)
	if approval == never && configured != never {
		approval, changed = configured, true
	}
	return sp, approval, changed
}
