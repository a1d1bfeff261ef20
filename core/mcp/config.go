package mcp

import (
	"maps"
	"slices"
	"time"
)

// Defaults of the reference for a server that sets no timeouts.
const (
	// DefaultStartupTimeout bounds starting a server: the process (or
	// connection), initialize, and the first tools/list.
	DefaultStartupTimeout = 10 * time.Second
	// DefaultToolTimeout bounds one tool call.
	DefaultToolTimeout = 60 * time.Second
)

// ServerConfig is one [mcp_servers.NAME] table, resolved. Exactly one of
// Command (a stdio server) and URL (a streamable HTTP server) is set.
type ServerConfig struct {
	Name string

	// Stdio: the program, its arguments, the variables set for it (Env)
	// and passed on from agentd's environment (EnvVars), and its working
	// directory ("" for agentd's).
	Command string
	Args    []string
	Env     map[string]string
	EnvVars []string
	Cwd     string

	// Streamable HTTP: the endpoint, the variable holding a bearer token,
	// headers set as given and headers whose values are read from
	// variables (header → variable).
	URL               string
	BearerTokenEnvVar string
	HTTPHeaders       map[string]string
	EnvHTTPHeaders    map[string]string

	// Disabled servers are listed but never started.
	Disabled bool
	// Required servers must start for a thread to start.
	Required bool
	// StartupTimeout and ToolTimeout; zero means the defaults.
	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	// EnabledTools, when not nil, lists the only tools offered;
	// DisabledTools are removed after it.
	EnabledTools  []string
	DisabledTools []string
}

func (c ServerConfig) startupTimeout() time.Duration {
	if c.StartupTimeout > 0 {
		return c.StartupTimeout
	}
	return DefaultStartupTimeout
}

func (c ServerConfig) toolTimeout() time.Duration {
	if c.ToolTimeout > 0 {
		return c.ToolTimeout
	}
	return DefaultToolTimeout
}

// offers reports whether the configuration lets the model see tool.
func (c ServerConfig) offers(tool string) bool {
	if c.EnabledTools != nil && !slices.Contains(c.EnabledTools, tool) {
		return false
	}
	return !slices.Contains(c.DisabledTools, tool)
}

// equal reports whether two configurations start the same server the
// same way (a reload leaves such a server running).
func (c ServerConfig) equal(o ServerConfig) bool {
	return c.Name == o.Name && c.Command == o.Command && slices.Equal(c.Args, o.Args) &&
		maps.Equal(c.Env, o.Env) && slices.Equal(c.EnvVars, o.EnvVars) && c.Cwd == o.Cwd &&
		c.URL == o.URL && c.BearerTokenEnvVar == o.BearerTokenEnvVar &&
		maps.Equal(c.HTTPHeaders, o.HTTPHeaders) && maps.Equal(c.EnvHTTPHeaders, o.EnvHTTPHeaders) &&
		c.Disabled == o.Disabled && c.Required == o.Required &&
		c.StartupTimeout == o.StartupTimeout && c.ToolTimeout == o.ToolTimeout &&
		slices.Equal(c.EnabledTools, o.EnabledTools) && slices.Equal(c.DisabledTools, o.DisabledTools)
}
