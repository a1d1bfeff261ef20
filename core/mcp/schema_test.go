package mcp

import (
	"encoding/json"
	"testing"
)

func TestSanitizeSchema(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"kept", `{"type":"object","properties":{"text":{"type":"string","description":"d"}},"required":["text"]}`,
			`{"properties":{"text":{"description":"d","type":"string"}},"required":["text"],"type":"object"}`},
		{"no properties", `{"type":"object"}`, `{"properties":{},"type":"object"}`},
		{"no type", `{"properties":{"n":{"minimum":1}}}`, `{"properties":{"n":{"minimum":1,"type":"number"}},"type":"object"}`},
		{"array without items", `{"type":"object","properties":{"xs":{"type":"array"}}}`,
			`{"properties":{"xs":{"items":{"type":"string"},"type":"array"}},"type":"object"}`},
		{"boolean sub-schema", `{"type":"object","properties":{"any":true}}`, `{"properties":{"any":{"type":"string"}},"type":"object"}`},
		{"nullable type list", `{"type":"object","properties":{"o":{"type":["object","null"]}}}`,
			`{"properties":{"o":{"properties":{},"type":["object","null"]}},"type":"object"}`},
		{"anyOf needs no type", `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"items":{}}]}}}`,
			`{"properties":{"v":{"anyOf":[{"type":"string"},{"items":{"type":"string"},"type":"array"}]}},"type":"object"}`},
		{"not an object schema", `{"type":"string"}`, `{"type":"object","properties":{}}`},
		{"not a schema", `"garbage"`, `{"type":"object","properties":{}}`},
		{"null", `null`, `{"type":"object","properties":{}}`},
	}
	for _, c := range cases {
		var in any
		if err := json.Unmarshal([]byte(c.in), &in); err != nil {
			t.Fatal(err)
		}
		if got := string(sanitizeSchema(in)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// A schema nested past the depth bound is cut, not walked forever.
func TestSanitizeSchemaDepth(t *testing.T) {
	var node any = map[string]any{"type": "string"}
	for range 1000 {
		node = map[string]any{"type": "object", "properties": map[string]any{"a": node}}
	}
	out := sanitizeSchema(node)
	if !json.Valid(out) {
		t.Fatalf("invalid JSON")
	}
	if len(out) > 4096 {
		t.Errorf("schema not cut at depth %d: %d bytes", maxSchemaDepth, len(out))
	}
}
