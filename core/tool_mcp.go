package core

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/tools/exec"
)

// MCPTools is what the core needs of the daemon's MCP servers (an
// *mcp.Manager): their tools, and a way to call them.
type MCPTools interface {
	// Tools lists the tools to offer, waiting for servers still
	// starting until ctx ends.
	Tools(ctx context.Context) []mcp.Tool
	// Lookup finds the tool a call names (flat or namespaced).
	Lookup(name, namespace string) (mcp.Tool, bool)
	// Call runs a tool; hooks get the server's progress reports and
	// elicitations until it returns.
	Call(ctx context.Context, server, tool string, args json.RawMessage, hooks mcp.CallHooks) (*mcp.CallResult, error)
}

// mcpSpecs are the MCP tools offered for the turn's next request, minus
// any a client's dynamic tool already names (the dynamic tool takes the
// call).
func (s *Session) mcpSpecs(t *turn) []json.RawMessage {
	if s.cfg.MCP == nil {
		return nil
	}
	var out []json.RawMessage
	for _, tool := range s.cfg.MCP.Tools(t.ctx) {
		if s.dynamicName(tool.Qualified) {
			continue
		}
		out = append(out, tool.Spec())
	}
	return append(out, s.resourceSpecs()...)
}

// sortSpecs orders tool specs by name, so that requests are stable.
func sortSpecs(specs []json.RawMessage) {
	name := func(b json.RawMessage) string {
		var f struct{ Name string }
		_ = json.Unmarshal(b, &f)
		return f.Name
	}
	slices.SortFunc(specs, func(a, b json.RawMessage) int { return strings.Compare(name(a), name(b)) })
}

func (s *Session) dynamicName(name string) bool {
	for _, d := range s.cfg.DynamicTools {
		if d.qualifiedName() == name {
			return true
		}
	}
	return false
}

// mcpTool finds the MCP tool a call names.
func (s *Session) mcpTool(c *toolCall) (mcp.Tool, bool) {
	if s.cfg.MCP == nil || c.custom || c.item.Type() != model.TypeFunctionCall {
		return mcp.Tool{}, false
	}
	return s.cfg.MCP.Lookup(c.name, c.namespace)
}

// runMCPTool runs one call as an McpToolCallItem: started, the server's
// progress, completed with the result or the error. The model gets the
// content, cut to the output limit.
func (s *Session) runMCPTool(ctx context.Context, t *turn, c *toolCall, tool mcp.Tool) model.ResponseItem {
	args, err := mcpArguments(c.args)
	if err != nil {
		// As the reference: no item, the model is told.
		return c.output("err: " + err.Error())
	}
	item := McpToolCallItem{ID: c.callID, Server: tool.Server, Tool: tool.Name, Arguments: args, Status: StatusInProgress, ReadOnly: tool.ReadOnly}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	start := s.cfg.Now()
	if refusal, ok := s.approveMCP(ctx, t, c, tool, args); !ok {
		if ctx.Err() != nil {
			return c.output("aborted: the turn was interrupted before the user answered")
		}
		dur := s.cfg.Now().Sub(start).Milliseconds()
		item.Status, item.Error, item.DurationMs = StatusFailed, refusal, &dur
		s.emit(t.subID, t.id, ItemCompleted{Item: item})
		return mcpOutput(c, s.cfg.Now().Sub(start), []model.ContentPart{{Type: "input_text", Text: refusal}})
	}
	res, err := s.cfg.MCP.Call(ctx, tool.Server, tool.Name, args, mcp.CallHooks{
		Progress: func(p mcp.Progress) {
			s.emit(t.subID, t.id, McpToolCallProgress{ItemID: c.callID, Message: progressMessage(p)})
		},
		Elicit: func(ctx context.Context, e mcp.Elicitation) mcp.ElicitResult {
			return s.elicit(ctx, t, tool.Server, e)
		},
	})
	elapsed := s.cfg.Now().Sub(start)
	if ctx.Err() != nil {
		// Interrupted: like the other tools, the item is left as it
		// was and the turn's end settles it.
		return c.output("aborted: the turn was interrupted before the tool answered")
	}
	dur := elapsed.Milliseconds()
	item.DurationMs = &dur
	if err != nil {
		item.Status = StatusFailed
		item.Error = fmt.Sprintf("tool call error: tool call failed for `%s/%s`: %v", tool.Server, tool.Name, err)
		s.emit(t.subID, t.id, ItemCompleted{Item: item})
		return mcpOutput(c, elapsed, []model.ContentPart{{Type: "input_text", Text: item.Error}})
	}
	item.Result = &McpToolResult{Content: res.Content, StructuredContent: res.StructuredContent, Meta: res.Meta}
	item.Status = StatusCompleted
	if res.IsError {
		item.Status = StatusFailed
	}
	s.emit(t.subID, t.id, ItemCompleted{Item: item})
	return mcpOutput(c, elapsed, mcpContentParts(res.Content, c.maxTokens))
}

// approveMCP asks the user before a tool that is not marked read-only
// runs, unless the policy never asks or the user allowed the tool for the
// session. It returns false, with what the model is told, when the call
// must not run.
func (s *Session) approveMCP(ctx context.Context, t *turn, c *toolCall, tool mcp.Tool, args json.RawMessage) (string, bool) {
	if (tool.ReadOnly != nil && *tool.ReadOnly) || t.tc.ApprovalPolicy == policy.ApprovalNever {
		return "", true
	}
	key := tool.Server + "/" + tool.Name
	if _, ok := s.mcpAllowed.Load(key); ok {
		return "", true
	}
	ch := t.await(c.callID)
	s.emit(t.subID, t.id, McpToolApprovalRequest{CallID: c.callID, Server: tool.Server, Tool: tool.Name, Description: tool.Description, Arguments: args})
	select {
	case v := <-ch:
		a := v.(OpMcpElicitationAnswer)
		switch {
		case a.Err != "":
			return "the MCP tool call was not run: the approval request failed: " + a.Err, false
		case a.Action == "accept":
			if persist := persistOf(a.Meta); persist == "session" || persist == "always" {
				s.mcpAllowed.Store(key, true)
			}
			return "", true
		case a.Action == "cancel":
			return "the MCP tool call was not run: the user cancelled it", false
		}
		return "the MCP tool call was not run: the user declined it", false
	case <-ctx.Done():
		t.forget(c.callID)
		return "", false
	}
}

// persistOf reads how long an approval lasts from the client's _meta.
func persistOf(meta json.RawMessage) string {
	var m struct {
		Persist string `json:"persist"`
	}
	_ = json.Unmarshal(meta, &m)
	return m.Persist
}

// elicit asks the user what an MCP server asks while its tool runs for
// the turn. Under the never policy it is declined. It is cancelled
// unasked when the turn is already ending (the call's answer may still be
// on its way), and withdrawn, cancelled, when the call or the turn ends
// first: a server never waits on nobody, and no request is left on a turn
// that is over.
func (s *Session) elicit(ctx context.Context, t *turn, server string, e mcp.Elicitation) mcp.ElicitResult {
	if t.tc.ApprovalPolicy == policy.ApprovalNever {
		return mcp.ElicitResult{Action: "decline"}
	}
	id := "elicitation-" + newItemID()
	ch, open := t.awaitOpen(id)
	if !open {
		return mcp.ElicitResult{Action: "cancel"}
	}
	s.emit(t.subID, t.id, McpElicitationRequest{CallID: id, Server: server, Message: e.Message, RequestedSchema: e.RequestedSchema, Meta: e.Meta})
	select {
	case v := <-ch:
		a := v.(OpMcpElicitationAnswer)
		if a.Err != "" {
			return mcp.ElicitResult{Action: "decline"}
		}
		return mcp.ElicitResult{Action: a.Action, Content: a.Content}
	case <-ctx.Done():
		t.forget(id)
		s.emit(t.subID, t.id, McpElicitationEnded{CallID: id})
		return mcp.ElicitResult{Action: "cancel"}
	}
}

// mcpArguments checks the model's arguments: a JSON object, or nothing.
func mcpArguments(raw string) (json.RawMessage, error) {
	if strings.TrimSpace(raw) == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return nil, fmt.Errorf("the arguments must be a JSON object: %v", err)
	}
	return json.RawMessage(raw), nil
}

func progressMessage(p mcp.Progress) string {
	switch {
	case p.Message != "":
		return p.Message
	case p.Total > 0:
		return fmt.Sprintf("%g/%g", p.Progress, p.Total)
	}
	return fmt.Sprintf("%g", p.Progress)
}

// mcpOutput is the call's output as the reference gives it to the model:
// the wall time, then the content.
func mcpOutput(c *toolCall, elapsed time.Duration, parts []model.ContentPart) model.ResponseItem {
	head := model.ContentPart{Type: "input_text", Text: fmt.Sprintf("Wall time: %.4f seconds\nOutput:", elapsed.Seconds())}
	return model.NewFunctionCallOutput("", c.callID, append([]model.ContentPart{head}, parts...))
}

// mcpContentParts turns MCP content into what the model reads: text as
// text, images as images, embedded text resources as their text, and a
// line for what it cannot read. The text is cut to maxTokens in all (0:
// the default tool output limit).
func mcpContentParts(content []json.RawMessage, maxTokens int) []model.ContentPart {
	if maxTokens <= 0 {
		maxTokens = exec.DefaultMaxOutputTokens
	}
	budget := newTextBudget(maxTokens)
	var parts []model.ContentPart
	addText := func(text string) {
		if text, ok := budget.cut(text); ok {
			parts = append(parts, model.ContentPart{Type: "input_text", Text: text})
		}
	}
	for _, raw := range content {
		var c struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			Resource *struct {
				URI      string  `json:"uri"`
				MimeType string  `json:"mimeType"`
				Text     *string `json:"text"`
			} `json:"resource"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			continue
		}
		switch c.Type {
		case "text":
			addText(c.Text)
		case "image":
			parts = append(parts, model.ContentPart{Type: "input_image", ImageURL: "data:" + c.MimeType + ";base64," + c.Data})
		case "audio":
			addText("audio content omitted because it could not be processed")
		case "resource":
			switch {
			case c.Resource == nil:
			case c.Resource.Text != nil:
				addText(*c.Resource.Text)
			default:
				addText(fmt.Sprintf("binary resource %s (%s) omitted", c.Resource.URI, c.Resource.MimeType))
			}
		case "resource_link":
			addText(fmt.Sprintf("resource link: %s (%s)", c.Name, c.URI))
		default:
			addText(string(raw))
		}
	}
	return parts
}
