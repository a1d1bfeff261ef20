package config

import (
	"crypto/sha256"
	"os"
	"time"

	"github.com/agentd-dev/agentd/core/catalog"
	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/projectdoc"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/core/skills"
	"github.com/agentd-dev/agentd/core/tools/exec"
	"github.com/agentd-dev/agentd/server/scope"
)

// FileName is the configuration file's name inside the home directory.
const FileName = "config.toml"

// Defaults for what config.toml may leave out.
const (
	// DefaultModel is the model used with a real provider when none is
	// configured (the reference's default).
	DefaultModel = "gpt-5.5"
	// DemoModel is the model name used with the built-in demo provider.
	DemoModel = "demo"

	// DefaultMaxInflightPerConnection matches the reference's ingress
	// queue (128 messages, "plenty for an interactive CLI"); past it,
	// requests wait (DefaultMaxQueuedRequestBytes).
	DefaultMaxInflightPerConnection = 128
	// DefaultMaxQueuedRequestBytes bounds, per connection, the requests
	// waiting for an in-flight slot: about a thousand small ones (each
	// counts its size and 8 KiB), so that a burst of pipelined requests
	// (256 turn/starts) all run, while a flood is answered -32001.
	DefaultMaxQueuedRequestBytes = 8 << 20
	// DefaultMaxInflight bounds requests in flight across all connections:
	// eight connections can saturate it, so one busy client cannot take
	// everything, while the worst case stays bounded.
	DefaultMaxInflight = 1024
	// DefaultMaxMessageBytes is 16 MiB, what the reference advertises.
	DefaultMaxMessageBytes = 16 << 20
	// DefaultOutboundQueueSize is the per-connection outbound queue, in
	// messages. Eight times the reference's 128: remote clients of the
	// reference were disconnected mid-turn by bursts (issues #18203,
	// #18860); volatile deltas are coalesced well before it fills.
	DefaultOutboundQueueSize = 1024
	// DefaultShutdownTimeout is how long a graceful shutdown lets in-flight
	// work run (the reference's drain after stdin EOF is 30 s).
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultThreadUnloadDelay is how long a thread without subscribers
	// stays loaded (the reference's THREAD_UNLOADING_DELAY, 30 min).
	DefaultThreadUnloadDelay = 30 * time.Minute
	// DefaultRolloutMaxLineBytes caps one line of a rollout file that
	// agentd reads: a longer line fails the read (64 MiB).
	DefaultRolloutMaxLineBytes = rollout.DefaultMaxLineBytes
	// DefaultRolloutMaxFileBytes caps a rollout file that agentd reads
	// (1 GiB).
	DefaultRolloutMaxFileBytes = rollout.DefaultMaxFileBytes

	// minMaxMessageBytes keeps the cap above any sane single message.
	minMaxMessageBytes = 1 << 10
	// minRolloutBytes keeps the rollout caps above a session_meta line.
	minRolloutBytes = 1 << 10
)

// Config is the resolved configuration.
type Config struct {
	// Home is the absolute home directory (codexHome in initialize).
	Home string
	// Path is the config file that was read, or would have been.
	Path string
	// version is the version of Path that was read (Live.Current
	// compares the file with it).
	version fileVersion

	// Model is the model name (model).
	Model string
	// Provider is the selected model provider (model_provider, default
	// openai), with defaults applied and its API key resolved from the
	// environment.
	Provider model.Provider
	// Providers holds every known provider by id: built-ins and
	// [model_providers.<id>] tables.
	Providers map[string]model.Provider

	// ApprovalPolicy is approval_policy (default on-request).
	ApprovalPolicy policy.ApprovalPolicy
	// Sandbox is sandbox_mode (default read-only) with the
	// [sandbox_workspace_write] settings.
	Sandbox policy.SandboxPolicy
	// ReasoningEffort is model_reasoning_effort; empty means the model's
	// default.
	ReasoningEffort string
	// ReasoningSummary is model_reasoning_summary; empty means the model's
	// default.
	ReasoningSummary string
	// ReviewModel (review_model) is the model of code reviews; empty
	// means the thread's.
	ReviewModel string

	// DeveloperInstructions (developer_instructions) are given to the
	// model after its base instructions, unless a thread sets its own.
	DeveloperInstructions string
	// ModelInstructionsFile (model_instructions_file, absolute or relative
	// to the home) replaces the base instructions with its text, read for
	// each new thread, unless a thread sets its own.
	ModelInstructionsFile string
	// ProjectDocMaxBytes (project_doc_max_bytes), ProjectDocFallbackNames
	// (project_doc_fallback_filenames) and ProjectRootMarkers
	// (project_root_markers) shape the search for AGENTS.md files.
	ProjectDocMaxBytes      int
	ProjectDocFallbackNames []string
	ProjectRootMarkers      []string

	// ContextWindow (model_context_window) overrides the model's known
	// context window, in tokens; 0 keeps it.
	ContextWindow int64
	// AutoCompactTokenLimit (model_auto_compact_token_limit) compacts the
	// history inside a turn once it is crossed; 0 means 90% of the
	// context window.
	AutoCompactTokenLimit int64
	// Verbosity (model_verbosity) is the Responses API text verbosity;
	// empty leaves it to the model.
	Verbosity string
	// ToolOutputTokenLimit (tool_output_token_limit) caps each tool
	// output the model reads, in tokens; 0 keeps each tool's own limit.
	ToolOutputTokenLimit int
	// WebSearch (web_search) is the hosted web search offered to the
	// model: "cached" (the default), "live" or "disabled". A provider
	// without the tool offers none (WebSearchFor).
	WebSearch string
	// HideAgentReasoning (hide_agent_reasoning) is a display setting
	// for clients; agentd still sends reasoning, as the reference does.
	HideAgentReasoning bool
	// Notify (notify) is a program and its arguments, run after each
	// completed turn with the turn's JSON as one more argument.
	Notify []string
	// SkillRules are [[skills.config]]'s entries, in order: skills
	// enabled or disabled by path or by name.
	SkillRules []skills.Rule
	// Projects maps an absolute project path to its trust_level
	// (projects.<path>.trust_level); see ThreadPolicies.
	Projects map[string]string
	// approvalSet and sandboxSet say whether approval_policy and
	// sandbox_mode were configured (project trust changes the defaults
	// only).
	approvalSet, sandboxSet bool

	// ShellEnv is shell_environment_policy, with the providers' key
	// variables hidden.
	ShellEnv exec.EnvPolicy

	// MCPServers are the [mcp_servers] tables, by name.
	MCPServers []mcp.ServerConfig

	// Catalog is the model catalogue (model_catalog_json, else the
	// built-in one): which shell tool family and apply_patch form each
	// model is offered.
	Catalog *catalog.Catalog

	// Features are the feature flags set in [features] or with
	// --enable/--disable, by name.
	Features map[string]bool

	// SessionFlags are the --config (and --enable/--disable) overrides as
	// a document, nil when there are none: the layer over config.toml.
	SessionFlags map[string]any

	// Server holds the daemon's own limits ([server]).
	Server ServerLimits

	// WSTokens are the WebSocket tokens of [app_server.tokens.<name>],
	// by name: each admits a client with its scope.
	WSTokens []WSToken
	// FsRoots ([fs] roots, or the --fs-root flags, which replace it) are
	// the trees the fs/* methods, fuzzyFileSearch and command/exec's cwd
	// are confined to: absolute, existing directories, with their
	// symbolic links resolved. Empty: no confinement (the reference's
	// behaviour).
	FsRoots []string

	// Warnings are problems that did not stop loading (unknown keys, a
	// missing API key). Each is logged and sent to every connection as a
	// configWarning notification after its initialize response.
	Warnings []Warning
}

// ToolFamily returns what model is offered, by the catalogue with the
// feature flags applied.
func (c *Config) ToolFamily(model string) catalog.Tools {
	return c.Catalog.Tools(model, c.Features)
}

// WebSearchFor is the web search setting of threads on provider p:
// web_search, or "disabled" when p has no hosted web search.
func (c *Config) WebSearchFor(p model.Provider) string {
	if p.NoWebSearch || c.WebSearch == "" {
		return WebSearchDisabled
	}
	return c.WebSearch
}

// The values of web_search.
const (
	WebSearchDisabled = "disabled"
	WebSearchCached   = "cached"
	WebSearchLive     = "live"
)

// ChildEnv is the environment of a program agentd starts outside
// shell_environment_policy (the notify program, MCP servers): base (the
// daemon's, os.Environ()) without the providers' API key variables, the
// variables env_http_headers names and the service manager's, then
// explicit (an MCP server's env table), the only way to hand one of them
// to such a program.
func (c *Config) ChildEnv(base []string, explicit map[string]string) []string {
	return c.ShellEnv.ChildEnv(base, explicit)
}

// ServerLimits are the [server] table's values.
type ServerLimits struct {
	// MaxInflightPerConnection bounds requests being handled at once
	// for one connection (max_inflight_per_connection); past it, requests
	// wait.
	MaxInflightPerConnection int
	// MaxInflight bounds requests being handled at once in total
	// (max_inflight); past it, requests wait.
	MaxInflight int
	// MaxQueuedRequestBytes bounds what a connection's waiting requests
	// hold (max_queued_request_bytes); past it: -32001. 0: none waits.
	MaxQueuedRequestBytes int
	// MaxMessageBytes caps one message in either direction
	// (max_message_bytes).
	MaxMessageBytes int
	// OutboundQueueSize is each connection's outbound queue length, in
	// messages (outbound_queue_size).
	OutboundQueueSize int
	// ShutdownTimeout bounds the graceful drain (shutdown_timeout_ms).
	ShutdownTimeout time.Duration
	// ThreadUnloadDelay is how long an unsubscribed, idle thread stays
	// loaded (thread_unload_delay_secs).
	ThreadUnloadDelay time.Duration
	// RolloutMaxLineBytes and RolloutMaxFileBytes bound every read of a
	// rollout file, such as the one a client names in thread/resume's
	// path (rollout_max_line_bytes, rollout_max_file_bytes).
	RolloutMaxLineBytes int64
	RolloutMaxFileBytes int64
}

// WSToken is one [app_server.tokens.<name>] table: the SHA-256 digest of
// a WebSocket token (the token itself is never in the file) and the
// scope it grants.
type WSToken struct {
	Name   string
	SHA256 [sha256.Size]byte
	Scope  scope.Scope
}

// Warning is a configuration problem reported to clients as a
// configWarning notification {summary, details}.
type Warning struct {
	Summary string
	Details string
}

// DefaultLimits returns the [server] defaults.
func DefaultLimits() ServerLimits {
	return ServerLimits{
		MaxInflightPerConnection: DefaultMaxInflightPerConnection,
		MaxInflight:              DefaultMaxInflight,
		MaxQueuedRequestBytes:    DefaultMaxQueuedRequestBytes,
		MaxMessageBytes:          DefaultMaxMessageBytes,
		OutboundQueueSize:        DefaultOutboundQueueSize,
		ShutdownTimeout:          DefaultShutdownTimeout,
		ThreadUnloadDelay:        DefaultThreadUnloadDelay,
		RolloutMaxLineBytes:      DefaultRolloutMaxLineBytes,
		RolloutMaxFileBytes:      DefaultRolloutMaxFileBytes,
	}
}

// Default returns the configuration used when there is no config file, no
// override and no API key in the environment: the openai provider and its
// default model, on-request approvals, a read-only sandbox.
func Default(home string) *Config {
	providers := builtinProviders(func(string) string { return "" })
	shellEnv, _ := shellEnvPolicy(nil, providers, nil)
	return &Config{
		ShellEnv:           shellEnv,
		Home:               home,
		Model:              DefaultModel,
		Provider:           providers[OpenAIProviderID],
		Providers:          providers,
		ApprovalPolicy:     policy.ApprovalOnRequest,
		Sandbox:            policy.ReadOnly(),
		Server:             DefaultLimits(),
		ProjectDocMaxBytes: projectdoc.DefaultMaxBytes,
		ProjectRootMarkers: projectdoc.DefaultRootMarkers,
	}
}

// SkillsOptions are where the skills of a thread are searched, and
// which are enabled ([[skills.config]]): the home's skills/, the user's
// ~/.agents/skills (from $HOME), the project's, as the reference does.
func (c *Config) SkillsOptions() skills.Options {
	userHome, _ := os.UserHomeDir()
	return skills.Options{Home: c.Home, UserHome: userHome, RootMarkers: c.ProjectRootMarkers, Rules: c.SkillRules}
}
