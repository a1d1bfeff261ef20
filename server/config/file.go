package config

// fileConfig mirrors config.toml. Pointers tell "absent" from "zero"; the
// toml tags are the reference's key names, and the unknown-key check walks
// them, so a key is supported exactly when it appears here.
type fileConfig struct {
	Model                 *string                  `toml:"model"`
	ModelProvider         *string                  `toml:"model_provider"`
	ModelProviders        map[string]providerTable `toml:"model_providers"`
	ApprovalPolicy        *string                  `toml:"approval_policy"`
	SandboxMode           *string                  `toml:"sandbox_mode"`
	SandboxWorkspaceWrite *workspaceWriteTable     `toml:"sandbox_workspace_write"`
	ModelReasoningEffort  *string                  `toml:"model_reasoning_effort"`
	ModelReasoningSummary *string                  `toml:"model_reasoning_summary"`
	ReviewModel           *string                  `toml:"review_model"`
	// Instructions: see Config.
	DeveloperInstructions       *string  `toml:"developer_instructions"`
	ModelInstructionsFile       *string  `toml:"model_instructions_file"`
	ProjectDocMaxBytes          *int64   `toml:"project_doc_max_bytes"`
	ProjectDocFallbackFilenames []string `toml:"project_doc_fallback_filenames"`
	ProjectRootMarkers          []string `toml:"project_root_markers"`
	// ModelCatalogJSON replaces the built-in model catalogue.
	ModelCatalogJSON *string `toml:"model_catalog_json"`
	// Features are feature flags by name (--enable/--disable set them);
	// names must be known ones (see KnownFeature).
	Features map[string]bool `toml:"features"`
	Server   *serverTable    `toml:"server"`
	// AppServer is agentd's own: the WebSocket tokens it admits besides
	// the --ws-* flags', with their scopes.
	AppServer *appServerTable `toml:"app_server"`
	// Fs is agentd's own [fs] table.
	Fs *fsTable `toml:"fs"`

	ShellEnvironmentPolicy *shellEnvTable `toml:"shell_environment_policy"`

	// McpServers are the MCP servers, by name (mcp.go).
	McpServers map[string]mcpServerTable `toml:"mcp_servers"`

	// Model and turn keys: see Config.
	ModelContextWindow         *int64                  `toml:"model_context_window"`
	ModelAutoCompactTokenLimit *int64                  `toml:"model_auto_compact_token_limit"`
	ModelVerbosity             *string                 `toml:"model_verbosity"`
	ToolOutputTokenLimit       *int64                  `toml:"tool_output_token_limit"`
	WebSearch                  *string                 `toml:"web_search"`
	HideAgentReasoning         *bool                   `toml:"hide_agent_reasoning"`
	Notify                     []string                `toml:"notify"`
	Projects                   map[string]projectTable `toml:"projects"`
	// Skills holds [[skills.config]], the skills enabled and disabled
	// by path or by name (skills/config/write writes it).
	Skills *skillsTable `toml:"skills"`

	// Settings for the clients that share the file (the Codex TUI and IDE
	// extensions read them), and analytics and feedback, which agentd
	// never sends: accepted, without effect and without a warning.
	TUI                             any `toml:"tui"`
	Notice                          any `toml:"notice"`
	FileOpener                      any `toml:"file_opener"`
	DisablePasteBurst               any `toml:"disable_paste_burst"`
	ShowRawAgentReasoning           any `toml:"show_raw_agent_reasoning"`
	CheckForUpdateOnStartup         any `toml:"check_for_update_on_startup"`
	SuppressUnstableFeaturesWarning any `toml:"suppress_unstable_features_warning"`
	History                         any `toml:"history"`
	Analytics                       any `toml:"analytics"`
	Feedback                        any `toml:"feedback"`
}

type skillsTable struct {
	Config []skillConfigEntry `toml:"config"`
}

type skillConfigEntry struct {
	Path    *string `toml:"path"`
	Name    *string `toml:"name"`
	Enabled *bool   `toml:"enabled"`
}

type projectTable struct {
	TrustLevel *string `toml:"trust_level"`
}

type shellEnvTable struct {
	Inherit                *string           `toml:"inherit"`
	IgnoreDefaultExcludes  *bool             `toml:"ignore_default_excludes"`
	Exclude                []string          `toml:"exclude"`
	Set                    map[string]string `toml:"set"`
	IncludeOnly            []string          `toml:"include_only"`
	ExperimentalUseProfile *bool             `toml:"experimental_use_profile"`
}

type providerTable struct {
	Name                *string           `toml:"name"`
	BaseURL             *string           `toml:"base_url"`
	EnvKey              *string           `toml:"env_key"`
	WireAPI             *string           `toml:"wire_api"`
	RequiresOpenAIAuth  *bool             `toml:"requires_openai_auth"`
	RequestMaxRetries   *int64            `toml:"request_max_retries"`
	StreamMaxRetries    *int64            `toml:"stream_max_retries"`
	StreamIdleTimeoutMS *int64            `toml:"stream_idle_timeout_ms"`
	HTTPHeaders         map[string]string `toml:"http_headers"`
	EnvHTTPHeaders      map[string]string `toml:"env_http_headers"`
	QueryParams         map[string]string `toml:"query_params"`
	// SupportsWebSearch is agentd's own: false for a Responses server
	// without the hosted web_search tool.
	SupportsWebSearch *bool `toml:"supports_web_search"`
}

type workspaceWriteTable struct {
	WritableRoots       []string `toml:"writable_roots"`
	NetworkAccess       *bool    `toml:"network_access"`
	ExcludeTmpdirEnvVar *bool    `toml:"exclude_tmpdir_env_var"`
	ExcludeSlashTmp     *bool    `toml:"exclude_slash_tmp"`
}

type appServerTable struct {
	Tokens map[string]tokenTable `toml:"tokens"`
}

type tokenTable struct {
	SHA256 *string `toml:"sha256"`
	Scope  *string `toml:"scope"`
}

type fsTable struct {
	Roots []string `toml:"roots"`
}

type serverTable struct {
	MaxInflightPerConnection *int64 `toml:"max_inflight_per_connection"`
	MaxInflight              *int64 `toml:"max_inflight"`
	MaxMessageBytes          *int64 `toml:"max_message_bytes"`
	OutboundQueueSize        *int64 `toml:"outbound_queue_size"`
	MaxQueuedRequestBytes    *int64 `toml:"max_queued_request_bytes"`
	ShutdownTimeoutMS        *int64 `toml:"shutdown_timeout_ms"`
	ThreadUnloadDelaySecs    *int64 `toml:"thread_unload_delay_secs"`
	RolloutMaxLineBytes      *int64 `toml:"rollout_max_line_bytes"`
	RolloutMaxFileBytes      *int64 `toml:"rollout_max_file_bytes"`
}
