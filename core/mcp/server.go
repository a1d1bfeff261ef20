package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// protocolVersion is the MCP version agentd asks for: the one the
// reference speaks, which servers of every age understand (a server
// answers with the version it prefers).
const protocolVersion = "2025-06-18"

// server is one configured server and its supervisor: the goroutine that
// starts it, waits for it to end, and starts it again.
type server struct {
	m   *Manager
	cfg ServerConfig
	log *zap.Logger

	mu    sync.Mutex
	state State
	err   string
	conn  *conn // while ready
	// What the server said when it last started: kept after it fails,
	// for the status.
	info      *mcp.InitializeResult
	tools     []*mcp.Tool // filtered by the configuration
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	// attempt is closed when the current start has ended, ready or not.
	attempt chan struct{}

	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor returned
}

func newServer(m *Manager, c ServerConfig) *server {
	s := &server{m: m, cfg: c, log: m.log.With(zap.String("mcp_server", c.Name)), attempt: make(chan struct{})}
	if c.Disabled {
		s.state = StateDisabled
		close(s.attempt)
	} else {
		s.state = StateStarting
	}
	return s
}

// start runs the supervisor; the manager's lock is held.
func (s *server) start() {
	if s.cfg.Disabled || s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.run(ctx)
}

// stop ends the supervisor and the server, waiting for them until ctx
// ends.
func (s *server) stop(ctx context.Context) {
	s.m.mu.Lock()
	cancel, done := s.cancel, s.done
	s.m.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("MCP server still stopping at the deadline")
	}
}

// run is the supervisor: start, serve until the server ends, start again
// with backoff. A server that never started is not retried: its
// configuration or environment is wrong, and a reload fixes it.
func (s *server) run(ctx context.Context) {
	defer close(s.done)
	backoff := s.m.opts.RestartBackoff
	failures := 0
	everReady := false
	for {
		s.setState(StateStarting, "")
		c, err := s.connect(ctx)
		if ctx.Err() != nil {
			if c != nil {
				c.close(s.m.opts.StopGrace)
			}
			s.setState(StateStopped, "")
			return
		}
		if err != nil {
			s.log.Warn("MCP server failed to start", zap.Error(err))
			s.setState(StateFailed, err.Error())
			failures++
			if !everReady || failures > maxFailedRestarts {
				return
			}
		} else {
			everReady, failures = true, 0
			readyAt := time.Now()
			s.setReady(c)
			select {
			case <-c.ended:
			case <-ctx.Done():
			}
			s.ending()
			c.close(s.m.opts.StopGrace)
			if ctx.Err() != nil {
				s.setState(StateStopped, "")
				return
			}
			why := c.endReason()
			s.log.Warn("MCP server exited; starting it again", zap.String("reason", why), zap.Duration("backoff", backoff))
			s.setState(StateFailed, "MCP server exited: "+why+"; starting it again")
			if time.Since(readyAt) >= stableAfter {
				backoff = s.m.opts.RestartBackoff
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.setState(StateStopped, "")
			return
		}
		backoff = min(2*backoff, maxRestartBackoff)
	}
}

// setState records a state; a start attempt ends with ready or failed.
func (s *server) setState(st State, cause string) {
	s.mu.Lock()
	prev := s.state
	s.state, s.err = st, cause
	switch st {
	case StateStarting:
		select {
		case <-s.attempt:
			s.attempt = make(chan struct{})
		default:
		}
	default:
		select {
		case <-s.attempt:
		default:
			close(s.attempt)
		}
	}
	s.mu.Unlock()
	if (prev == StateReady) != (st == StateReady) {
		s.m.toolsChanged()
	}
	switch st {
	case StateStarting, StateReady:
		s.m.notify(Update{Server: s.cfg.Name, State: st})
	case StateFailed:
		s.m.notify(Update{Server: s.cfg.Name, State: st, Error: cause})
	}
}

func (s *server) setReady(c *conn) {
	s.mu.Lock()
	s.conn, s.info, s.tools, s.resources, s.templates = c, c.info, c.tools, c.resources, c.templates
	s.mu.Unlock()
	s.log.Info("MCP server ready", zap.Int("tools", len(c.tools)))
	s.setState(StateReady, "")
}

// ending forgets the session of a server that ended and opens a new
// attempt, so that a call arriving while the server is being stopped
// waits for its state (failed, with why) rather than finding it ready
// without a session.
func (s *server) ending() {
	s.mu.Lock()
	s.conn = nil
	select {
	case <-s.attempt:
		s.attempt = make(chan struct{})
	default:
	}
	s.mu.Unlock()
	s.m.toolsChanged()
}

// waitStarted waits for the current start attempt to end.
func (s *server) waitStarted(ctx context.Context) error {
	s.mu.Lock()
	ch := s.attempt
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *server) stateNow() (State, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.err
}

// ready returns the session of a ready server, or nil.
func (s *server) ready() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateReady {
		return nil
	}
	return s.conn
}

// readyTools are the tools of a ready server with a session.
func (s *server) readyTools() []*mcp.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateReady || s.conn == nil {
		return nil
	}
	return s.tools
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.cfg.Name, State: s.state, Error: s.err, HTTP: s.cfg.URL != "", BearerToken: s.cfg.BearerTokenEnvVar != ""}
	if u, err := url.Parse(s.cfg.URL); err == nil && s.cfg.URL != "" {
		st.Origin = u.Scheme + "://" + u.Host
	}
	if s.info != nil {
		st.Info = marshalOrNil(s.info.ServerInfo)
		st.Capabilities = marshalOrNil(s.info.Capabilities)
	}
	if s.state != StateReady {
		return st
	}
	for _, t := range s.tools {
		st.Tools = append(st.Tools, NamedJSON{Name: t.Name, JSON: marshalOrNil(t)})
	}
	for _, r := range s.resources {
		st.Resources = append(st.Resources, marshalOrNil(r))
	}
	for _, r := range s.templates {
		st.ResourceTemplates = append(st.ResourceTemplates, marshalOrNil(r))
	}
	return st
}

func marshalOrNil(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// connect starts the server (or connects to it), initializes the session
// and lists its tools (and resources), within the startup timeout.
func (s *server) connect(ctx context.Context) (*conn, error) {
	timeout := s.cfg.startupTimeout()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &conn{server: s.cfg.Name, calls: map[string]*pendingCall{}, ended: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd", Title: "agentd", Version: s.m.opts.Version}, &mcp.ClientOptions{
		// No roots: agentd offers none. Form elicitations are answered
		// by the user of the call that is running (onElicit).
		Capabilities:                &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ProgressNotificationHandler: c.onProgress,
		ElicitationHandler:          c.onElicit,
	})
	var transport mcp.Transport
	if s.cfg.URL != "" {
		transport = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{
			Transport: headerTransport{headers: httpHeaders(s.cfg, s.m.opts.LookupEnv), base: http.DefaultTransport},
		}}
	} else {
		p, err := startProcess(s.cfg, s.m.opts.LookupEnv, s.log)
		if err != nil {
			return nil, fmt.Errorf("MCP startup failed: %w", err)
		}
		c.proc = p
		transport = &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}
	}
	fail := func(err error) (*conn, error) {
		c.close(s.m.opts.StopGrace)
		if errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("MCP startup failed: timed out after %s (add or adjust `startup_timeout_sec` in [mcp_servers.%s])", formatSeconds(timeout), s.cfg.Name)
		}
		return nil, fmt.Errorf("MCP startup failed: %w", err)
	}
	sess, err := client.Connect(sctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return fail(err)
	}
	c.sess, c.info = sess, sess.InitializeResult()
	go func() {
		_ = sess.Wait()
		close(c.ended)
	}()
	for t, err := range sess.Tools(sctx, nil) {
		if err != nil {
			return fail(fmt.Errorf("listing tools: %w", err))
		}
		if len(c.tools) >= maxListed {
			s.log.Warn("MCP server lists too many tools; the rest are ignored", zap.Int("kept", maxListed))
			break
		}
		if t == nil || t.Name == "" || !s.cfg.offers(t.Name) {
			continue
		}
		c.tools = append(c.tools, t)
	}
	if caps := c.info.Capabilities; caps != nil && caps.Resources != nil {
		c.listResources(sctx, s.log)
	}
	return c, nil
}

// formatSeconds writes a timeout as the reference does: "10 seconds",
// "1.5 seconds".
func formatSeconds(d time.Duration) string {
	return strings.TrimSuffix(fmt.Sprintf("%g", d.Seconds()), ".0") + " seconds"
}

// headerTransport adds the configured headers to every request to a
// streamable HTTP server.
type headerTransport struct {
	headers http.Header
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}
