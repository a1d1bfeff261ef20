package server

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
)

// threadSettings are what a thread runs with, resolved from the daemon's
// configuration and the client's overrides.
type threadSettings struct {
	model                                   string
	provider                                model.Provider
	cwd                                     string
	approval                                policy.ApprovalPolicy
	sandbox                                 policy.SandboxPolicy
	effort                                  string
	summary                                 string
	baseInstructions, developerInstructions string
}

// defaultSettings are the configuration's settings, in the daemon's cwd.
func (a *app) defaultSettings() threadSettings {
	return threadSettings{
		model:    a.cfg.Model,
		provider: a.cfg.Provider,
		cwd:      a.cwd,
		approval: a.cfg.ApprovalPolicy,
		sandbox:  a.cfg.Sandbox,
		effort:   a.cfg.ReasoningEffort,
		summary:  a.cfg.ReasoningSummary,
	}
}

// overrides are the settings a client may set on thread/start, resume and
// fork.
type overrides struct {
	model, provider, cwd                    *string
	approval                                *protocol.AskForApproval
	sandbox                                 *protocol.SandboxMode
	config                                  map[string]any
	baseInstructions, developerInstructions *string
}

// apply returns s changed by o, or a -32600 error naming what is wrong.
func (a *app) apply(s threadSettings, o overrides) (threadSettings, error) {
	if o.config != nil {
		var err error
		if o, err = configOverrides(o); err != nil {
			return s, err
		}
	}
	if o.provider != nil {
		p, ok := a.provider(*o.provider)
		if !ok {
			return s, protocol.InvalidRequest("unknown model provider %q", *o.provider)
		}
		if p.ID != s.provider.ID && o.model == nil && p.ID == config.DemoProviderID {
			s.model = config.DemoModel
		}
		s.provider = p
	}
	if o.model != nil && *o.model != "" {
		s.model = *o.model
	}
	if o.cwd != nil {
		cwd, err := resolveCwd(*o.cwd, a.cwd)
		if err != nil {
			return s, err
		}
		s.cwd = cwd
	}
	if o.approval != nil {
		if o.approval.Granular != nil {
			// Granular approvals choose per request kind; the core asks
			// for the kinds it has (commands, patches) as on-request.
			s.approval = policy.ApprovalOnRequest
		} else {
			s.approval = policy.ApprovalPolicy(o.approval.Mode)
		}
	}
	if o.sandbox != nil {
		s.sandbox = sandboxFromMode(*o.sandbox, s.sandbox)
	}
	if o.baseInstructions != nil {
		s.baseInstructions = *o.baseInstructions
	}
	if o.developerInstructions != nil {
		s.developerInstructions = *o.developerInstructions
	}
	return s, nil
}

// configOverrides reads the dotted config keys a thread may override.
func configOverrides(o overrides) (overrides, error) {
	str := func(key string) (*string, error) {
		v, ok := o.config[key]
		if !ok || v == nil {
			return nil, nil
		}
		s, ok := v.(string)
		if !ok {
			return nil, protocol.InvalidRequest("Invalid request: config.%s must be a string", key)
		}
		return &s, nil
	}
	var err error
	set := func(dst **string, key string) {
		if err != nil || *dst != nil {
			return
		}
		*dst, err = str(key)
	}
	set(&o.model, "model")
	set(&o.provider, "model_provider")
	if v, e := str("approval_policy"); e != nil {
		return o, e
	} else if v != nil && o.approval == nil {
		ap := protocol.ApprovalPolicy(protocol.ApprovalMode(*v))
		o.approval = &ap
	}
	if v, e := str("sandbox_mode"); e != nil {
		return o, e
	} else if v != nil && o.sandbox == nil {
		m := protocol.SandboxMode(*v)
		o.sandbox = &m
	}
	return o, err
}

// resolveCwd makes cwd absolute (relative to the daemon's cwd) and checks
// that it is a directory.
func resolveCwd(cwd, base string) (string, error) {
	if cwd == "" {
		return base, nil
	}
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(base, cwd)
	}
	cwd = filepath.Clean(cwd)
	st, err := os.Stat(cwd)
	if err != nil {
		return "", protocol.InvalidRequest("cwd %s: %v", cwd, err)
	}
	if !st.IsDir() {
		return "", protocol.InvalidRequest("cwd %s is not a directory", cwd)
	}
	return cwd, nil
}

func sandboxFromMode(m protocol.SandboxMode, base policy.SandboxPolicy) policy.SandboxPolicy {
	switch m {
	case protocol.SandboxWorkspaceWrite:
		if base.Mode == policy.SandboxWorkspaceWrite {
			return base
		}
		return policy.WorkspaceWrite()
	case protocol.SandboxDangerFullAccess:
		return policy.FullAccess()
	}
	return policy.ReadOnly()
}

// sandboxFromWire maps a turn's SandboxPolicy.
func sandboxFromWire(p protocol.SandboxPolicy) policy.SandboxPolicy {
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

// sandboxToWire maps a sandbox policy to the wire.
func sandboxToWire(p policy.SandboxPolicy) protocol.SandboxPolicy {
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

// approvalToWire maps an approval policy. The wire has no on-failure
// (the reference dropped it); it is reported as on-request, the closest.
func approvalToWire(p policy.ApprovalPolicy) protocol.AskForApproval {
	if p == policy.ApprovalOnFailure {
		return protocol.ApprovalPolicy(protocol.ApprovalOnRequest)
	}
	return protocol.ApprovalPolicy(protocol.ApprovalMode(p))
}

func validApproval(a *protocol.AskForApproval) error {
	if a == nil || a.Granular != nil {
		return nil
	}
	if !policy.ApprovalPolicy(a.Mode).Valid() {
		return protocol.InvalidRequest("Invalid request: unknown approval policy %q", a.Mode)
	}
	return nil
}

// turnContextOverrides maps turn/start's settings to the core's overrides.
func turnContextOverrides(p *protocol.TurnStartParams, base string) (core.TurnOverrides, error) {
	var o core.TurnOverrides
	if p.Cwd != nil {
		cwd, err := resolveCwd(*p.Cwd, base)
		if err != nil {
			return o, err
		}
		o.Cwd = &cwd
	}
	if p.Model != nil {
		o.Model = p.Model
	}
	if p.Effort != nil {
		e := string(*p.Effort)
		o.Effort = &e
	}
	if p.Summary != nil {
		s := string(*p.Summary)
		o.Summary = &s
	}
	if p.ApprovalPolicy != nil {
		if err := validApproval(p.ApprovalPolicy); err != nil {
			return o, err
		}
		ap := policy.ApprovalOnRequest
		if p.ApprovalPolicy.Granular == nil {
			ap = policy.ApprovalPolicy(p.ApprovalPolicy.Mode)
		}
		o.ApprovalPolicy = &ap
	}
	if p.SandboxPolicy != nil {
		sp := sandboxFromWire(*p.SandboxPolicy)
		o.Sandbox = &sp
	}
	if p.OutputSchema != nil {
		b, err := json.Marshal(p.OutputSchema)
		if err != nil {
			return o, protocol.InvalidRequest("Invalid request: outputSchema: %v", err)
		}
		o.OutputSchema = b
	}
	return o, nil
}
