// Package schema generates agentd's JSON Schema bundles from the Go types of
// package protocol: one file per variant (stable, experimental) laid out like
// the reference server's bundles, with ClientRequest, ClientNotification,
// ServerRequest and ServerNotification as a oneOf over methods and every type
// under "definitions". The stable bundle leaves out experimental methods,
// fields and union variants. Both leave out the client requests agentd
// knows by name only (protocol.MethodInfo.NameOnly). The checked-in files
// are regenerated with `go generate ./schema` (the Makefile's schema
// target).
package schema

//go:generate go run ./gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/agentd-dev/agentd/protocol"
)

// FileName returns the bundle's file name.
func FileName(experimental bool) string {
	if experimental {
		return "experimental.schemas.json"
	}
	return "stable.schemas.json"
}

// Write writes the stable or experimental bundle into dir.
func Write(dir string, experimental bool) error {
	b, err := Bundle(experimental)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FileName(experimental)), b, 0o644)
}

// Bundle returns the stable or experimental bundle as indented JSON. The
// output depends only on the protocol types, so it is deterministic.
func Bundle(experimental bool) ([]byte, error) {
	g := &gen{exp: experimental, defs: map[string]any{}, names: map[string]reflect.Type{}}
	g.defs["ClientRequest"] = g.methods(protocol.ClientRequest, "Request", true)
	g.defs["ClientNotification"] = g.methods(protocol.ClientNotification, "Notification", false)
	g.defs["ServerRequest"] = g.methods(protocol.ServerRequest, "Request", true)
	sn := g.methods(protocol.ServerNotification, "Notification", false)
	sn["properties"] = map[string]any{"emittedAtMs": map[string]any{
		"description": "Unix time in milliseconds when the server emitted the notification.",
		"type":        "integer", "format": "int64",
	}}
	g.defs["ServerNotification"] = sn
	if g.err != nil {
		return nil, g.err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(map[string]any{
		"$schema":     "http://json-schema.org/draft-07/schema#",
		"title":       "AgentdAppServerProtocol",
		"type":        "object",
		"definitions": g.defs,
	})
	return buf.Bytes(), err
}

type gen struct {
	exp   bool
	defs  map[string]any
	names map[string]reflect.Type // definition name → Go type, to catch clashes
	err   error
}

// methods builds the oneOf over the methods of a kind.
func (g *gen) methods(kind protocol.MethodKind, suffix string, withID bool) map[string]any {
	var branches []any
	for _, m := range protocol.Methods(kind) {
		if (m.Experimental && !g.exp) || m.NameOnly {
			continue // a method known by name only has no types to describe
		}
		props := map[string]any{"method": map[string]any{"type": "string", "enum": []any{m.Method}}}
		required := []any{"method"}
		if withID {
			props["id"] = map[string]any{"$ref": "#/definitions/RequestID"}
			required = append(required, "id")
			g.site(protocol.ShapeOf(reflect.TypeFor[protocol.RequestID]()))
		}
		if m.Params != nil {
			props["params"] = g.site(protocol.ShapeOf(m.Params))
			required = append(required, "params")
		} else if withID {
			props["params"] = map[string]any{"type": "null"}
		}
		if m.Result != nil {
			g.site(protocol.ShapeOf(m.Result)) // results are definitions too
		}
		branches = append(branches, map[string]any{
			"title":      title(m.Method) + suffix,
			"type":       "object",
			"properties": props,
			"required":   sorted(required),
		})
	}
	return map[string]any{"oneOf": branches}
}

// title turns "thread/start" into "ThreadStart".
func title(method string) string {
	var b strings.Builder
	up := true
	for _, r := range method {
		if r == '/' || r == '_' {
			up = true
			continue
		}
		if up {
			r, up = unicode.ToUpper(r), false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// site returns the schema for a use of s: a $ref for named protocol types
// (whose definition it adds), the schema itself otherwise.
func (g *gen) site(s *protocol.Shape) map[string]any {
	if s.Kind == protocol.KindPointer {
		return nullable(g.site(s.Elem))
	}
	name := s.Type.Name()
	if s.Type.PkgPath() != reflect.TypeFor[protocol.Shape]().PkgPath() || name == "" || strings.Contains(name, "[") {
		return g.body(s)
	}
	if prev, ok := g.names[name]; ok {
		if prev != s.Type {
			g.fail(fmt.Errorf("schema: two types named %s", name))
		}
	} else {
		g.names[name] = s.Type
		g.defs[name] = map[string]any{} // placeholder against recursion
		body := g.body(s)
		body["title"] = name
		g.defs[name] = body
	}
	return map[string]any{"$ref": "#/definitions/" + name}
}

func (g *gen) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// body returns the schema of s itself.
func (g *gen) body(s *protocol.Shape) map[string]any {
	switch s.Kind {
	case protocol.KindAny:
		return map[string]any{}
	case protocol.KindString:
		return map[string]any{"type": "string"}
	case protocol.KindBool:
		return map[string]any{"type": "boolean"}
	case protocol.KindInt:
		return map[string]any{"type": "integer", "format": intFormat("int", s.Bits)}
	case protocol.KindUint:
		return map[string]any{"type": "integer", "format": intFormat("uint", s.Bits), "minimum": 0}
	case protocol.KindFloat:
		return map[string]any{"type": "number", "format": "double"}
	case protocol.KindSlice:
		return map[string]any{"type": "array", "items": g.site(s.Elem)}
	case protocol.KindMap:
		return map[string]any{"type": "object", "additionalProperties": g.site(s.Elem)}
	case protocol.KindPointer:
		return nullable(g.site(s.Elem))
	case protocol.KindEnum:
		return map[string]any{"type": "string", "enum": strs(s.Values)}
	case protocol.KindStruct:
		return g.object(s.Fields, nil)
	case protocol.KindTagged:
		var branches []any
		for _, v := range s.Variants {
			if v.Experimental && !g.exp {
				continue
			}
			o := g.object(append(append([]protocol.Field{}, v.Shape.Fields...), s.Fields...), []any{"type"})
			o["properties"].(map[string]any)["type"] = map[string]any{"type": "string", "enum": []any{v.Name}}
			o["title"] = upperFirst(v.Name) + s.Type.Name()
			branches = append(branches, o)
		}
		return map[string]any{"oneOf": branches}
	case protocol.KindKeyed:
		var branches []any
		if s.Unit != nil {
			branches = append(branches, g.body(s.Unit))
		}
		for _, v := range s.Variants {
			if v.Experimental && !g.exp {
				continue
			}
			branches = append(branches, map[string]any{
				"title":                upperFirst(v.Name) + s.Type.Name(),
				"type":                 "object",
				"properties":           map[string]any{v.Name: g.site(v.Shape)},
				"required":             []any{v.Name},
				"additionalProperties": false,
			})
		}
		return map[string]any{"oneOf": branches}
	case protocol.KindCustom:
		out := map[string]any{}
		for k, v := range s.Schema {
			out[k] = v
		}
		return out
	}
	g.fail(fmt.Errorf("schema: no schema for %v", s.Type))
	return map[string]any{}
}

// object builds an object schema from fields; required starts the required list.
func (g *gen) object(fields []protocol.Field, required []any) map[string]any {
	props := map[string]any{}
	for _, f := range fields {
		if f.Experimental && !g.exp {
			continue
		}
		fs := g.site(f.Shape)
		if f.Nullable && f.Shape.Kind != protocol.KindPointer {
			fs = nullable(fs)
		}
		props[f.Name] = fs
		if f.Required {
			required = append(required, f.Name)
		}
	}
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = sorted(required)
	}
	return o
}

// nullable lets s also be null.
func nullable(s map[string]any) map[string]any {
	if len(s) == 0 {
		return s // any value, null included
	}
	if t, ok := s["type"].(string); ok && s["enum"] == nil {
		c := map[string]any{}
		for k, v := range s {
			c[k] = v
		}
		c["type"] = []any{t, "null"}
		return c
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

func intFormat(prefix string, bits int) string {
	if bits == 0 {
		return prefix
	}
	return fmt.Sprintf("%s%d", prefix, bits)
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sorted(xs []any) []any {
	ss := make([]string, len(xs))
	for i, x := range xs {
		ss[i] = x.(string)
	}
	slices.Sort(ss)
	return strs(ss)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
