package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core/catalog"
	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/projectdoc"
	"github.com/agentd-dev/agentd/core/skills"
	"github.com/agentd-dev/agentd/core/tools/exec"
	"github.com/pelletier/go-toml/v2"
)

// HomeEnv is the environment variable naming the home directory when
// --home is not given.
const HomeEnv = "AGENTD_HOME"

// CodexHomeEnv is the reference's home variable: a Codex user who points
// agentd at their Codex home gets its config, instructions and history.
const CodexHomeEnv = "CODEX_HOME"

// ResolveHome returns the absolute home directory: flag if not empty, else
// $AGENTD_HOME, else $CODEX_HOME, else ~/.agentd.
func ResolveHome(flag string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	home := flag
	if home == "" {
		home = getenv(HomeEnv)
	}
	if home == "" {
		home = getenv(CodexHomeEnv)
	}
	if home == "" {
		user, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find a home directory (set --home, %s or %s): %w", HomeEnv, CodexHomeEnv, err)
		}
		home = filepath.Join(user, ".agentd")
	}
	return filepath.Abs(home)
}

// Options say where to load from.
type Options struct {
	// Home is the absolute home directory; config.toml is read from it.
	Home string
	// Overrides are "key=value" strings from --config, applied in order
	// on top of the file.
	Overrides []string
	// Getenv reads the environment (nil: os.Getenv). Used for API keys.
	Getenv func(string) string
	// Strict makes an unknown key an error (an *UnknownFieldError naming
	// the first one) rather than a warning.
	Strict bool
	// FsRoots, when not empty, replaces [fs] roots (the --fs-root flags).
	FsRoots []string
}

// Load reads <home>/config.toml (a missing file is an empty one), applies
// the overrides and resolves everything. Unknown keys become one Warning
// per source (or, with Strict, an *UnknownFieldError); a malformed file, a
// value of the wrong type or an invalid value is an error naming the key.
func Load(opts Options) (*Config, error) {
	cfg, _, err := load(opts)
	return cfg, err
}

// load is Load, which also says which version of the file it read (even
// when that version could not be used).
func load(opts Options) (*Config, fileVersion, error) {
	path := filepath.Join(opts.Home, FileName)
	data, version, err := readVersioned(path)
	if err != nil {
		return nil, version, fmt.Errorf("reading %s: %w", path, err)
	}
	cfg, err := loadData(opts, path, data)
	if err != nil {
		return nil, version, err
	}
	cfg.version = version
	return cfg, version, nil
}

// loadData is Load of data, config.toml's bytes (nil: no file).
func loadData(opts Options, path string, data []byte) (*Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	doc := map[string]any{}
	if data != nil {
		if err := toml.Unmarshal(data, &doc); err != nil {
			return nil, describeTOMLError(path, err)
		}
	}
	var warnings []Warning
	if unknown := unknownKeys(doc, reflect.TypeOf(fileConfig{})); len(unknown) > 0 {
		if opts.Strict {
			return nil, firstUnknownField(path, data, unknown)
		}
		warnings = append(warnings, unknownKeysWarning(path, unknown))
	}

	overrides := map[string]any{}
	for _, o := range opts.Overrides {
		t, err := parseOverride(o)
		if err != nil {
			return nil, err
		}
		merge(overrides, t)
	}
	if unknown := unknownKeys(overrides, reflect.TypeOf(fileConfig{})); len(unknown) > 0 {
		if opts.Strict {
			return nil, &UnknownFieldError{File: "--config", Key: unknown[0]}
		}
		warnings = append(warnings, unknownKeysWarning("--config", unknown))
	}
	merge(doc, overrides)

	var fc fileConfig
	buf, err := toml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := toml.Unmarshal(buf, &fc); err != nil {
		return nil, describeTOMLError("config", err)
	}
	cfg, err := resolve(opts.Home, path, &fc, getenv)
	if err != nil {
		return nil, err
	}
	if len(opts.FsRoots) > 0 {
		if cfg.FsRoots, err = resolveFsRoots(opts.FsRoots, "--fs-root"); err != nil {
			return nil, err
		}
	}
	cfg.Warnings = append(warnings, cfg.Warnings...)
	if len(overrides) > 0 {
		cfg.SessionFlags = overrides
	}
	return cfg, nil
}

func unknownKeysWarning(source string, keys []string) Warning {
	shown := keys[:min(len(keys), maxWarnedKeys)]
	quoted := make([]string, len(shown), len(shown)+1)
	for i, k := range shown {
		quoted[i] = "`" + KeyText(k) + "`"
	}
	if more := len(keys) - len(shown); more > 0 {
		quoted = append(quoted, fmt.Sprintf("and %d more", more))
	}
	noun := "key"
	if len(keys) > 1 {
		noun = "keys"
	}
	return Warning{
		Summary: fmt.Sprintf("Ignoring unknown config %s in %s: %s", noun, source, strings.Join(quoted, ", ")),
		Details: "agentd reads a subset of the Codex config keys; see docs/protocol.md for the supported ones.",
	}
}

// describeTOMLError makes a go-toml error name the file, line and key.
func describeTOMLError(source string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		if key := de.Key(); len(key) > 0 {
			return fmt.Errorf("%s: config key `%s`: %s", source, KeyText(strings.Join(key, ".")), de.Error())
		}
		return fmt.Errorf("%s:%d:%d: %s", source, row, col, de.Error())
	}
	return fmt.Errorf("%s: %w", source, err)
}

// resolve turns the decoded file into a Config, applying defaults and
// checking values.
func resolve(home, path string, fc *fileConfig, getenv func(string) string) (*Config, error) {
	cfg := &Config{Home: home, Path: path, Server: DefaultLimits()}

	// Providers: built-ins, then tables (which may adjust a built-in).
	cfg.Providers = builtinProviders(getenv)
	ids := make([]string, 0, len(fc.ModelProviders))
	for id := range fc.ModelProviders {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t := fc.ModelProviders[id]
		base, builtin := cfg.Providers[id]
		if !builtin {
			base = withRetryDefaults(model.Provider{ID: id})
			if t.BaseURL == nil || *t.BaseURL == "" {
				return nil, fmt.Errorf("config key `model_providers.%s.base_url` is required for a custom provider", id)
			}
		}
		p := applyProviderTable(base, t)
		if p.WireAPI != "responses" && p.WireAPI != "" {
			return nil, fmt.Errorf("config key `model_providers.%s.wire_api`: %q is not supported; agentd speaks the Responses API (\"responses\")", id, p.WireAPI)
		}
		for key, v := range map[string]int{"request_max_retries": p.RequestMaxRetries, "stream_max_retries": p.StreamMaxRetries} {
			if v < 0 {
				return nil, fmt.Errorf("config key `model_providers.%s.%s` must not be negative", id, key)
			}
		}
		if p.StreamIdleTimeout < 0 {
			return nil, fmt.Errorf("config key `model_providers.%s.stream_idle_timeout_ms` must not be negative", id)
		}
		cfg.Providers[id] = finishProvider(p, getenv)
	}

	providerID := OpenAIProviderID
	if fc.ModelProvider != nil {
		providerID = *fc.ModelProvider
	}
	p, ok := cfg.Providers[providerID]
	if !ok {
		known := make([]string, 0, len(cfg.Providers))
		for id := range cfg.Providers {
			known = append(known, id)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("config key `model_provider`: provider %q is not defined; define [model_providers.%s] or use one of: %s",
			providerID, providerID, strings.Join(known, ", "))
	}
	cfg.Provider = p
	// A provider that takes OpenAI auth can be signed in to with
	// account/login/start, as the reference's is: no warning for it.
	if p.EnvKey != "" && p.APIKey == "" && !p.RequiresOpenAIAuth {
		cfg.Warnings = append(cfg.Warnings, Warning{
			Summary: fmt.Sprintf("Environment variable %s is not set; requests to model provider %q will fail until it is.", p.EnvKey, p.ID),
		})
	}

	switch {
	case fc.Model != nil && *fc.Model != "":
		cfg.Model = *fc.Model
	case p.ID == DemoProviderID:
		cfg.Model = DemoModel
	default:
		cfg.Model = DefaultModel
	}

	cfg.ApprovalPolicy = policy.ApprovalOnRequest
	if fc.ApprovalPolicy != nil {
		ap := policy.ApprovalPolicy(*fc.ApprovalPolicy)
		if !ap.Valid() {
			return nil, fmt.Errorf("config key `approval_policy`: %q is not one of untrusted, on-request, on-failure, never", *fc.ApprovalPolicy)
		}
		cfg.ApprovalPolicy = ap
	}

	cfg.Sandbox = policy.ReadOnly()
	if fc.SandboxMode != nil {
		switch m := policy.SandboxMode(*fc.SandboxMode); m {
		case policy.SandboxReadOnly, policy.SandboxWorkspaceWrite, policy.SandboxDangerFullAccess:
			cfg.Sandbox.Mode = m
		default:
			return nil, fmt.Errorf("config key `sandbox_mode`: %q is not one of read-only, workspace-write, danger-full-access", *fc.SandboxMode)
		}
	}
	if ww := fc.SandboxWorkspaceWrite; ww != nil {
		for _, r := range ww.WritableRoots {
			if !filepath.IsAbs(r) {
				return nil, fmt.Errorf("config key `sandbox_workspace_write.writable_roots`: %q is not an absolute path", r)
			}
		}
		cfg.Sandbox.WritableRoots = ww.WritableRoots
		if ww.NetworkAccess != nil {
			cfg.Sandbox.NetworkAccess = *ww.NetworkAccess
		}
		if ww.ExcludeTmpdirEnvVar != nil {
			cfg.Sandbox.ExcludeTmpdirEnvVar = *ww.ExcludeTmpdirEnvVar
		}
		if ww.ExcludeSlashTmp != nil {
			cfg.Sandbox.ExcludeSlashTmp = *ww.ExcludeSlashTmp
		}
	}

	if fc.ModelReasoningEffort != nil {
		switch e := *fc.ModelReasoningEffort; e {
		case "none", "minimal", "low", "medium", "high", "xhigh":
			cfg.ReasoningEffort = e
		default:
			return nil, fmt.Errorf("config key `model_reasoning_effort`: %q is not one of none, minimal, low, medium, high, xhigh", e)
		}
	}
	if fc.ModelReasoningSummary != nil {
		switch s := *fc.ModelReasoningSummary; s {
		case "auto", "concise", "detailed", "none":
			cfg.ReasoningSummary = s
		default:
			return nil, fmt.Errorf("config key `model_reasoning_summary`: %q is not one of auto, concise, detailed, none", s)
		}
	}

	if fc.ReviewModel != nil {
		cfg.ReviewModel = strings.TrimSpace(*fc.ReviewModel)
	}

	cfg.Features = fc.Features
	cfg.Catalog = catalog.Builtin()
	if fc.ModelCatalogJSON != nil && *fc.ModelCatalogJSON != "" {
		p := *fc.ModelCatalogJSON
		if !filepath.IsAbs(p) {
			p = filepath.Join(home, p)
		}
		var err error
		if cfg.Catalog, err = catalog.Load(p); err != nil {
			return nil, fmt.Errorf("config key `model_catalog_json`: %w", err)
		}
	}
	if fc.DeveloperInstructions != nil {
		cfg.DeveloperInstructions = *fc.DeveloperInstructions
	}
	if fc.ModelInstructionsFile != nil && *fc.ModelInstructionsFile != "" {
		cfg.ModelInstructionsFile = *fc.ModelInstructionsFile
		if !filepath.IsAbs(cfg.ModelInstructionsFile) {
			cfg.ModelInstructionsFile = filepath.Join(home, cfg.ModelInstructionsFile)
		}
	}
	cfg.ProjectDocMaxBytes = projectdoc.DefaultMaxBytes
	if v := fc.ProjectDocMaxBytes; v != nil {
		if *v < 0 {
			return nil, fmt.Errorf("config key `project_doc_max_bytes` must not be negative, got %d", *v)
		}
		cfg.ProjectDocMaxBytes = int(*v)
	}
	cfg.ProjectDocFallbackNames = fc.ProjectDocFallbackFilenames
	cfg.ProjectRootMarkers = projectdoc.DefaultRootMarkers
	if fc.ProjectRootMarkers != nil {
		cfg.ProjectRootMarkers = fc.ProjectRootMarkers
	}
	if st := fc.Server; st != nil {
		if err := applyServerTable(&cfg.Server, st); err != nil {
			return nil, err
		}
	}
	if fc.Fs != nil {
		var err error
		if cfg.FsRoots, err = resolveFsRoots(fc.Fs.Roots, "config key `fs.roots`"); err != nil {
			return nil, err
		}
	}
	cfg.SkillRules = skillRules(fc.Skills, &cfg.Warnings)
	if err := applyTurnKeys(cfg, fc); err != nil {
		return nil, err
	}
	if err := applyTokens(cfg, fc.AppServer); err != nil {
		return nil, err
	}
	var err error
	var warnings []Warning
	if cfg.MCPServers, warnings, err = resolveMCPServers(fc.McpServers); err != nil {
		return nil, err
	}
	cfg.Warnings = append(cfg.Warnings, warnings...)
	if cfg.ShellEnv, err = shellEnvPolicy(fc.ShellEnvironmentPolicy, cfg.Providers, cfg.MCPServers); err != nil {
		return nil, err
	}
	return cfg, nil
}

// skillRules reads [[skills.config]]: each entry names a skill by an
// absolute path or by a name (not both) and says whether it is enabled.
// An entry that does not is skipped with a warning, as the reference
// skips it: a skill setting never stops the daemon.
func skillRules(t *skillsTable, warnings *[]Warning) []skills.Rule {
	if t == nil {
		return nil
	}
	out := make([]skills.Rule, 0, len(t.Config))
	for i, e := range t.Config {
		skip := func(why string) {
			*warnings = append(*warnings, Warning{Summary: fmt.Sprintf("Ignoring skills.config entry %d: %s.", i+1, why)})
		}
		if e.Enabled == nil {
			skip("it has no `enabled`")
			continue
		}
		r := skills.Rule{Enabled: *e.Enabled}
		if e.Path != nil {
			r.Path = *e.Path
		}
		if e.Name != nil {
			r.Name = strings.TrimSpace(*e.Name)
		}
		switch {
		case r.Path != "" && r.Name != "":
			skip("it has both a path and a name")
		case r.Path == "" && r.Name == "":
			skip("it has neither a path nor a name")
		case r.Path != "" && !filepath.IsAbs(r.Path):
			skip(fmt.Sprintf("its path %q is not absolute", r.Path))
		default:
			out = append(out, r)
		}
	}
	return out
}

// DefaultKeyVariables hold API keys whatever the configuration says: the
// built-in openai provider's, and the one the reference's tools read.
var DefaultKeyVariables = []string{"OPENAI_API_KEY", "CODEX_API_KEY"}

// SecretsFDVariable names the descriptor from which a re-executed daemon
// reads the secret variables it moved out of its environment block
// (cmd/agentd). It is the daemon's alone, like the service manager's.
const SecretsFDVariable = "AGENTD_SECRETS_FD"

// SecretVariables names the variables that hold the operator's
// credentials: the API key variables (DefaultKeyVariables and every
// provider's env_key), those whose values become request headers
// (env_http_headers of providers and of MCP servers) and MCP servers'
// bearer_token_env_var. No child gets them (EnvPolicy.Hidden), and the
// daemon moves them out of its own environment block at startup.
func (c *Config) SecretVariables() []string {
	return secretVariables(c.Providers, c.MCPServers)
}

func secretVariables(providers map[string]model.Provider, servers []mcp.ServerConfig) []string {
	var names []string
	add := func(name string) {
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	// The variables the reference and the built-in provider read keys
	// from, whatever provider is configured.
	for _, name := range DefaultKeyVariables {
		add(name)
	}
	for _, id := range slices.Sorted(maps.Keys(providers)) {
		add(providers[id].EnvKey)
		for _, header := range slices.Sorted(maps.Keys(providers[id].EnvHTTPHeaders)) {
			add(providers[id].EnvHTTPHeaders[header])
		}
	}
	for _, s := range servers {
		add(s.BearerTokenEnvVar)
		for _, header := range slices.Sorted(maps.Keys(s.EnvHTTPHeaders)) {
			add(s.EnvHTTPHeaders[header])
		}
	}
	return names
}

// shellEnvPolicy resolves [shell_environment_policy]. Unlike the
// reference, the default excludes (*KEY*, *SECRET*, *TOKEN*) apply unless
// the table turns them off, and the secret variables (SecretVariables) and
// the service manager's are never passed on: commands' output reaches
// clients, and the operator's keys must not. Only set may give one of
// them to commands, explicitly.
func shellEnvPolicy(t *shellEnvTable, providers map[string]model.Provider, servers []mcp.ServerConfig) (exec.EnvPolicy, error) {
	var p exec.EnvPolicy
	p.Inherit = exec.InheritAll
	// The service manager's variables are the daemon's: a command that
	// saw NOTIFY_SOCKET could tell systemd the daemon is ready or gone.
	p.Hidden = append(p.Hidden, "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", SecretsFDVariable)
	p.Hidden = append(p.Hidden, secretVariables(providers, servers)...)
	if t == nil {
		return p, nil
	}
	if t.Inherit != nil {
		switch i := exec.Inherit(*t.Inherit); i {
		case exec.InheritAll, exec.InheritCore, exec.InheritNone:
			p.Inherit = i
		default:
			return p, fmt.Errorf("config key `shell_environment_policy.inherit`: %q is not one of all, core, none", *t.Inherit)
		}
	}
	if t.IgnoreDefaultExcludes != nil {
		p.IgnoreDefaultExcludes = *t.IgnoreDefaultExcludes
	}
	for key, list := range map[string][]string{"exclude": t.Exclude, "include_only": t.IncludeOnly} {
		for _, pat := range list {
			if !exec.ValidPattern(pat) {
				return p, fmt.Errorf("config key `shell_environment_policy.%s`: %q is not a valid pattern", key, pat)
			}
		}
	}
	p.Exclude, p.IncludeOnly, p.Set = t.Exclude, t.IncludeOnly, t.Set
	return p, nil
}

func applyServerTable(l *ServerLimits, st *serverTable) error {
	positive := func(key string, v *int64, min int64, set func(int64)) error {
		if v == nil {
			return nil
		}
		if *v < min {
			return fmt.Errorf("config key `server.%s` must be at least %d, got %d", key, min, *v)
		}
		set(*v)
		return nil
	}
	return errors.Join(
		positive("max_inflight_per_connection", st.MaxInflightPerConnection, 1, func(v int64) { l.MaxInflightPerConnection = int(v) }),
		positive("max_inflight", st.MaxInflight, 1, func(v int64) { l.MaxInflight = int(v) }),
		positive("max_message_bytes", st.MaxMessageBytes, minMaxMessageBytes, func(v int64) { l.MaxMessageBytes = int(v) }),
		positive("outbound_queue_size", st.OutboundQueueSize, 1, func(v int64) { l.OutboundQueueSize = int(v) }),
		positive("max_queued_request_bytes", st.MaxQueuedRequestBytes, 0, func(v int64) { l.MaxQueuedRequestBytes = int(v) }),
		positive("shutdown_timeout_ms", st.ShutdownTimeoutMS, 0, func(v int64) { l.ShutdownTimeout = time.Duration(v) * time.Millisecond }),
		positive("thread_unload_delay_secs", st.ThreadUnloadDelaySecs, 0, func(v int64) { l.ThreadUnloadDelay = time.Duration(v) * time.Second }),
		positive("rollout_max_line_bytes", st.RolloutMaxLineBytes, minRolloutBytes, func(v int64) { l.RolloutMaxLineBytes = v }),
		positive("rollout_max_file_bytes", st.RolloutMaxFileBytes, minRolloutBytes, func(v int64) { l.RolloutMaxFileBytes = v }),
	)
}
