package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/pelletier/go-toml/v2"
)

// mcpServerTable is one [mcp_servers.NAME] table, with the reference's
// keys: a stdio server (command, args, env, env_vars, cwd) or a streamable
// HTTP one (url, bearer_token_env_var, http_headers, env_http_headers),
// and the options both share.
type mcpServerTable struct {
	Command *string           `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	// EnvVars holds names, or tables {name, source}.
	EnvVars []any   `toml:"env_vars"`
	Cwd     *string `toml:"cwd"`

	URL               *string           `toml:"url"`
	BearerTokenEnvVar *string           `toml:"bearer_token_env_var"`
	HTTPHeaders       map[string]string `toml:"http_headers"`
	EnvHTTPHeaders    map[string]string `toml:"env_http_headers"`
	// BearerToken is refused, as the reference refuses it: a token
	// belongs in the environment, not in the file.
	BearerToken *string `toml:"bearer_token"`

	Enabled           *bool    `toml:"enabled"`
	Required          *bool    `toml:"required"`
	StartupTimeoutSec *float64 `toml:"startup_timeout_sec"`
	StartupTimeoutMS  *int64   `toml:"startup_timeout_ms"`
	ToolTimeoutSec    *float64 `toml:"tool_timeout_sec"`
	EnabledTools      []string `toml:"enabled_tools"`
	DisabledTools     []string `toml:"disabled_tools"`

	// Accepted without effect (see docs/compatibility.md): a legacy
	// display name, and what agentd does not do (OAuth, per-tool
	// approval modes, remote environments). Every call may already run
	// in parallel.
	Name                      any `toml:"name"`
	SupportsParallelToolCalls any `toml:"supports_parallel_tool_calls"`
	DefaultToolsApprovalMode  any `toml:"default_tools_approval_mode"`
	Tools                     any `toml:"tools"`
	Scopes                    any `toml:"scopes"`
	OAuth                     any `toml:"oauth"`
	OAuthResource             any `toml:"oauth_resource"`
	ExperimentalEnvironment   any `toml:"experimental_environment"`
}

// resolveMCPServers checks the [mcp_servers] tables and returns them,
// sorted by name, with a warning for the keys accepted without effect.
func resolveMCPServers(tables map[string]mcpServerTable) ([]mcp.ServerConfig, []Warning, error) {
	names := make([]string, 0, len(tables))
	for name := range tables {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []mcp.ServerConfig
	var ignored []string
	for _, name := range names {
		t := tables[name]
		c, err := resolveMCPServer(name, t)
		if err != nil {
			return nil, nil, fmt.Errorf("config key `mcp_servers.%s`: %w", name, err)
		}
		out = append(out, c)
		for key, v := range map[string]any{"default_tools_approval_mode": t.DefaultToolsApprovalMode, "tools": t.Tools,
			"scopes": t.Scopes, "oauth": t.OAuth, "oauth_resource": t.OAuthResource, "experimental_environment": t.ExperimentalEnvironment} {
			if v != nil {
				ignored = append(ignored, "`mcp_servers."+name+"."+key+"`")
			}
		}
	}
	var warnings []Warning
	if len(ignored) > 0 {
		sort.Strings(ignored)
		warnings = append(warnings, Warning{
			Summary: "Ignoring MCP server settings agentd does not support: " + strings.Join(ignored, ", "),
			Details: "agentd has no MCP OAuth sign-in, per-tool approval modes or remote environments; see docs/compatibility.md.",
		})
	}
	return out, warnings, nil
}

func resolveMCPServer(name string, t mcpServerTable) (mcp.ServerConfig, error) {
	c := mcp.ServerConfig{Name: name, Env: t.Env, EnabledTools: t.EnabledTools, DisabledTools: t.DisabledTools}
	if name == "" {
		return c, errors.New("the server name is empty")
	}
	notFor := func(transport string, set map[string]bool) error {
		for _, key := range []string{"url", "bearer_token_env_var", "bearer_token", "http_headers", "env_http_headers", "args", "env", "env_vars", "cwd", "oauth", "oauth_resource"} {
			if set[key] {
				return fmt.Errorf("%s is not supported for %s", key, transport)
			}
		}
		return nil
	}
	switch {
	case t.Command != nil:
		if err := notFor("stdio", map[string]bool{"url": t.URL != nil, "bearer_token_env_var": t.BearerTokenEnvVar != nil,
			"bearer_token": t.BearerToken != nil, "http_headers": t.HTTPHeaders != nil, "env_http_headers": t.EnvHTTPHeaders != nil,
			"oauth": t.OAuth != nil, "oauth_resource": t.OAuthResource != nil}); err != nil {
			return c, err
		}
		if *t.Command == "" {
			return c, errors.New("command is empty")
		}
		c.Command, c.Args = *t.Command, t.Args
		if t.Cwd != nil {
			c.Cwd = *t.Cwd
		}
		vars, err := envVarNames(t.EnvVars)
		if err != nil {
			return c, err
		}
		c.EnvVars = vars
	case t.URL != nil:
		if err := notFor("streamable_http", map[string]bool{"args": t.Args != nil, "env": t.Env != nil,
			"env_vars": t.EnvVars != nil, "cwd": t.Cwd != nil, "bearer_token": t.BearerToken != nil}); err != nil {
			return c, err
		}
		u, err := url.Parse(*t.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("url %q is not an http(s) URL", cut(*t.URL))
		}
		c.URL, c.HTTPHeaders, c.EnvHTTPHeaders = *t.URL, t.HTTPHeaders, t.EnvHTTPHeaders
		if t.BearerTokenEnvVar != nil {
			c.BearerTokenEnvVar = *t.BearerTokenEnvVar
		}
	default:
		return c, errors.New("invalid transport: set `command` (a stdio server) or `url` (a streamable HTTP server)")
	}
	c.Disabled = t.Enabled != nil && !*t.Enabled
	c.Required = t.Required != nil && *t.Required
	var err error
	switch {
	case t.StartupTimeoutSec != nil:
		c.StartupTimeout, err = seconds("startup_timeout_sec", *t.StartupTimeoutSec)
	case t.StartupTimeoutMS != nil:
		if *t.StartupTimeoutMS <= 0 {
			return c, fmt.Errorf("startup_timeout_ms must be positive, got %d", *t.StartupTimeoutMS)
		}
		c.StartupTimeout = time.Duration(*t.StartupTimeoutMS) * time.Millisecond
	}
	if err != nil {
		return c, err
	}
	if t.ToolTimeoutSec != nil {
		if c.ToolTimeout, err = seconds("tool_timeout_sec", *t.ToolTimeoutSec); err != nil {
			return c, err
		}
	}
	return c, nil
}

// seconds turns a timeout in (fractional) seconds into a duration.
func seconds(key string, v float64) (time.Duration, error) {
	if math.IsNaN(v) || v <= 0 || v > 365*24*3600 {
		return 0, fmt.Errorf("%s must be a positive number of seconds, got %v", key, v)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// envVarNames reads env_vars: names, or {name, source} tables whose
// source is "local" (or absent); the reference's "remote" needs a remote
// environment agentd does not have.
func envVarNames(entries []any) ([]string, error) {
	var out []string
	for _, e := range entries {
		switch v := e.(type) {
		case string:
			out = append(out, v)
		case map[string]any:
			name, _ := v["name"].(string)
			if name == "" {
				return nil, errors.New("env_vars entry without a name")
			}
			for k := range v {
				if k != "name" && k != "source" {
					return nil, fmt.Errorf("env_vars entry `%s`: unknown key `%s`", name, k)
				}
			}
			switch src, _ := v["source"].(string); src {
			case "", "local":
			case "remote":
				return nil, fmt.Errorf("env_vars entry `%s` uses source `remote`, which requires remote MCP stdio", name)
			default:
				return nil, fmt.Errorf("unsupported env_vars source `%s`; expected `local` or `remote`", src)
			}
			out = append(out, name)
		default:
			return nil, fmt.Errorf("env_vars entries must be names or {name, source} tables, got %v", e)
		}
	}
	return out, nil
}

// cut shortens a value quoted in an error.
func cut(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// ReloadMCPServers reads [mcp_servers] again from the configuration file,
// with the same --config overrides (config/mcpServer/reload, and config
// writes): the servers as they are configured now.
func (c *Config) ReloadMCPServers() ([]mcp.ServerConfig, []Warning, error) {
	doc := map[string]any{}
	data, err := os.ReadFile(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("reading %s: %w", c.Path, err)
	default:
		if err := toml.Unmarshal(data, &doc); err != nil {
			return nil, nil, describeTOMLError(c.Path, err)
		}
	}
	if c.SessionFlags != nil {
		// A copy: merge shares the tables it copies.
		b, err := toml.Marshal(c.SessionFlags)
		if err != nil {
			return nil, nil, err
		}
		flags := map[string]any{}
		if err := toml.Unmarshal(b, &flags); err != nil {
			return nil, nil, err
		}
		merge(doc, flags)
	}
	var part struct {
		McpServers map[string]mcpServerTable `toml:"mcp_servers"`
	}
	b, err := toml.Marshal(map[string]any{"mcp_servers": doc["mcp_servers"]})
	if err != nil {
		return nil, nil, err
	}
	if doc["mcp_servers"] != nil {
		if err := toml.Unmarshal(b, &part); err != nil {
			return nil, nil, describeTOMLError(c.Path, err)
		}
	}
	return resolveMCPServers(part.McpServers)
}
