package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/agentd-dev/agentd/core/model"
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
	// Call runs a tool; progress gets the server's progress reports
	// until it returns.
	Call(ctx context.Context, server, tool string, args json.RawMessage, progress func(mcp.Progress)) (*mcp.CallResult, error)
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
	return out
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
	res, err := s.cfg.MCP.Call(ctx, tool.Server, tool.Name, args, func(p mcp.Progress) {
		s.emit(t.subID, t.id, McpToolCallProgress{ItemID: c.callID, Message: progressMessage(p)})
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
	budget := maxTokens * 4 // bytes, about four a token
	var parts []model.ContentPart
	addText := func(text string) {
		if budget <= 0 {
			return
		}
		if len(text) > budget {
			text = exec.TruncateForModel(text, budget/4)
		}
		budget -= len(text)
		parts = append(parts, model.ContentPart{Type: "input_text", Text: text})
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
