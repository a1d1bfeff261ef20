package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/catalog"
	"github.com/agentd-dev/agentd/core/policy"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, FileName), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestLoadWithoutFileUsesOpenAIDefaults(t *testing.T) {
	home := t.TempDir()
	cfg, err := Load(Options{Home: home, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.ID != OpenAIProviderID || cfg.Model != DefaultModel || cfg.Provider.APIKey != "" {
		t.Fatalf("provider %q model %q, want the openai defaults", cfg.Provider.ID, cfg.Model)
	}
	if cfg.ApprovalPolicy != policy.ApprovalOnRequest || cfg.Sandbox.Mode != policy.SandboxReadOnly {
		t.Fatalf("policy %q sandbox %q", cfg.ApprovalPolicy, cfg.Sandbox.Mode)
	}
	if cfg.Server != DefaultLimits() {
		t.Fatalf("limits %+v", cfg.Server)
	}
	// No key warning for a provider one signs in to (account/login/start).
	if len(cfg.Warnings) != 0 {
		t.Fatalf("warnings %+v", cfg.Warnings)
	}
	if cfg.Path != filepath.Join(home, FileName) {
		t.Fatalf("path %q", cfg.Path)
	}
	def := Default(home)
	if def.Provider.ID != cfg.Provider.ID || def.Model != cfg.Model {
		t.Fatalf("Default(): provider %q model %q, Load: %q %q", def.Provider.ID, def.Model, cfg.Provider.ID, cfg.Model)
	}
}

func TestDemoProviderIsSelectedExplicitly(t *testing.T) {
	cfg, err := Load(Options{Home: t.TempDir(), Getenv: env(), Overrides: []string{`model_provider="demo"`}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.ID != DemoProviderID || cfg.Model != DemoModel || len(cfg.Warnings) != 0 {
		t.Fatalf("provider %q model %q warnings %+v", cfg.Provider.ID, cfg.Model, cfg.Warnings)
	}
}

func TestOpenAIKeyFromTheEnvironment(t *testing.T) {
	cfg, err := Load(Options{Home: t.TempDir(), Getenv: env("OPENAI_API_KEY", "sk-test")})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Provider
	if p.ID != OpenAIProviderID || p.APIKey != "sk-test" || p.BaseURL != "https://api.openai.com/v1" || cfg.Model != DefaultModel {
		t.Fatalf("provider %+v model %q", p, cfg.Model)
	}
	if p.RequestMaxRetries != 4 || p.StreamMaxRetries != 5 || p.StreamIdleTimeout != 300*time.Second {
		t.Fatalf("defaults not applied: %+v", p)
	}
}

func TestFileValuesAndCustomProvider(t *testing.T) {
	home := writeConfig(t, `
model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "workspace-write"
model_reasoning_effort = "high"
model_reasoning_summary = "concise"

[model_providers.mock]
name = "Mock"
base_url = "http://127.0.0.1:9/v1"
env_key = "MOCK_KEY"
request_max_retries = 1
stream_max_retries = 0
stream_idle_timeout_ms = 1500
http_headers = { "X-A" = "b" }
query_params = { "api-version" = "1" }

[sandbox_workspace_write]
writable_roots = ["/srv/data"]
network_access = true
exclude_slash_tmp = true

[server]
max_inflight_per_connection = 3
max_inflight = 7
max_message_bytes = 4096
outbound_queue_size = 9
max_queued_request_bytes = 0
shutdown_timeout_ms = 250
thread_unload_delay_secs = 60
rollout_max_line_bytes = 2048
rollout_max_file_bytes = 1048576
`)
	cfg, err := Load(Options{Home: home, Getenv: env("MOCK_KEY", "k")})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Provider
	if p.ID != "mock" || p.Name != "Mock" || p.BaseURL != "http://127.0.0.1:9/v1" || p.APIKey != "k" ||
		p.RequestMaxRetries != 1 || p.StreamIdleTimeout != 1500*time.Millisecond ||
		p.HTTPHeaders["X-A"] != "b" || p.QueryParams["api-version"] != "1" {
		t.Fatalf("provider %+v", p)
	}
	// An explicit 0 turns stream retries off; it is not "unset".
	if p.StreamMaxRetries != 0 {
		t.Fatalf("stream_max_retries %d", p.StreamMaxRetries)
	}
	if cfg.Model != "mock-model" || cfg.ApprovalPolicy != policy.ApprovalNever || cfg.ReasoningEffort != "high" || cfg.ReasoningSummary != "concise" {
		t.Fatalf("cfg %+v", cfg)
	}
	sb := cfg.Sandbox
	if sb.Mode != policy.SandboxWorkspaceWrite || len(sb.WritableRoots) != 1 || !sb.NetworkAccess || !sb.ExcludeSlashTmp || sb.ExcludeTmpdirEnvVar {
		t.Fatalf("sandbox %+v", sb)
	}
	want := ServerLimits{
		MaxInflightPerConnection: 3, MaxInflight: 7, MaxQueuedRequestBytes: 0, MaxMessageBytes: 4096, OutboundQueueSize: 9,
		ShutdownTimeout: 250 * time.Millisecond, ThreadUnloadDelay: 60 * time.Second,
		RolloutMaxLineBytes: 2048, RolloutMaxFileBytes: 1 << 20,
	}
	if cfg.Server != want {
		t.Fatalf("limits %+v, want %+v", cfg.Server, want)
	}
	if len(cfg.Warnings) != 0 {
		t.Fatalf("warnings %+v", cfg.Warnings)
	}
}

func TestOverridesWinAndParseTOMLValues(t *testing.T) {
	home := writeConfig(t, "model = \"a\"\n[server]\nmax_inflight = 5\n")
	cfg, err := Load(Options{Home: home, Getenv: env(), Overrides: []string{
		"model=gpt-5.5-codex",                           // not TOML: literal string
		"server.max_inflight=9",                         // integer
		"server.max_inflight_per_connection = 2",        // spaces around '='
		`sandbox_workspace_write.writable_roots=["/x"]`, // array
		"model_providers.local.base_url=http://127.0.0.1:1/v1",
		"model_provider=local",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "gpt-5.5-codex" || cfg.Server.MaxInflight != 9 || cfg.Server.MaxInflightPerConnection != 2 {
		t.Fatalf("cfg model %q limits %+v", cfg.Model, cfg.Server)
	}
	if len(cfg.Sandbox.WritableRoots) != 1 || cfg.Sandbox.WritableRoots[0] != "/x" {
		t.Fatalf("roots %v", cfg.Sandbox.WritableRoots)
	}
	if cfg.Provider.ID != "local" || cfg.Provider.BaseURL != "http://127.0.0.1:1/v1" {
		t.Fatalf("provider %+v", cfg.Provider)
	}
}

func TestUnknownKeysAreWarnings(t *testing.T) {
	home := writeConfig(t, "bogus = 1\n[otel]\nx = 1\n[model_providers.openai]\nfrobnicate = true\n")
	cfg, err := Load(Options{Home: home, Getenv: env(), Overrides: []string{"server.nope=3"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 2 {
		t.Fatalf("warnings %+v", cfg.Warnings)
	}
	file, over := cfg.Warnings[0].Summary, cfg.Warnings[1].Summary
	for _, k := range []string{"`bogus`", "`otel`", "`model_providers.openai.frobnicate`", FileName} {
		if !strings.Contains(file, k) {
			t.Errorf("file warning %q lacks %s", file, k)
		}
	}
	if !strings.Contains(over, "`server.nope`") || !strings.Contains(over, "--config") {
		t.Errorf("override warning %q", over)
	}
}

// Under --strict-config an unknown key is an error naming the first one in
// the file, with its position, as the reference words it.
func TestStrictConfigNamesTheUnknownKey(t *testing.T) {
	home := writeConfig(t, "model = \"m\"\n\n[model_providers.x]\nbase_url = \"http://127.0.0.1:1\"\n  frobnicate = true\nbogus = 1\n")
	_, err := Load(Options{Home: home, Getenv: env(), Strict: true})
	var uf *UnknownFieldError
	if !errors.As(err, &uf) {
		t.Fatalf("got %v, want an UnknownFieldError", err)
	}
	want := filepath.Join(home, FileName) + ":5:3: unknown configuration field `model_providers.x.frobnicate`"
	if err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
	home = writeConfig(t, "[otel]\nx = 1\n")
	if _, err := Load(Options{Home: home, Getenv: env(), Strict: true}); err == nil || !strings.HasSuffix(err.Error(), ":1:1: unknown configuration field `otel`") {
		t.Fatalf("unknown table: %v", err)
	}
	_, err = Load(Options{Home: t.TempDir(), Getenv: env(), Strict: true, Overrides: []string{"nope=1"}})
	if err == nil || err.Error() != "--config: unknown configuration field `nope`" {
		t.Fatalf("override: %v", err)
	}
	// Without --strict-config the same file loads, with a warning.
	if cfg, err := Load(Options{Home: home, Getenv: env()}); err != nil || len(cfg.Warnings) != 1 {
		t.Fatalf("lenient: %v %+v", err, cfg)
	}
}

// [features] takes the reference's feature flags (--enable and --disable
// set them); a name that is not a feature is an unknown key.
func TestFeatures(t *testing.T) {
	home := writeConfig(t, "[features]\nunified_exec = true\nnot_a_feature = true\n")
	cfg, err := Load(Options{Home: home, Getenv: env(), Overrides: []string{"features.web_search_request=false"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := cfg.Features["unified_exec"]; !ok || !v {
		t.Errorf("features %v", cfg.Features)
	}
	if v, ok := cfg.Features["web_search_request"]; !ok || v {
		t.Errorf("override: features %v", cfg.Features)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Summary, "`features.not_a_feature`") {
		t.Fatalf("warnings %+v", cfg.Warnings)
	}
	_, err = Load(Options{Home: home, Getenv: env(), Strict: true})
	if err == nil || !strings.HasSuffix(err.Error(), ":3:1: unknown configuration field `features.not_a_feature`") {
		t.Fatalf("strict: %v", err)
	}
	if !KnownFeature("unified_exec") || KnownFeature("foo") {
		t.Fatal("KnownFeature")
	}
}

// The tools a model is offered: the built-in catalogue with the feature
// flags, or model_catalog_json (relative to the home), which replaces it.
func TestModelCatalogAndToolFamily(t *testing.T) {
	cfg, err := Load(Options{Home: t.TempDir(), Getenv: env(), Overrides: []string{"features.unified_exec=false"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ToolFamily("gpt-5.5"); got != (catalog.Tools{Shell: catalog.ShellCommand, ApplyPatch: catalog.ApplyPatchFreeform, SearchImages: true}) {
		t.Fatalf("built-in gpt-5.5: %+v", got)
	}
	home := writeConfig(t, "model_catalog_json = \"models.json\"\n")
	if _, err := Load(Options{Home: home, Getenv: env()}); err == nil || !strings.Contains(err.Error(), "config key `model_catalog_json`: read model catalogue") {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(`{"models":[{"slug":"mine","shell_type":"local"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(Options{Home: home, Getenv: env(), Overrides: []string{"features.unified_exec=false"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ToolFamily("mine"); got != (catalog.Tools{Shell: catalog.ShellLocal, SearchImages: true}) {
		t.Fatalf("mine: %+v", got)
	}
	if got := cfg.ToolFamily("gpt-5.5"); got != (catalog.Tools{Shell: catalog.ShellUnifiedExec}) {
		t.Fatalf("gpt-5.5 with a catalogue that lacks it: %+v", got)
	}
}

func TestMissingAPIKeyIsAWarning(t *testing.T) {
	custom := "[model_providers.mock]\nbase_url = \"http://127.0.0.1:9/v1\"\nenv_key = \"MOCK_KEY\"\n"
	cfg, err := Load(Options{Home: writeConfig(t, custom), Getenv: env(), Overrides: []string{"model_provider=mock"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Summary, "Environment variable MOCK_KEY is not set") {
		t.Fatalf("warnings %+v", cfg.Warnings)
	}
	// A provider that takes OpenAI auth gets none: one signs in to it.
	for _, o := range [][]string{{"model_provider=openai"}, {"model_provider=mock", "model_providers.mock.requires_openai_auth=true"}} {
		cfg, err := Load(Options{Home: writeConfig(t, custom), Getenv: env(), Overrides: o})
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Warnings) != 0 {
			t.Fatalf("%v: warnings %+v", o, cfg.Warnings)
		}
	}
}

func TestInvalidConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name, file string
		overrides  []string
		want       string
	}{
		{"syntax", "model = \n", nil, "config.toml"},
		{"type", "model = 5\n", nil, "`model`"},
		{"nested type", "[server]\nmax_inflight = \"x\"\n", nil, "`server.max_inflight`"},
		{"approval", "approval_policy = \"sometimes\"\n", nil, "`approval_policy`"},
		{"sandbox", "sandbox_mode = \"open\"\n", nil, "`sandbox_mode`"},
		{"effort", "model_reasoning_effort = \"max\"\n", nil, "`model_reasoning_effort`"},
		{"summary", "model_reasoning_summary = \"long\"\n", nil, "`model_reasoning_summary`"},
		{"unknown provider", "model_provider = \"nope\"\n", nil, "`model_provider`"},
		{"custom without url", "[model_providers.x]\nname = \"x\"\n", nil, "`model_providers.x.base_url`"},
		{"wire api", "[model_providers.openai]\nwire_api = \"chat\"\n", nil, "`model_providers.openai.wire_api`"},
		{"limit", "", []string{"server.max_inflight=0"}, "`server.max_inflight`"},
		{"message cap", "", []string{"server.max_message_bytes=10"}, "`server.max_message_bytes`"},
		{"relative root", "[sandbox_workspace_write]\nwritable_roots = [\"rel\"]\n", nil, "writable_roots"},
		{"bad override", "", []string{"novalue"}, "key=value"},
		{"env inherit", "[shell_environment_policy]\ninherit = \"some\"\n", nil, "`shell_environment_policy.inherit`"},
		{"context window", "model_context_window = 0\n", nil, "`model_context_window`"},
		{"compact limit", "model_auto_compact_token_limit = -5\n", nil, "`model_auto_compact_token_limit`"},
		{"verbosity", "model_verbosity = \"loud\"\n", nil, "`model_verbosity`"},
		{"tool output limit", "tool_output_token_limit = 0\n", nil, "`tool_output_token_limit`"},
		{"notify", "notify = [\"\"]\n", nil, "`notify`"},
		{"trust", "[projects.\"/p\"]\ntrust_level = \"maybe\"\n", nil, "trust_level"},
		{"relative project", "[projects.\"p\"]\ntrust_level = \"trusted\"\n", nil, "absolute"},
		{"env pattern", "[shell_environment_policy]\nexclude = [\"[\"]\n", nil, "`shell_environment_policy.exclude`"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := writeConfig(t, tc.file)
			_, err := Load(Options{Home: home, Getenv: env(), Overrides: tc.overrides})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %s", err, tc.want)
			}
		})
	}
}

func TestResolveHome(t *testing.T) {
	dir := t.TempDir()
	got, err := ResolveHome(dir, env(HomeEnv, "/elsewhere"))
	if err != nil || got != dir {
		t.Fatalf("flag: %q %v", got, err)
	}
	got, err = ResolveHome("", env(HomeEnv, dir, CodexHomeEnv, "/codex"))
	if err != nil || got != dir {
		t.Fatalf("env: %q %v", got, err)
	}
	got, err = ResolveHome("", env(CodexHomeEnv, dir))
	if err != nil || got != dir {
		t.Fatalf("CODEX_HOME: %q %v", got, err)
	}
	got, err = ResolveHome("", env())
	if err != nil || filepath.Base(got) != ".agentd" || !filepath.IsAbs(got) {
		t.Fatalf("default: %q %v", got, err)
	}
}

func TestShellEnvironmentPolicyTable(t *testing.T) {
	home := writeConfig(t, `[shell_environment_policy]
inherit = "core"
ignore_default_excludes = true
exclude = ["A*"]
include_only = ["PATH"]
set = { X = "1" }
[model_providers.mine]
base_url = "http://127.0.0.1:1/v1"
env_key = "MINE_KEY"
env_http_headers = { "X-Gateway" = "CORP_GATEWAY_CREDS" }
`)
	cfg, err := Load(Options{Home: home, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.ShellEnv
	if p.Inherit != "core" || !p.IgnoreDefaultExcludes || p.Exclude[0] != "A*" || p.IncludeOnly[0] != "PATH" || p.Set["X"] != "1" {
		t.Fatalf("policy %+v", p)
	}
	if !slices.Contains(p.Hidden, "MINE_KEY") || !slices.Contains(p.Hidden, "OPENAI_API_KEY") || !slices.Contains(p.Hidden, "CORP_GATEWAY_CREDS") {
		t.Fatalf("provider keys not hidden: %v", p.Hidden)
	}
	// The daemon's own variables are hidden from children but stay in its
	// environment: they are not secrets to move out of it.
	if !slices.Contains(p.Hidden, SecretsFDVariable) || !slices.Contains(p.Hidden, "NOTIFY_SOCKET") {
		t.Fatalf("the daemon's variables not hidden: %v", p.Hidden)
	}
	secrets := cfg.SecretVariables()
	if !slices.Contains(secrets, "MINE_KEY") || !slices.Contains(secrets, "CORP_GATEWAY_CREDS") || !slices.Contains(secrets, "CODEX_API_KEY") ||
		slices.Contains(secrets, "NOTIFY_SOCKET") || slices.Contains(secrets, "LISTEN_FDS") || slices.Contains(secrets, SecretsFDVariable) {
		t.Fatalf("secret variables %v", secrets)
	}
	if d := Default(t.TempDir()).ShellEnv; d.Inherit != "all" || d.IgnoreDefaultExcludes || !slices.Contains(d.Hidden, "OPENAI_API_KEY") {
		t.Fatalf("default policy %+v", d)
	}
}

// The settings of the clients that share config.toml are accepted without
// a warning, even under --strict-config.
func TestClientSettingsAreAccepted(t *testing.T) {
	home := writeConfig(t, `file_opener = "vscode"
check_for_update_on_startup = false
show_raw_agent_reasoning = true
disable_paste_burst = true
suppress_unstable_features_warning = true
[tui]
notifications = true
[notice]
hide_full_access_warning = true
[history]
persistence = "none"
[analytics]
enabled = false
[feedback]
enabled = false
`)
	cfg, err := Load(Options{Home: home, Getenv: env(), Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Fatalf("warnings %v", cfg.Warnings)
	}
}

// web_search: cached by default, as set otherwise, an error naming the key
// for anything else; a provider without the hosted tool (the demo one, or
// supports_web_search = false) offers none whatever the key says.
func TestWebSearchKey(t *testing.T) {
	cfg, err := Load(Options{Home: t.TempDir(), Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WebSearch != WebSearchCached || cfg.WebSearchFor(cfg.Provider) != WebSearchCached || cfg.WebSearchFor(cfg.Providers[DemoProviderID]) != WebSearchDisabled {
		t.Fatalf("default %q, openai %q, demo %q", cfg.WebSearch, cfg.WebSearchFor(cfg.Provider), cfg.WebSearchFor(cfg.Providers[DemoProviderID]))
	}
	home := writeConfig(t, "web_search = \"live\"\n[model_providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\nsupports_web_search = false\n[model_providers.other]\nbase_url = \"http://127.0.0.1:9/v1\"\n")
	cfg, err = Load(Options{Home: home, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 || cfg.WebSearchFor(cfg.Providers["local"]) != WebSearchDisabled || cfg.WebSearchFor(cfg.Providers["other"]) != WebSearchLive {
		t.Fatalf("warnings %v, local %q, other %q", cfg.Warnings, cfg.WebSearchFor(cfg.Providers["local"]), cfg.WebSearchFor(cfg.Providers["other"]))
	}
	if _, err := Load(Options{Home: writeConfig(t, "web_search = \"always\"\n"), Getenv: env()}); err == nil || !strings.Contains(err.Error(), "config key `web_search`: \"always\" is not one of live, cached, disabled") {
		t.Fatalf("bad value: %v", err)
	}
}
