package threads

import (
	"context"
	"encoding/json"
	"strconv"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
)

// The daemon's MCP servers: one manager (core/mcp), started with the
// thread layer and shared by every thread. Its state changes go to every
// connection as mcpServer/startupStatus/updated (threadId null: the
// servers are the daemon's, not a thread's); a new thread's client also
// gets each server's current state, with the thread's id, after
// thread/started (the reference starts servers per thread and reports
// them that way).

// newMCP creates the manager and starts the configured servers in the
// background.
func (sv *service) newMCP() {
	sv.mcp = mcp.NewManager(sv.config().MCPServers, mcp.Options{
		Log:      sv.log.Named("mcp"),
		Version:  sv.version,
		OnUpdate: sv.mcpUpdated,
	})
	sv.mcp.Start()
	// A reload (SIGHUP, a config write) applies [mcp_servers] at once.
	sv.live.OnReload(func(cfg *config.Config) {
		sv.log.Info("reloading MCP servers", zap.Int("servers", len(cfg.MCPServers)))
		go sv.mcp.Reload(cfg.MCPServers)
	})
}

// mcpUpdated broadcasts a server's state change.
func (sv *service) mcpUpdated(u mcp.Update) {
	n, ok := startupStatus(u.Server, u.State, u.Error, nil)
	if ok {
		sv.s.Broadcast("mcpServer/startupStatus/updated", n)
	}
}

// startupStatus is the notification for a state; ok is false for states
// the notification has no value for (disabled, stopped).
func startupStatus(name string, st mcp.State, cause string, threadID *string) (protocol.McpServerStatusUpdatedNotification, bool) {
	n := protocol.McpServerStatusUpdatedNotification{Name: name, ThreadID: threadID}
	switch st {
	case mcp.StateStarting:
		n.Status = protocol.McpStartupStarting
	case mcp.StateReady:
		n.Status = protocol.McpStartupReady
	case mcp.StateFailed:
		n.Status = protocol.McpStartupFailed
		msg := "MCP client for `" + name + "` failed to start: " + cause
		n.Error = &msg
	default:
		return n, false
	}
	return n, true
}

// mcpStatusAfterStart queues, behind a new thread's thread/started, the
// current state of each enabled server, with the thread's id.
func (sv *service) mcpStatusAfterStart(r *rpc.Request, threadID string) {
	for _, st := range sv.mcp.Status() {
		id := threadID
		if n, ok := startupStatus(st.Name, st.State, st.Error, &id); ok {
			r.Then("mcpServer/startupStatus/updated", n)
		}
	}
}

// requiredMCP waits for the required servers and refuses the thread, as
// the reference does, when one of them did not start.
func (sv *service) requiredMCP(ctx context.Context) error {
	if err := sv.mcp.WaitRequired(ctx); err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "error creating thread: %v", err)
	}
	return nil
}

// mcpServerStatusList lists the configured servers: name, tools (by the
// server's own names), resources, the server's initialize answer, its
// state and why it failed. Paged by an opaque cursor.
func (sv *service) mcpServerStatusList(_ context.Context, _ *rpc.Request, p *protocol.ListMcpServerStatusParams) (*protocol.ListMcpServerStatusResponse, error) {
	all := sv.mcp.Status()
	if p.ServerName != nil {
		var one []mcp.ServerStatus
		for _, st := range all {
			if st.Name == *p.ServerName {
				one = append(one, st)
			}
		}
		all = one
	}
	start := 0
	if p.Cursor != nil {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 || n > len(all) {
			return nil, protocol.InvalidRequest("invalid cursor: %q", protocol.Cut(*p.Cursor))
		}
		start = n
	}
	end := len(all)
	if p.Limit != nil && *p.Limit > 0 && start+int(*p.Limit) < end {
		end = start + int(*p.Limit)
	}
	full := p.Detail == nil || *p.Detail == protocol.McpDetailFull
	out := &protocol.ListMcpServerStatusResponse{Data: protocol.List[protocol.McpServerStatus]{}}
	for _, st := range all[start:end] {
		out.Data = append(out.Data, wireMcpStatus(st, full))
	}
	if end < len(all) {
		next := strconv.Itoa(end)
		out.NextCursor = &next
	}
	return out, nil
}

func wireMcpStatus(st mcp.ServerStatus, full bool) protocol.McpServerStatus {
	w := protocol.McpServerStatus{
		Name: st.Name, AuthStatus: protocol.McpAuthUnsupported, Tools: map[string]protocol.McpTool{},
		Resources: protocol.List[any]{}, ResourceTemplates: protocol.List[any]{},
	}
	if st.BearerToken {
		w.AuthStatus = protocol.McpAuthBearerToken
	}
	if st.Origin != "" {
		origin := st.Origin
		w.HTTPOrigin = &origin
	}
	runtime := connectionStatus(st.State)
	w.RuntimeStatus = &runtime
	if st.State == mcp.StateFailed && st.Error != "" {
		e := st.Error
		w.ToolsError = &e
	}
	if st.Info != nil {
		w.ServerInfo = st.Info
	}
	if st.Capabilities != nil {
		w.ServerCapabilities = st.Capabilities
	}
	for _, t := range st.Tools {
		var tool protocol.McpTool
		if err := json.Unmarshal(t.JSON, &tool); err != nil {
			continue
		}
		w.Tools[t.Name] = tool
	}
	if full {
		for _, r := range st.Resources {
			w.Resources = append(w.Resources, r)
		}
		for _, r := range st.ResourceTemplates {
			w.ResourceTemplates = append(w.ResourceTemplates, r)
		}
	}
	return w
}

func connectionStatus(st mcp.State) protocol.McpServerConnectionStatus {
	switch st {
	case mcp.StateStarting:
		return protocol.McpConnStarting
	case mcp.StateReady:
		return protocol.McpConnConnected
	case mcp.StateFailed:
		return protocol.McpConnFailed
	case mcp.StateDisabled:
		return protocol.McpConnDisabled
	}
	return protocol.McpConnCancelled
}

// mcpReload reads [mcp_servers] again and applies it: removed and changed
// servers stop, new and changed ones start, the others keep running.
func (sv *service) mcpReload(_ context.Context, _ *rpc.Request, _ *protocol.Empty) (*protocol.Empty, error) {
	if err := sv.reloadMCP(); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternalError, "failed to reload config: %v", err)
	}
	return &protocol.Empty{}, nil
}

func (sv *service) reloadMCP() error {
	servers, warnings, err := sv.config().ReloadMCPServers()
	if err != nil {
		return err
	}
	for _, w := range warnings {
		sv.log.Warn(w.Summary)
	}
	sv.log.Info("reloading MCP servers", zap.Int("servers", len(servers)))
	sv.mcp.Reload(servers)
	return nil
}

// knownMCP refuses a server name that is not configured, naming it cut
// (the manager's own errors repeat the name whole).
func (sv *service) knownMCP(name string) error {
	for _, st := range sv.mcp.Status() {
		if st.Name == name {
			return nil
		}
	}
	return protocol.Errorf(protocol.CodeInternalError, "unknown MCP server `%s`", protocol.Cut(name))
}

// mcpResourceRead reads a server's resource for a client.
func (sv *service) mcpResourceRead(ctx context.Context, _ *rpc.Request, p *protocol.McpResourceReadParams) (*protocol.McpResourceReadResponse, error) {
	if err := sv.knownMCP(p.Server); err != nil {
		return nil, err
	}
	contents, err := sv.mcp.ReadResource(ctx, p.Server, p.URI)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternalError, "%v", err)
	}
	out := &protocol.McpResourceReadResponse{Contents: make(protocol.List[any], 0, len(contents))}
	for _, c := range contents {
		out.Contents = append(out.Contents, c)
	}
	return out, nil
}

// mcpToolCall runs a server's tool for a client, in a loaded thread's
// name (the reference's check); no item is made, the result is the
// answer.
func (sv *service) mcpToolCall(ctx context.Context, _ *rpc.Request, p *protocol.McpServerToolCallParams) (*protocol.McpServerToolCallResponse, error) {
	if sv.threads.get(p.ThreadID) == nil {
		return nil, protocol.InvalidRequest("thread not found: %s", protocol.Cut(p.ThreadID))
	}
	if err := sv.knownMCP(p.Server); err != nil {
		return nil, err
	}
	args := json.RawMessage("{}")
	if p.Arguments != nil {
		b, err := json.Marshal(p.Arguments)
		if err != nil {
			return nil, protocol.InvalidRequest("invalid arguments: %v", err)
		}
		args = b
	}
	res, err := sv.mcp.Call(ctx, p.Server, p.Tool, args, mcp.CallHooks{})
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternalError, "tool call failed for `%s/%s`: %v", p.Server, protocol.Cut(p.Tool), err)
	}
	out := &protocol.McpServerToolCallResponse{Content: make(protocol.List[any], 0, len(res.Content))}
	for _, c := range res.Content {
		out.Content = append(out.Content, c)
	}
	if res.StructuredContent != nil {
		out.StructuredContent = res.StructuredContent
	}
	if res.Meta != nil {
		out.Meta = res.Meta
	}
	isErr := res.IsError
	out.IsError = &isErr
	return out, nil
}
