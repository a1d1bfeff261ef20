package threads

import (
	"context"
	"os"
	"strings"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/projectdoc"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/scope"
	"go.uber.org/zap"
)

// threadSettings are what a thread runs with, resolved from the daemon's
// configuration and the client's overrides.
type threadSettings struct {
	// cfg is the configuration they were resolved from, the snapshot
	// the thread keeps while it is loaded (a reload does not change it).
	cfg                                     *config.Config
	model                                   string
	provider                                model.Provider
	cwd                                     string
	approval                                policy.ApprovalPolicy
	sandbox                                 policy.SandboxPolicy
	effort                                  string
	summary                                 string
	mode                                    core.CollaborationMode
	baseInstructions, developerInstructions string
	// userAgent is the User-Agent of the thread's model requests: the
	// initialize userAgent of the client that loaded it ("": agentd's).
	userAgent string
	// projectDefaults makes apply take the approval policy and sandbox
	// from the configuration for the final cwd (project trust), before
	// the overrides: a new thread's settings.
	projectDefaults bool
}

// refreshConfig reads config.toml again when it changed on disk since it
// was loaded (config.Live.Current), so that a new thread (started, or a
// stored one loaded) takes the file as it is now, with no SIGHUP; the
// handlers of those methods call it first. When the file's present
// version cannot be used, the configuration in use stays, and c is told
// so with a configWarning (the failure is logged once, when it is first
// seen).
func (sv *service) refreshConfig(ctx context.Context, c *rpc.Conn) {
	if _, err := sv.live.Current(rpc.Logger(ctx, sv.log)); err != nil {
		details := err.Error()
		c.Notify("configWarning", protocol.ConfigWarningNotification{
			Summary: "config.toml was changed but cannot be loaded; new threads keep the configuration in use until it is fixed",
			Details: &details,
		})
	}
}

// defaultSettings are the settings of the configuration in use now, in
// the daemon's cwd: a new thread's, before the client's overrides. ctx is
// the handler's, whose request what it logs names.
func (sv *service) defaultSettings(ctx context.Context) threadSettings {
	return sv.settingsFrom(ctx, sv.config())
}

// settingsFrom are cfg's settings, in the daemon's cwd.
func (sv *service) settingsFrom(ctx context.Context, cfg *config.Config) threadSettings {
	return threadSettings{
		cfg:                   cfg,
		model:                 cfg.Model,
		provider:              cfg.Provider,
		cwd:                   sv.cwd,
		approval:              cfg.ApprovalPolicy,
		sandbox:               cfg.Sandbox,
		effort:                cfg.ReasoningEffort,
		summary:               cfg.ReasoningSummary,
		baseInstructions:      sv.modelInstructions(cfg, rpc.Logger(ctx, sv.log)),
		developerInstructions: cfg.DeveloperInstructions,
	}
}

// modelInstructions is model_instructions_file's text (read for each new
// thread, trimmed), or "" for agentd's own base instructions.
func (sv *service) modelInstructions(cfg *config.Config, log *zap.Logger) string {
	path := cfg.ModelInstructionsFile
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Warn("model_instructions_file cannot be read; using the built-in instructions", zap.String("path", path), zap.Error(err))
		return ""
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// projectDoc finds the user's AGENTS.md instructions for a thread in cwd,
// as cfg says; what it could not use is logged to log.
func (sv *service) projectDoc(cfg *config.Config, cwd string, log *zap.Logger) projectdoc.Doc {
	d := projectdoc.Load(cwd, projectdoc.Options{
		Home: cfg.Home, MaxBytes: cfg.ProjectDocMaxBytes,
		RootMarkers: cfg.ProjectRootMarkers, FallbackNames: cfg.ProjectDocFallbackNames,
	})
	for _, w := range d.Warnings {
		log.Warn("project instructions: "+w, zap.String("cwd", cwd))
	}
	return d
}

// overrides are the settings a client may set on thread/start, resume and
// fork, with the scope of the client that sets them and its method.
type overrides struct {
	model, provider, cwd                    *string
	approval                                *protocol.AskForApproval
	sandbox                                 *protocol.SandboxMode
	config                                  map[string]any
	baseInstructions, developerInstructions *string

	scope  scope.Scope
	method string
	// client is the client that asks, whose userAgent the thread's model
	// requests carry (zero: not known).
	client rpc.ClientInfo
	// resolved: config was checked and read into the fields above
	// (permit), so that it is done once per request.
	resolved bool
}

// permit refuses overrides that o's scope may not set: a protected config
// key, a danger-full-access sandbox, approvals "never" where the
// configuration does not say so (directly or through config), or config
// values that are not valid. It returns o with config read into its
// fields. What depends on the thread (its cwd, the settings it brings) is
// checked by apply.
func (sv *service) permit(o overrides) (overrides, error) {
	if !o.resolved {
		if perr := scope.ConfigOverrides(o.scope, o.method, o.config); perr != nil {
			return o, perr
		}
		var err error
		if o, err = configOverrides(o); err != nil {
			return o, err
		}
		o.resolved = true
	}
	if perr := scope.SandboxMode(o.scope, o.method, o.sandbox); perr != nil {
		return o, perr
	}
	if perr := scope.Approval(o.scope, o.method, o.approval, string(sv.config().ApprovalPolicy)); perr != nil {
		return o, perr
	}
	return o, nil
}

// apply returns s changed by o, or a -32600 error naming what is wrong
// (or what o's scope may not set). Below admin, the settings s brings
// (a stored or loaded thread's) are first narrowed to the configuration,
// and o may not ask for more than it (bound).
func (sv *service) apply(s threadSettings, o overrides) (threadSettings, error) {
	o, err := sv.permit(o)
	if err != nil {
		return s, err
	}
	if o.client.Originator != "" {
		s.userAgent = UserAgent(o.client, sv.version)
	}
	if o.provider != nil {
		p, ok := providerIn(s.cfg, *o.provider)
		if !ok {
			return s, protocol.InvalidRequest("unknown model provider %q", protocol.Cut(*o.provider))
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
		cwd, err := resolveCwd(*o.cwd, sv.cwd)
		if err != nil {
			return s, err
		}
		s.cwd = cwd
	}
	if s.projectDefaults {
		s.approval, s.sandbox = s.cfg.ThreadPolicies(s.cwd)
		s.projectDefaults = false
	} else if o.scope != scope.Read {
		// A read client only subscribes: it runs no turn, and must not
		// change the settings of a thread it merely loads.
		s = sv.clamp(s, o.scope)
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
		s.sandbox = sandboxFromMode(*o.sandbox, s.sandbox, s.cfg.Sandbox)
	}
	if o.baseInstructions != nil {
		s.baseInstructions = *o.baseInstructions
	}
	if o.developerInstructions != nil {
		s.developerInstructions = *o.developerInstructions
	}
	return sv.bound(s, o)
}

// clamp narrows, for a client with scope sc below admin, the sandbox and
// approvals a thread brings (from its rollout, or as it runs) to what the
// configuration allows in its cwd: an operate client may not widen the
// sandbox by resuming or forking a thread an admin ran wider.
func (sv *service) clamp(s threadSettings, sc scope.Scope) threadSettings {
	cfg := sv.config()
	_, limit := cfg.ThreadPolicies(s.cwd)
	sp, ap, changed := scope.Clamp(sc, projection.SandboxPolicy(s.sandbox), projection.SandboxPolicy(limit), s.cwd, string(s.approval), string(cfg.ApprovalPolicy))
	if changed {
		s.sandbox, s.approval = projection.CoreSandboxPolicy(sp), policy.ApprovalPolicy(ap)
	}
	return s
}

// bound refuses, below admin, settings wider than the configuration that
// o asked for: a sandbox wider than the configured one in the thread's
// cwd, or a writable cwd that would make agentd's home writable. A cwd
// the client did not choose (inherited, or the daemon's) is not refused:
// the thread runs read-only there instead.
func (sv *service) bound(s threadSettings, o overrides) (threadSettings, error) {
	if o.scope.Allows(scope.Admin) {
		return s, nil
	}
	cfg := sv.config()
	if o.sandbox != nil {
		_, limit := cfg.ThreadPolicies(s.cwd)
		if perr := scope.Sandbox(o.scope, o.method, projection.SandboxPolicy(s.sandbox), projection.SandboxPolicy(limit), s.cwd); perr != nil {
			return s, perr
		}
	}
	if perr := scope.HomeCwd(o.scope, o.method, s.cwd, cfg.Home, projection.SandboxPolicy(s.sandbox)); perr != nil {
		if o.cwd != nil || o.sandbox != nil {
			return s, perr
		}
		if o.scope != scope.Read {
			s.sandbox = policy.ReadOnly()
		}
	}
	return s, nil
}

// configOverrides reads the dotted config keys a thread may override,
// refusing values that are not one of the accepted ones.
func configOverrides(o overrides) (overrides, error) {
	str := func(key string) (*string, error) {
		v, ok := o.config[key]
		if !ok || v == nil {
			return nil, nil
		}
		s, ok := v.(string)
		if !ok {
			return nil, protocol.InvalidRequest("Invalid request: config.%s must be a string", protocol.Cut(key))
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
	} else if v != nil {
		if !policy.ApprovalPolicy(*v).Valid() {
			return o, invalidConfigValue("approval_policy", *v, "untrusted", "on-failure", "on-request", "never")
		}
		if o.approval == nil {
			ap := protocol.ApprovalPolicy(protocol.ApprovalMode(*v))
			o.approval = &ap
		}
	}
	if v, e := str("sandbox_mode"); e != nil {
		return o, e
	} else if v != nil {
		switch m := protocol.SandboxMode(*v); m {
		case protocol.SandboxReadOnly, protocol.SandboxWorkspaceWrite, protocol.SandboxDangerFullAccess:
			if o.sandbox == nil {
				o.sandbox = &m
			}
		default:
			return o, invalidConfigValue("sandbox_mode", *v, "read-only", "workspace-write", "danger-full-access")
		}
	}
	return o, err
}

// invalidConfigValue is the refusal of a config override whose value is
// not one of those accepted.
func invalidConfigValue(key, value string, accepted ...string) error {
	return protocol.InvalidRequest("Invalid request: config.%s %q is not one of %s", key, protocol.Cut(value), strings.Join(accepted, ", "))
}

// resolveCwd makes a client's cwd absolute (relative to base) and checks
// that it is a directory, or answers -32600 naming it.
func resolveCwd(cwd, base string) (string, error) {
	dir, err := config.ResolveDir(cwd, base)
	if err != nil {
		return "", protocol.InvalidRequest("cwd %v", err)
	}
	return dir, nil
}

// sandboxFromMode is the policy of a sandbox mode a client asks for: for
// workspace-write, the thread's own when it has one, else the
// configured one's [sandbox_workspace_write] settings.
func sandboxFromMode(m protocol.SandboxMode, base, configured policy.SandboxPolicy) policy.SandboxPolicy {
	switch m {
	case protocol.SandboxWorkspaceWrite:
		if base.Mode == policy.SandboxWorkspaceWrite {
			return base
		}
		if configured.Mode == policy.SandboxWorkspaceWrite {
			return configured
		}
		return policy.WorkspaceWrite()
	case protocol.SandboxDangerFullAccess:
		return policy.FullAccess()
	}
	return policy.ReadOnly()
}

func validApproval(ap *protocol.AskForApproval) error {
	if ap == nil || ap.Granular != nil {
		return nil
	}
	if !policy.ApprovalPolicy(ap.Mode).Valid() {
		return protocol.InvalidRequest("Invalid request: unknown approval policy %q", protocol.Cut(string(ap.Mode)))
	}
	return nil
}
