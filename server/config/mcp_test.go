package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentd-dev/agentd/core/mcp"
)

func TestMCPServers(t *testing.T) {
	home := writeConfig(t, `
[mcp_servers.docs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { FOO = "bar" }
env_vars = ["MY_TOKEN", { name = "OTHER", source = "local" }]
cwd = "/srv"
startup_timeout_sec = 20
tool_timeout_sec = 1.5
enabled_tools = ["echo", "add"]
disabled_tools = ["add"]
required = true

[mcp_servers.web]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "WEB_TOKEN"
http_headers = { "X-Team" = "blue" }
env_http_headers = { "X-Key" = "WEB_KEY" }
startup_timeout_ms = 2500

[mcp_servers.off]
command = "srv"
enabled = false
`)
	cfg, err := Load(Options{Home: home, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	want := []mcp.ServerConfig{
		{Name: "docs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}, Env: map[string]string{"FOO": "bar"},
			EnvVars: []string{"MY_TOKEN", "OTHER"}, Cwd: "/srv", StartupTimeout: 20 * time.Second, ToolTimeout: 1500 * time.Millisecond,
			EnabledTools: []string{"echo", "add"}, DisabledTools: []string{"add"}, Required: true},
		{Name: "off", Command: "srv", Disabled: true},
		{Name: "web", URL: "https://mcp.example.com/mcp", BearerTokenEnvVar: "WEB_TOKEN", HTTPHeaders: map[string]string{"X-Team": "blue"},
			EnvHTTPHeaders: map[string]string{"X-Key": "WEB_KEY"}, StartupTimeout: 2500 * time.Millisecond},
	}
	if diff := cmp.Diff(want, cfg.MCPServers); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %+v", cfg.Warnings)
	}
	// The web server's credentials are secrets: hidden from every child,
	// and moved out of the daemon's environment block.
	for _, name := range []string{"WEB_TOKEN", "WEB_KEY"} {
		if !slices.Contains(cfg.SecretVariables(), name) || !slices.Contains(cfg.ShellEnv.Hidden, name) {
			t.Errorf("%s: secrets %v, hidden %v", name, cfg.SecretVariables(), cfg.ShellEnv.Hidden)
		}
	}
}

func TestMCPServerErrors(t *testing.T) {
	cases := []struct{ toml, want string }{
		{`[mcp_servers.x]
args = ["a"]`, "config key `mcp_servers.x`: invalid transport: set `command` (a stdio server) or `url` (a streamable HTTP server)"},
		{`[mcp_servers.x]
command = "a"
url = "http://h/mcp"`, "config key `mcp_servers.x`: url is not supported for stdio"},
		{`[mcp_servers.x]
command = "a"
http_headers = { A = "b" }`, "config key `mcp_servers.x`: http_headers is not supported for stdio"},
		{`[mcp_servers.x]
url = "http://h/mcp"
env = { A = "b" }`, "config key `mcp_servers.x`: env is not supported for streamable_http"},
		{`[mcp_servers.x]
url = "http://h/mcp"
bearer_token = "secret"`, "config key `mcp_servers.x`: bearer_token is not supported for streamable_http"},
		{`[mcp_servers.x]
url = "ftp://h/mcp"`, "config key `mcp_servers.x`: url \"ftp://h/mcp\" is not an http(s) URL"},
		{`[mcp_servers.x]
command = "a"
tool_timeout_sec = -1`, "config key `mcp_servers.x`: tool_timeout_sec must be a positive number of seconds, got -1"},
		{`[mcp_servers.x]
command = "a"
env_vars = [{ name = "A", source = "remote" }]`, "config key `mcp_servers.x`: env_vars entry `A` uses source `remote`, which requires remote MCP stdio"},
		{`[mcp_servers.x]
command = "a"
env_vars = [{ name = "A", source = "moon" }]`, "config key `mcp_servers.x`: unsupported env_vars source `moon`; expected `local` or `remote`"},
		{`[mcp_servers.x]
command = ""`, "config key `mcp_servers.x`: command is empty"},
	}
	for _, c := range cases {
		_, err := Load(Options{Home: writeConfig(t, c.toml), Getenv: env()})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s\n got %v\nwant %s", c.toml, err, c.want)
		}
	}
}

// Keys agentd accepts without effect are warned about once; keys nobody
// knows are reported as unknown, like any other.
func TestMCPServerIgnoredAndUnknownKeys(t *testing.T) {
	home := writeConfig(t, `
[mcp_servers.x]
command = "a"
scopes = ["read"]
default_tools_approval_mode = "prompt"
frobnicate = true
`)
	cfg, err := Load(Options{Home: home, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, w := range cfg.Warnings {
		all = append(all, w.Summary)
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{"`mcp_servers.x.frobnicate`", "Ignoring MCP server settings agentd does not support: `mcp_servers.x.default_tools_approval_mode`, `mcp_servers.x.scopes`"} {
		if !strings.Contains(text, want) {
			t.Errorf("warnings lack %s:\n%s", want, text)
		}
	}
	if _, err := Load(Options{Home: home, Getenv: env(), Strict: true}); err == nil || !strings.Contains(err.Error(), "unknown configuration field `mcp_servers.x.frobnicate`") {
		t.Errorf("strict: %v", err)
	}
}

// --config can add a server, and a reload reads the file again with the
// same overrides.
func TestReloadMCPServers(t *testing.T) {
	home := writeConfig(t, "[mcp_servers.a]\ncommand = \"one\"\n")
	cfg, err := Load(Options{Home: home, Getenv: env(), Overrides: []string{`mcp_servers.b.command="two"`}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MCPServers) != 2 || cfg.MCPServers[1].Command != "two" {
		t.Fatalf("servers %+v", cfg.MCPServers)
	}
	if err := os.WriteFile(filepath.Join(home, FileName), []byte("[mcp_servers.a]\ncommand = \"uno\"\n[mcp_servers.c]\nurl = \"http://127.0.0.1:1/mcp\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	servers, _, err := cfg.ReloadMCPServers()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range servers {
		got = append(got, s.Name+"="+s.Command+s.URL)
	}
	if strings.Join(got, ",") != "a=uno,b=two,c=http://127.0.0.1:1/mcp" {
		t.Errorf("reloaded %v", got)
	}
	if err := os.WriteFile(filepath.Join(home, FileName), []byte("[mcp_servers.a]\nurl = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cfg.ReloadMCPServers(); err == nil || !strings.Contains(err.Error(), "mcp_servers") {
		t.Errorf("a broken file: %v", err)
	}
}
