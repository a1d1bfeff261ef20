package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	// Body is the raw body; JSON is it decoded (nil when it is not a JSON
	// object).
	Body []byte
	JSON map[string]any
}

// Model is the body's "model".
func (r Request) Model() string {
	s, _ := r.JSON["model"].(string)
	return s
}

// Input returns the body's "input" items.
func (r Request) Input() []map[string]any {
	raw, _ := r.JSON["input"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, it := range raw {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// MessageTexts returns the text of every message with the given role, in
// order.
func (r Request) MessageTexts(role string) []string {
	var out []string
	for _, it := range r.Input() {
		if it["type"] == "message" && it["role"] == role {
			out = append(out, messageText(it))
		}
	}
	return out
}

// LastUserText is the text of the last user message ("" if none).
func (r Request) LastUserText() string {
	t := r.MessageTexts("user")
	if len(t) == 0 {
		return ""
	}
	return t[len(t)-1]
}

func messageText(it map[string]any) string {
	parts, _ := it["content"].([]any)
	var s string
	for _, p := range parts {
		if m, ok := p.(map[string]any); ok {
			if txt, ok := m["text"].(string); ok {
				s += txt
			}
		}
	}
	return s
}

// ToolOutput returns the output of the function_call_output or
// custom_tool_call_output for callID. A structured output (a list of
// content items) is returned as its JSON text.
func (r Request) ToolOutput(callID string) (string, bool) {
	for _, it := range r.Input() {
		if (it["type"] == "function_call_output" || it["type"] == "custom_tool_call_output") && it["call_id"] == callID {
			if s, ok := it["output"].(string); ok {
				return s, true
			}
			b, _ := json.Marshal(it["output"])
			return string(b), true
		}
	}
	return "", false
}

// ToolNames lists the names (or types, for hosted tools) of the body's
// tools.
func (r Request) ToolNames() []string {
	raw, _ := r.JSON["tools"].([]any)
	var out []string
	for _, t := range raw {
		m, _ := t.(map[string]any)
		if n, ok := m["name"].(string); ok {
			out = append(out, n)
		} else if ty, ok := m["type"].(string); ok {
			out = append(out, ty)
		}
	}
	return out
}

// pairingErrors lists the tool outputs without their call and the calls
// without their output in a request's input.
func pairingErrors(input []map[string]any) []string {
	calls := map[string]string{}
	outputs := map[string]string{}
	for _, it := range input {
		typ, _ := it["type"].(string)
		id, _ := it["call_id"].(string)
		switch typ {
		case "function_call", "custom_tool_call", "local_shell_call":
			if id == "" {
				id, _ = it["id"].(string)
			}
			calls[id] = typ
		case "function_call_output", "custom_tool_call_output":
			outputs[id] = typ
		}
	}
	var errs []string
	for id, typ := range outputs {
		if _, ok := calls[id]; !ok {
			errs = append(errs, fmt.Sprintf("%s for call_id %q has no matching call", typ, id))
		}
	}
	for id, typ := range calls {
		if _, ok := outputs[id]; !ok {
			errs = append(errs, fmt.Sprintf("%s with call_id %q has no output", typ, id))
		}
	}
	sort.Strings(errs)
	return errs
}
