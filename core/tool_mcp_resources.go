package core

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentd-dev/agentd/core/model"
)

// The model's tools for MCP resources (the reference's names and
// parameters): list a server's resources or resource templates, read
// one. They are offered while a ready server offers resources, and run
// without an item, like reading a file.
const (
	listResourcesTool  = "list_mcp_resources"
	listTemplatesTool  = "list_mcp_resource_templates"
	readResourceTool   = "read_mcp_resource"
	resourceServerDesc = "The MCP server's name, as configured. Leave it out to list every server's."
)

// MCPResources is what the resource tools need of the MCP servers; an
// MCPTools that also implements it (an *mcp.Manager does) gets them.
type MCPResources interface {
	ResourceServers() []string
	ListResources(ctx context.Context, server, cursor string, templates bool) ([]json.RawMessage, string, error)
	ReadResource(ctx context.Context, server, uri string) ([]json.RawMessage, error)
}

func resourceSpec(name, desc string, props map[string]any, required []string) json.RawMessage {
	if required == nil {
		required = []string{}
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "name": name, "description": desc, "strict": false,
		"parameters": map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}})
	return b
}

// resourceToolSpecs are the three resource tools' specs by name, built at
// their first use (a turn with a server that offers resources), not at
// the daemon's start.
var resourceToolSpecs = sync.OnceValue(func() map[string]json.RawMessage {
	return map[string]json.RawMessage{
		listResourcesTool: resourceSpec(listResourcesTool,
			"List the resources the MCP servers offer (files, schemas, documents they can share). Read one with read_mcp_resource.",
			map[string]any{"server": map[string]any{"type": "string", "description": resourceServerDesc},
				"cursor": map[string]any{"type": "string", "description": "The nextCursor of the previous page, with its server."}}, nil),
		listTemplatesTool: resourceSpec(listTemplatesTool,
			"List the resource templates the MCP servers offer: URI patterns with parameters to fill in, then read with read_mcp_resource.",
			map[string]any{"server": map[string]any{"type": "string", "description": resourceServerDesc},
				"cursor": map[string]any{"type": "string", "description": "The nextCursor of the previous page, with its server."}}, nil),
		readResourceTool: resourceSpec(readResourceTool, "Read a resource of an MCP server by its URI.",
			map[string]any{"server": map[string]any{"type": "string", "description": "The MCP server's name, as listed."},
				"uri": map[string]any{"type": "string", "description": "The resource's URI, as listed (or a template filled in)."}},
			[]string{"server", "uri"}),
	}
})

func (s *Session) mcpResources() MCPResources {
	r, _ := s.cfg.MCP.(MCPResources)
	return r
}

// resourceSpecs are offered while some ready server offers resources.
func (s *Session) resourceSpecs() []json.RawMessage {
	r := s.mcpResources()
	if r == nil || len(r.ResourceServers()) == 0 {
		return nil
	}
	var out []json.RawMessage
	for name, spec := range resourceToolSpecs() {
		if !s.dynamicName(name) {
			out = append(out, spec)
		}
	}
	sortSpecs(out)
	return out
}

// runResourceTool runs one of the resource tools; ok is false for any
// other call.
func (s *Session) runResourceTool(ctx context.Context, c *toolCall) (model.ResponseItem, bool) {
	r := s.mcpResources()
	if r == nil || c.custom || c.namespace != "" {
		return model.ResponseItem{}, false
	}
	switch c.name {
	case listResourcesTool, listTemplatesTool, readResourceTool:
	default:
		return model.ResponseItem{}, false
	}
	var args struct {
		Server string `json:"server"`
		Cursor string `json:"cursor"`
		URI    string `json:"uri"`
	}
	if c.args != "" {
		if err := json.Unmarshal([]byte(c.args), &args); err != nil {
			return c.output("err: the arguments must be a JSON object: " + err.Error()), true
		}
	}
	out, err := s.resourceCall(ctx, r, c.name, args.Server, args.Cursor, args.URI)
	if err != nil {
		return c.output(fmt.Sprintf("%s failed: %v", c.name, err)), true
	}
	b, _ := model.MarshalNoEscape(out)
	return c.output(string(b)), true
}

func (s *Session) resourceCall(ctx context.Context, r MCPResources, tool, server, cursor, uri string) (any, error) {
	if tool == readResourceTool {
		if server == "" || uri == "" {
			return nil, fmt.Errorf("server and uri are required")
		}
		contents, err := r.ReadResource(ctx, server, uri)
		return map[string]any{"server": server, "uri": uri, "contents": contents}, err
	}
	templates := tool == listTemplatesTool
	key := "resources"
	if templates {
		key = "resourceTemplates"
	}
	servers := []string{server}
	if server == "" {
		if cursor != "" {
			return nil, fmt.Errorf("a cursor needs its server")
		}
		servers = r.ResourceServers()
	}
	var all []json.RawMessage
	next := ""
	for _, name := range servers {
		items, n, err := r.ListResources(ctx, name, cursor, templates)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			all = append(all, withServer(it, name))
		}
		if server != "" {
			next = n
		}
	}
	if all == nil {
		all = []json.RawMessage{}
	}
	out := map[string]any{key: all}
	if next != "" {
		out["nextCursor"] = next
	}
	return out, nil
}

// withServer adds the server's name to a listed resource.
func withServer(item json.RawMessage, server string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(item, &m) != nil {
		return item
	}
	m["server"] = server
	b, err := model.MarshalNoEscape(m)
	if err != nil {
		return item
	}
	return b
}
