package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// conn is a started server's session.
type conn struct {
	server string
	sess   *mcp.ClientSession
	proc   *process // nil for an HTTP server
	info   *mcp.InitializeResult

	tools     []*mcp.Tool
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate

	// ended is closed when the session ends (the server exited or closed
	// the connection, or we closed it).
	ended chan struct{}

	mu     sync.Mutex
	calls  map[string]*pendingCall // by progress token
	next   uint64
	closed bool
}

// pendingCall routes a call's progress notifications and elicitations
// until it returns.
type pendingCall struct {
	mu    sync.Mutex
	done  bool
	hooks CallHooks
	ctx   context.Context // the call's, with its timeout
	seq   uint64
}

// CallHooks are how a running call reaches its caller.
type CallHooks struct {
	// Progress gets the server's progress notifications.
	Progress func(Progress)
	// Elicit asks the user for what the server asks (elicitation/create)
	// while the call runs; nil declines every request.
	Elicit func(ctx context.Context, e Elicitation) ElicitResult
}

// Elicitation is a server's request for input from the user (form mode).
type Elicitation struct {
	Message         string
	RequestedSchema json.RawMessage
	Meta            json.RawMessage
}

// ElicitResult is the user's answer: accept (with Content), decline or
// cancel.
type ElicitResult struct {
	Action  string
	Content json.RawMessage
}

// Progress is a progress notification of a running call.
type Progress struct {
	Progress, Total float64
	Message         string
}

// onProgress delivers a progress notification to its call. The SDK
// handles notifications in the order they arrive, on one goroutine, but
// apart from responses: one that arrives after its call returned is
// dropped, so that progress never follows the call's end.
func (c *conn) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token := fmt.Sprint(req.Params.ProgressToken)
	c.mu.Lock()
	pc := c.calls[token]
	c.mu.Unlock()
	if pc == nil {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !pc.done && pc.hooks.Progress != nil {
		pc.hooks.Progress(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
}

// onElicit answers a server's elicitation/create. MCP does not say which
// call a request belongs to over stdio: it goes to the call of this
// server that started last and is still running; with none (or for a mode
// other than a form) it is declined at once, never left waiting. The
// call's timeout bounds the wait for the user.
func (c *conn) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	decline := &mcp.ElicitResult{Action: "decline"}
	if mode := req.Params.Mode; mode != "" && mode != "form" {
		return decline, nil
	}
	c.mu.Lock()
	var pc *pendingCall
	for _, x := range c.calls {
		if x.hooks.Elicit != nil && (pc == nil || x.seq > pc.seq) {
			pc = x
		}
	}
	c.mu.Unlock()
	if pc == nil {
		return decline, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(pc.ctx, cancel)
	defer stop()
	e := Elicitation{Message: req.Params.Message, RequestedSchema: marshalOrNil(req.Params.RequestedSchema)}
	if len(req.Params.Meta) > 0 {
		e.Meta = marshalOrNil(req.Params.Meta)
	}
	ans := pc.hooks.Elicit(ctx, e)
	res := &mcp.ElicitResult{Action: ans.Action}
	switch ans.Action {
	case "accept":
		var content map[string]any
		if len(ans.Content) > 0 && json.Unmarshal(ans.Content, &content) == nil {
			res.Content = content
		}
	case "decline", "cancel":
	default:
		res.Action = "decline"
	}
	return res, nil
}

func (c *conn) register(ctx context.Context, hooks CallHooks) (string, *pendingCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	token := "agentd-" + strconv.FormatUint(c.next, 10)
	pc := &pendingCall{hooks: hooks, ctx: ctx, seq: c.next}
	c.calls[token] = pc
	return token, pc
}

func (c *conn) unregister(token string, pc *pendingCall) {
	c.mu.Lock()
	delete(c.calls, token)
	c.mu.Unlock()
	pc.mu.Lock()
	pc.done = true
	pc.mu.Unlock()
}

func (c *conn) listResources(ctx context.Context, log *zap.Logger) {
	for r, err := range c.sess.Resources(ctx, nil) {
		if err != nil {
			log.Warn("MCP server failed to list its resources", zap.Error(err))
			break
		}
		if len(c.resources) >= maxListed {
			break
		}
		c.resources = append(c.resources, r)
	}
	for r, err := range c.sess.ResourceTemplates(ctx, nil) {
		if err != nil {
			log.Warn("MCP server failed to list its resource templates", zap.Error(err))
			break
		}
		if len(c.templates) >= maxListed {
			break
		}
		c.templates = append(c.templates, r)
	}
}

// close ends the session and, for a stdio server, the process group.
func (c *conn) close(grace time.Duration) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	if c.sess != nil {
		_ = c.sess.Close()
	}
	if c.proc != nil {
		c.proc.stop(grace)
	}
}

// endReason says why a session ended on its own (call after close).
func (c *conn) endReason() string {
	if c.proc != nil {
		return c.proc.exitStatus()
	}
	return "the server closed the connection"
}

// CallResult is a tool's answer, its parts in the server's own JSON.
type CallResult struct {
	Content           []json.RawMessage
	StructuredContent json.RawMessage // nil when absent
	Meta              json.RawMessage // nil when absent
	IsError           bool
}

// Call runs a server's tool with args (a JSON object; empty means {}),
// within the server's tool timeout. hooks get the server's progress
// notifications and elicitations until Call returns. When ctx ends the
// call is cancelled (the server is sent notifications/cancelled) and
// ctx's error returned.
func (m *Manager) Call(ctx context.Context, server, tool string, args json.RawMessage, hooks CallHooks) (*CallResult, error) {
	if s := m.server(server); s != nil && !s.cfg.offers(tool) {
		return nil, fmt.Errorf("tool `%s` of MCP server `%s` is disabled by the configuration", tool, server)
	}
	// A server still starting (or starting again) is waited for, within
	// its startup timeout.
	s, c, err := m.session(ctx, server)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	timeout := s.cfg.toolTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	token, pc := c.register(cctx, hooks)
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(token)
	res, err := c.sess.CallTool(cctx, params)
	c.unregister(token, pc)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("timed out awaiting tools/call after %s", timeout)
		s.log.Warn("MCP tool call failed", zap.String("tool", tool), zap.Error(err))
		return nil, err
	default:
		s.log.Warn("MCP tool call failed", zap.String("tool", tool), zap.Error(err))
		return nil, err
	}
	out := &CallResult{IsError: res.IsError, StructuredContent: marshalOrNil(res.StructuredContent)}
	if len(res.Meta) > 0 {
		out.Meta = marshalOrNil(res.Meta)
	}
	for _, part := range res.Content {
		if b := marshalOrNil(part); b != nil {
			out.Content = append(out.Content, b)
		}
	}
	return out, nil
}

// session returns the session of a ready server, waiting for one still
// starting, or an error naming the server and its state.
func (m *Manager) session(ctx context.Context, server string) (*server, *conn, error) {
	s := m.server(server)
	if s == nil {
		return nil, nil, fmt.Errorf("unknown MCP server `%s`", server)
	}
	if err := s.waitStarted(ctx); err != nil {
		return nil, nil, err
	}
	c := s.ready()
	if c == nil {
		st, cause := s.stateNow()
		if cause != "" {
			return nil, nil, fmt.Errorf("MCP server `%s` is %s: %s", server, st, cause)
		}
		return nil, nil, fmt.Errorf("MCP server `%s` is %s", server, st)
	}
	return s, c, nil
}

// ReadResource reads a server's resource: its contents in the server's
// JSON, within the server's tool timeout.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) ([]json.RawMessage, error) {
	s, c, err := m.session(ctx, server)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.toolTimeout())
	defer cancel()
	res, err := c.sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("reading %s from MCP server `%s`: %w", uri, server, err)
	}
	out := make([]json.RawMessage, 0, len(res.Contents))
	for _, rc := range res.Contents {
		if b := marshalOrNil(rc); b != nil {
			out = append(out, b)
		}
	}
	return out, nil
}

// ListResources lists one page of a server's resources (templates, with
// templates set), from cursor ("" for the first); next is "" on the last
// page.
func (m *Manager) ListResources(ctx context.Context, server, cursor string, templates bool) (items []json.RawMessage, next string, err error) {
	s, c, err := m.session(ctx, server)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.toolTimeout())
	defer cancel()
	if templates {
		res, err := c.sess.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", fmt.Errorf("listing the resource templates of MCP server `%s`: %w", server, err)
		}
		for _, r := range res.ResourceTemplates {
			items = append(items, marshalOrNil(r))
		}
		return items, res.NextCursor, nil
	}
	res, err := c.sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
	if err != nil {
		return nil, "", fmt.Errorf("listing the resources of MCP server `%s`: %w", server, err)
	}
	for _, r := range res.Resources {
		items = append(items, marshalOrNil(r))
	}
	return items, res.NextCursor, nil
}
