package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// State is where a server is in its life.
type State string

// Server states. Starting, ready and failed are the reference's startup
// states (mcpServer/startupStatus/updated); disabled servers are never
// started; stopped ones were removed by a reload or by Close.
const (
	StateStarting State = "starting"
	StateReady    State = "ready"
	StateFailed   State = "failed"
	StateDisabled State = "disabled"
	StateStopped  State = "stopped"
)

// Update is a change of a server's state. Error says why it failed
// ("MCP startup failed: …", "MCP server exited: …").
type Update struct {
	Server string
	State  State
	Error  string
}

// Options configure a Manager.
type Options struct {
	Log *zap.Logger
	// LookupEnv reads agentd's environment (nil: os.LookupEnv): the
	// variables passed to stdio servers, bearer tokens, env headers.
	LookupEnv func(string) (string, bool)
	// OnUpdate is told every change of a server's state, in order for
	// each server. It must not block for long.
	OnUpdate func(Update)
	// Version is agentd's version, sent in initialize.
	Version string
	// RestartBackoff is the first wait before a server that exited is
	// started again (doubled at each failed restart, up to
	// maxRestartBackoff); 0 means one second.
	RestartBackoff time.Duration
	// StopGrace is how long a stdio server gets to exit after its stdin
	// closes, and again after SIGTERM; 0 means two seconds.
	StopGrace time.Duration
}

const (
	defaultRestartBackoff = time.Second
	maxRestartBackoff     = 30 * time.Second
	// maxFailedRestarts: a server whose restarts keep failing is left
	// failed (until a reload) rather than started forever.
	maxFailedRestarts = 5
	// stableAfter: a server that stayed ready this long starts again
	// with the first backoff when it exits.
	stableAfter = time.Minute
	// maxListed caps what is read from one server's lists (tools,
	// resources), so that a runaway server cannot exhaust memory.
	maxListed = 1000
)

// Manager runs the configured MCP servers of the daemon.
type Manager struct {
	opts Options
	log  *zap.Logger
	// reloadMu makes reloads one at a time.
	reloadMu sync.Mutex

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
	// names is the qualified-name table, rebuilt when a server's tools
	// change (nil: to rebuild).
	names map[string]toolRef
	byRef map[toolRef]string
}

// NewManager returns a manager for the servers; none runs until Start.
func NewManager(servers []ServerConfig, opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = defaultRestartBackoff
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 2 * time.Second
	}
	m := &Manager{opts: opts, log: opts.Log, servers: map[string]*server{}}
	for _, c := range servers {
		m.servers[c.Name] = newServer(m, c)
	}
	return m
}

// Start launches every enabled server in the background.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.servers {
		s.start()
	}
}

// Configured reports whether any server is configured (enabled or not).
func (m *Manager) Configured() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.servers) > 0
}

// Reload applies a new configuration: servers that were removed or
// changed are stopped, new or changed ones started, unchanged ones left
// running.
func (m *Manager) Reload(servers []ServerConfig) {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	want := map[string]ServerConfig{}
	for _, c := range servers {
		want[c.Name] = c
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	var stopping []*server
	for name, s := range m.servers {
		if c, ok := want[name]; !ok || !c.equal(s.cfg) {
			stopping = append(stopping, s)
			delete(m.servers, name)
		}
	}
	var starting []*server
	for name, c := range want {
		if _, ok := m.servers[name]; !ok {
			s := newServer(m, c)
			m.servers[name] = s
			starting = append(starting, s)
		}
	}
	m.names = nil
	m.mu.Unlock()
	m.stopAll(context.Background(), stopping)
	m.mu.Lock()
	for _, s := range starting {
		if m.servers[s.cfg.Name] == s {
			s.start()
		}
	}
	m.mu.Unlock()
}

// Close stops every server: sessions end and stdio servers' process groups
// are killed. It returns when all are stopped or ctx ends.
func (m *Manager) Close(ctx context.Context) {
	m.mu.Lock()
	m.closed = true
	all := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		all = append(all, s)
	}
	m.mu.Unlock()
	m.stopAll(ctx, all)
}

func (m *Manager) stopAll(ctx context.Context, servers []*server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop(ctx)
		}()
	}
	wg.Wait()
}

// sorted returns the servers by name.
func (m *Manager) sorted() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cfg.Name < out[j].cfg.Name })
	return out
}

func (m *Manager) server(name string) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers[name]
}

// toolsChanged drops the name table: a server's tools came or went.
func (m *Manager) toolsChanged() {
	m.mu.Lock()
	m.names, m.byRef = nil, nil
	m.mu.Unlock()
}

func (m *Manager) notify(u Update) {
	if m.opts.OnUpdate != nil {
		m.opts.OnUpdate(u)
	}
}

// WaitRequired waits for the current start of every required server and
// fails, naming each, if any of them is not ready.
func (m *Manager) WaitRequired(ctx context.Context) error {
	var failed []string
	for _, s := range m.sorted() {
		if !s.cfg.Required || s.cfg.Disabled {
			continue
		}
		if err := s.waitStarted(ctx); err != nil {
			return err
		}
		if st, cause := s.stateNow(); st != StateReady {
			if cause == "" {
				cause = string(st)
			}
			failed = append(failed, s.cfg.Name+": "+cause)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("required MCP servers failed to initialize: %s", strings.Join(failed, ", "))
	}
	return nil
}

// Tool is a tool of a server, as offered to the model.
type Tool struct {
	// Server and Name are the server's names, used to call it.
	Server string
	Name   string
	// Qualified is the function name the model sees.
	Qualified   string
	Description string
	// Parameters is the input schema, sanitized for the Responses API.
	Parameters json.RawMessage
	// ReadOnly is the tool's readOnlyHint annotation, nil when absent.
	ReadOnly *bool
}

// Spec is the tool's Responses API function definition.
func (t Tool) Spec() json.RawMessage {
	b, _ := json.Marshal(struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Strict      bool            `json:"strict"`
		Parameters  json.RawMessage `json:"parameters"`
	}{"function", t.Qualified, t.Description, false, t.Parameters})
	return b
}

// Tools lists the tools of the ready servers, by qualified name. It first
// waits for the servers still starting (each bounded by its startup
// timeout), so that the first turn after the daemon starts sees them; ctx
// ends the wait early.
func (m *Manager) Tools(ctx context.Context) []Tool {
	servers := m.sorted()
	for _, s := range servers {
		if s.waitStarted(ctx) != nil {
			break
		}
	}
	byRef := m.table()
	var out []Tool
	for _, s := range servers {
		for _, t := range s.readyTools() {
			ref := toolRef{s.cfg.Name, t.Name}
			q, ok := byRef[ref]
			if !ok {
				continue // came with a restart after the table was built
			}
			out = append(out, toolOf(s.cfg.Name, q, t))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Qualified < out[j].Qualified })
	return out
}

// Lookup finds the tool a model's call names: a qualified name, or, in
// the reference's namespace form, "mcp__<server>" and the tool's part.
func (m *Manager) Lookup(name, namespace string) (Tool, bool) {
	if namespace != "" {
		name = flatName(namespace, name)
	}
	if !strings.HasPrefix(name, toolPrefix) {
		return Tool{}, false
	}
	m.table()
	m.mu.Lock()
	ref, ok := m.names[name]
	s := m.servers[ref.server]
	m.mu.Unlock()
	if !ok || s == nil {
		return Tool{}, false
	}
	for _, t := range s.readyTools() {
		if t.Name == ref.tool {
			return toolOf(ref.server, name, t), true
		}
	}
	return Tool{}, false
}

// toolOf is the model's view of a server's tool.
func toolOf(server, qualified string, t *mcp.Tool) Tool {
	tool := Tool{Server: server, Name: t.Name, Qualified: qualified, Description: t.Description,
		Parameters: sanitizeSchema(t.InputSchema)}
	if t.Annotations != nil {
		ro := t.Annotations.ReadOnlyHint
		tool.ReadOnly = &ro
	}
	return tool
}

// table returns the qualified names of every ready server's tools,
// building them if a server's tools changed.
func (m *Manager) table() map[toolRef]string {
	m.mu.Lock()
	if m.byRef != nil {
		defer m.mu.Unlock()
		return m.byRef
	}
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	var refs []toolRef
	for _, s := range servers {
		for _, t := range s.readyTools() {
			refs = append(refs, toolRef{s.cfg.Name, t.Name})
		}
	}
	byRef := qualify(refs)
	names := make(map[string]toolRef, len(byRef))
	for r, q := range byRef {
		names[q] = r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.names, m.byRef = names, byRef
	return byRef
}

// ServerStatus is a server's state for mcpServerStatus/list.
type ServerStatus struct {
	Name  string
	State State
	// Error says why it failed ("" otherwise).
	Error string
	// HTTP is set for a streamable HTTP server; Origin is its URL's
	// scheme and host; BearerToken says a token is configured.
	HTTP        bool
	Origin      string
	BearerToken bool
	// Info and Capabilities are the server's initialize answer (nil
	// before it started). Tools, Resources and ResourceTemplates are as
	// the server listed them (tools filtered by the configuration), in
	// its own JSON.
	Info              json.RawMessage
	Capabilities      json.RawMessage
	Tools             []NamedJSON
	Resources         []json.RawMessage
	ResourceTemplates []json.RawMessage
}

// NamedJSON is an object and its name.
type NamedJSON struct {
	Name string
	JSON json.RawMessage
}

// Status lists every configured server, by name.
func (m *Manager) Status() []ServerStatus {
	servers := m.sorted()
	out := make([]ServerStatus, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	return out
}

// ResourceServers lists the ready servers that offer resources, by name.
func (m *Manager) ResourceServers() []string {
	var out []string
	for _, s := range m.sorted() {
		s.mu.Lock()
		ok := s.state == StateReady && s.conn != nil && s.info != nil && s.info.Capabilities != nil && s.info.Capabilities.Resources != nil
		s.mu.Unlock()
		if ok {
			out = append(out, s.cfg.Name)
		}
	}
	return out
}
