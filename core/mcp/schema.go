package mcp

import (
	"encoding/json"
)

// maxSchemaDepth bounds how deep a tool's schema is walked; what lies
// deeper becomes a plain string schema (a server's schema is untrusted).
const maxSchemaDepth = 32

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// sanitizeSchema turns a tool's input schema, as the server sent it, into
// parameters the Responses API takes: an object schema, every sub-schema
// with a type (inferred from its keywords when missing), objects with
// properties and arrays with items. Anything that is not an object schema
// at the top becomes an empty object schema: the model can still call the
// tool, with no arguments.
func sanitizeSchema(raw any) json.RawMessage {
	top, ok := raw.(map[string]any)
	if !ok {
		return emptyObjectSchema
	}
	if t, ok := top["type"]; ok && t != "object" {
		return emptyObjectSchema
	}
	clean := sanitizeNode(top, 0).(map[string]any)
	clean["type"] = "object"
	b, err := json.Marshal(clean)
	if err != nil {
		return emptyObjectSchema
	}
	return b
}

func sanitizeNode(v any, depth int) any {
	if depth > maxSchemaDepth {
		return map[string]any{"type": "string"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		// true, false or garbage: a schema the API will take.
		return map[string]any{"type": "string"}
	}
	out := make(map[string]any, len(m)+1)
	for k, x := range m {
		out[k] = x
	}
	if _, ok := out["type"]; !ok && !combined(out) {
		out["type"] = inferType(out)
	}
	if hasType(out, "object") {
		props, _ := out["properties"].(map[string]any)
		clean := make(map[string]any, len(props))
		for name, p := range props {
			clean[name] = sanitizeNode(p, depth+1)
		}
		out["properties"] = clean
		if ap, ok := out["additionalProperties"].(map[string]any); ok {
			out["additionalProperties"] = sanitizeNode(ap, depth+1)
		}
	}
	if hasType(out, "array") {
		switch items := out["items"].(type) {
		case map[string]any:
			out["items"] = sanitizeNode(items, depth+1)
		case []any:
			out["items"] = sanitizeList(items, depth)
		default:
			out["items"] = map[string]any{"type": "string"}
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := out[k].([]any); ok {
			out[k] = sanitizeList(list, depth)
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := out[k].(map[string]any); ok {
			clean := make(map[string]any, len(defs))
			for name, d := range defs {
				clean[name] = sanitizeNode(d, depth+1)
			}
			out[k] = clean
		}
	}
	return out
}

func sanitizeList(list []any, depth int) []any {
	out := make([]any, len(list))
	for i, x := range list {
		out[i] = sanitizeNode(x, depth+1)
	}
	return out
}

// combined reports whether a schema is defined by composition or
// reference, and so needs no type of its own.
func combined(m map[string]any) bool {
	for _, k := range []string{"anyOf", "oneOf", "allOf", "$ref"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// inferType guesses a missing type from the keywords present.
func inferType(m map[string]any) string {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties"):
		return "object"
	case has("items", "prefixItems", "minItems", "maxItems"):
		return "array"
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number"
	}
	return "string"
}

// hasType reports whether a schema's type is t or a list holding t.
func hasType(m map[string]any, t string) bool {
	switch v := m["type"].(type) {
	case string:
		return v == t
	case []any:
		for _, x := range v {
			if x == t {
				return true
			}
		}
	}
	return false
}
