package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/schema"
	"github.com/agentd-dev/agentd/schema/refschema"
)

// TestCheckedIn fails when the checked-in bundles differ from what the Go
// types produce.
func TestCheckedIn(t *testing.T) {
	for _, exp := range []bool{false, true} {
		want, err := schema.Bundle(exp)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := schema.Bundle(exp)
		if !bytes.Equal(want, again) {
			t.Fatalf("Bundle(%v) is not deterministic", exp)
		}
		got, err := os.ReadFile(schema.FileName(exp))
		if err != nil {
			t.Fatalf("%v: run `make schema` (or `go generate ./schema`)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("schema/%s is out of date with package protocol: run `make schema` (or `go generate ./schema`)",
				schema.FileName(exp))
		}
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := schema.Write(dir, true); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dir + "/experimental.schemas.json")
	want, _ := schema.Bundle(true)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Write wrote %d bytes (%v), want the %d-byte bundle", len(got), err, len(want))
	}
	if err := schema.Write(dir+"/missing", false); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}

// bundle is a parsed schema bundle.
type bundle struct {
	defs map[string]any
}

func parseBundle(t *testing.T, data []byte) *bundle {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	return &bundle{defs: root["definitions"].(map[string]any)}
}

// resolve follows "#/definitions/…" references and unwraps nullability
// (anyOf with null, allOf of one) until it reaches a schema with content.
func (b *bundle) resolve(s any) map[string]any {
	for range 20 {
		m, _ := s.(map[string]any)
		if m == nil {
			return nil
		}
		if ref, ok := m["$ref"].(string); ok {
			var cur any = map[string]any{"definitions": b.defs}
			for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
				cur = cur.(map[string]any)[tok]
			}
			s = cur
			continue
		}
		if all, ok := m["allOf"].([]any); ok && len(all) == 1 {
			s = all[0]
			continue
		}
		if alt, ok := m["anyOf"].([]any); ok && len(alt) == 2 {
			if n, _ := alt[1].(map[string]any); n["type"] == "null" {
				s = alt[0]
				continue
			}
		}
		return m
	}
	return nil
}

func requiredSet(m map[string]any) []string {
	var out []string
	for _, r := range asList(m["required"]) {
		out = append(out, r.(string))
	}
	sort.Strings(out)
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// branches indexes the object branches of a union by their tag value or,
// for {"name": value} branches, by their single key. Properties next to the
// oneOf (the reference puts ThreadItem's common fields there) are merged
// into every branch, and nested unions are flattened.
func branches(b *bundle, m map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	common, _ := m["properties"].(map[string]any)
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, br := range asList(m[key]) {
			r := b.resolve(br)
			props, _ := r["properties"].(map[string]any)
			if props == nil {
				for k, v := range branches(b, r) {
					out[k] = v
				}
				continue
			}
			if len(common) > 0 {
				merged := map[string]any{}
				for k, v := range common {
					merged[k] = v
				}
				for k, v := range props {
					merged[k] = v
				}
				r = map[string]any{"properties": merged, "required": r["required"], "anyOf": r["anyOf"]}
				props = merged
			}
			if tag, ok := props["type"].(map[string]any); ok && len(asList(tag["enum"])) == 1 {
				out[asList(tag["enum"])[0].(string)] = r
			} else if len(props) == 1 && r["additionalProperties"] == false {
				for k := range props {
					out["{"+k+"}"] = r
				}
			}
		}
	}
	return out
}

// properties returns an object schema's properties, including those of
// untagged alternatives next to them (the reference's image input is
// {detail, type} plus anyOf [{url}, {fileId}]).
func properties(b *bundle, m map[string]any) map[string]any {
	props, _ := m["properties"].(map[string]any)
	// A property of any alternative (a flat struct of ours may stand for
	// the reference's variants, as for mcpServer/elicitation/request).
	alts := append(asList(m["anyOf"]), asList(m["oneOf"])...)
	if len(alts) == 0 {
		return props
	}
	out := map[string]any{}
	for _, alt := range alts {
		for k, v := range properties(b, b.resolve(alt)) {
			out[k] = v
		}
	}
	for k, v := range props {
		out[k] = v
	}
	return out
}

// comparer walks our schema and the reference's side by side.
type comparer struct {
	ours, ref *bundle
	seen      map[string]bool
	problems  []string
	// extended records the enumExtensions met, by path and value.
	extended map[string]bool
}

// enumExtensions are the enum values agentd adds to the reference's
// schema on purpose, by the path compare reports them at; each is
// documented in docs/protocol.md (Extensions). The test fails when one
// is no longer met, so that the list cannot go stale.
var enumExtensions = map[string][]string{
	// A review on a fork of the thread (the delivery earlier reference
	// versions had; 0.169 has inline only).
	"review/start params.delivery": {"detached"},
}

func (c *comparer) errorf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// compare checks that every object in ours has the reference's required
// fields and only properties the reference has, recursively, matching union
// variants by tag. Parts we model as opaque ({}) are not compared.
func (c *comparer) compare(path string, ours, ref any) {
	o, r := c.ours.resolve(ours), c.ref.resolve(ref)
	if o == nil || r == nil || len(o) == 0 {
		return
	}
	key := fmt.Sprintf("%p/%p", o, r)
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	if oprops, ok := o["properties"].(map[string]any); ok {
		rprops := properties(c.ref, r)
		if rprops == nil {
			if _, isMap := r["additionalProperties"]; !isMap && r["type"] != "object" {
				c.errorf("%s: object here, reference has %s", path, short(r))
			}
			return
		}
		if or, rr := requiredSet(o), requiredSet(r); !slices.Equal(or, rr) {
			c.errorf("%s: required %v, reference %v", path, or, rr)
		}
		for name, os := range oprops {
			rs, ok := rprops[name]
			if !ok {
				c.errorf("%s.%s: not in the reference", path, name)
				continue
			}
			c.compare(path+"."+name, os, rs)
		}
		return
	}
	if ob := branches(c.ours, o); len(ob) > 0 {
		rb := branches(c.ref, r)
		for tag, obr := range ob {
			rbr, ok := rb[tag]
			if !ok {
				c.errorf("%s: variant %s not in the reference", path, tag)
				continue
			}
			c.compare(path+"<"+tag+">", obr, rbr)
		}
	}
	if oe := enumValues(c.ours, o); oe != nil {
		re := enumValues(c.ref, r)
		for _, v := range oe {
			if re != nil && !slices.Contains(re, v) {
				if slices.Contains(enumExtensions[path], v) {
					c.extended[path+" "+v] = true
					continue
				}
				c.errorf("%s: enum value %q not in the reference %v", path, v, re)
			}
		}
	}
	if items, ok := o["items"]; ok {
		c.compare(path+"[]", items, r["items"])
	}
	if ap, ok := o["additionalProperties"].(map[string]any); ok {
		c.compare(path+"{}", ap, r["additionalProperties"])
	}
}

// enumValues collects the plain string values a schema allows, or nil.
func enumValues(b *bundle, m map[string]any) []string {
	var out []string
	add := func(s map[string]any) {
		if props, _ := s["properties"].(map[string]any); props == nil {
			for _, v := range asList(s["enum"]) {
				if str, ok := v.(string); ok {
					out = append(out, str)
				}
			}
		}
	}
	add(m)
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, br := range asList(m[key]) {
			add(b.resolve(br))
		}
	}
	return out
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 100 {
		return string(b[:100]) + "…"
	}
	return string(b)
}

var kinds = map[protocol.MethodKind]string{
	protocol.ClientRequest:      "ClientRequest",
	protocol.ClientNotification: "ClientNotification",
	protocol.ServerRequest:      "ServerRequest",
	protocol.ServerNotification: "ServerNotification",
}

// notInReference lists the methods we have that the reference schema lacks.
var notInReference = []string{"rawResponse/completed", "rawResponseItem/completed"}

// TestConformance compares, for every method we register, our bundle with
// the reference bundle of the same variant: the method exists there with the
// same experimental status, and its params and result agree on required
// fields and property names, all the way down (for the methods agentd has
// types for: one known by name only is checked for its existence and
// status alone).
func TestConformance(t *testing.T) {
	for _, exp := range []bool{false, true} {
		t.Run(schema.FileName(exp), func(t *testing.T) {
			ref, err := refschema.LoadBundle(refschema.Dir(), schema.FileName(exp))
			if errors.Is(err, os.ErrNotExist) {
				t.Skipf("reference schema not found: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			refExp, err := refschema.LoadBundle(refschema.Dir(), schema.FileName(true))
			if err != nil {
				t.Fatal(err)
			}
			ourBytes, err := schema.Bundle(exp)
			if err != nil {
				t.Fatal(err)
			}
			c := &comparer{ours: parseBundle(t, ourBytes), seen: map[string]bool{}, extended: map[string]bool{}}
			c.ref = &bundle{defs: ref.Definition("#/definitions")}
			n := 0
			for kind, kname := range kinds {
				for _, m := range protocol.Methods(kind) {
					if slices.Contains(notInReference, m.Method) {
						if ref.Has(kname, m.Method) {
							t.Errorf("%s is in the reference schema now", m.Method)
						}
						continue
					}
					if slices.Contains(legacyMethods, m.Method) {
						if refExp.Has(kname, m.Method) {
							t.Errorf("legacy method %s is in the reference schema now", m.Method)
						}
						continue
					}
					inStable := ref.Has(kname, m.Method)
					if !exp && m.Experimental {
						if inStable {
							t.Errorf("%s is marked experimental but the reference's stable schema has it", m.Method)
						}
						continue
					}
					if !inStable {
						t.Errorf("%s %s is not in the reference schema", kname, m.Method)
						continue
					}
					if exp && m.Experimental == refStable(t).Has(kname, m.Method) {
						t.Errorf("%s: Experimental = %v, reference disagrees", m.Method, m.Experimental)
					}
					if m.NameOnly {
						continue // no types to compare; our bundles leave it out
					}
					n++
					ourBranch := ourMethodBranch(c.ours, kname, m.Method)
					refParams := ref.ParamsRef(kname, m.Method)
					switch {
					case m.Params == nil && refParams != "":
						t.Errorf("%s: no params type, reference has %s", m.Method, refParams)
					case m.Params != nil && refParams == "":
						t.Errorf("%s: params type %v, reference has none", m.Method, m.Params)
					case m.Params != nil:
						c.compare(m.Method+" params", ourBranch["params"], map[string]any{"$ref": refParams})
					}
					if m.Result == nil {
						continue
					}
					refResult := ref.ResultRef(kname, m.Method)
					if refResult == "" {
						refResult = refExp.ResultRef(kname, m.Method)
					}
					if refResult == "" {
						t.Errorf("%s: reference has no result type", m.Method)
						continue
					}
					c.compare(m.Method+" result", map[string]any{"$ref": "#/definitions/" + m.Result.Name()},
						map[string]any{"$ref": refResult})
				}
			}
			for _, p := range c.problems {
				t.Error(p)
			}
			for path, vs := range enumExtensions {
				for _, v := range vs {
					if !c.extended[path+" "+v] {
						t.Errorf("%s: the extension %q was not met (the reference has it now, or the path changed)", path, v)
					}
				}
			}
			t.Logf("%d methods compared", n)
		})
	}
}

var stableRef *refschema.V

func refStable(t *testing.T) *refschema.V {
	if stableRef == nil {
		var err error
		if stableRef, err = refschema.LoadBundle(refschema.Dir(), "stable.schemas.json"); err != nil {
			t.Fatal(err)
		}
	}
	return stableRef
}

// ourMethodBranch returns the properties of a method's branch in our bundle.
func ourMethodBranch(b *bundle, kind, method string) map[string]any {
	for _, br := range asList(b.defs[kind].(map[string]any)["oneOf"]) {
		props := br.(map[string]any)["properties"].(map[string]any)
		if asList(props["method"].(map[string]any)["enum"])[0] == method {
			return props
		}
	}
	return nil
}

// TestOwnBundleAcceptsTranscripts validates what the reference server sent
// against our own bundles: our schema must describe the real wire.
func TestOwnBundleAcceptsTranscripts(t *testing.T) {
	msgs := refschema.Transcripts(t)
	for _, exp := range []bool{false, true} {
		v, err := refschema.LoadBundle(".", schema.FileName(exp))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range msgs {
			if !m.FromServer || m.Response || m.Method == "" {
				continue
			}
			kind := "ServerNotification"
			if m.ID != nil {
				kind = "ServerRequest"
			}
			if !v.Has(kind, m.Method) {
				continue
			}
			if err := v.ValidateServerMessage(m.Raw); err != nil {
				t.Errorf("%s %s:%d %s: %v", schema.FileName(exp), m.File, m.Line, m.Method, err)
			}
			n++
		}
		if n < 900 {
			t.Errorf("%s: only %d messages validated", schema.FileName(exp), n)
		}
	}
}

// TestStableLeavesOutExperimental checks the filtering with one example of
// each kind: a method, a field and a union variant.
func TestStableLeavesOutExperimental(t *testing.T) {
	stable, _ := schema.Bundle(false)
	exp, _ := schema.Bundle(true)
	s, e := parseBundle(t, stable), parseBundle(t, exp)
	if ourMethodBranch(s, "ClientRequest", "collaborationMode/list") != nil ||
		ourMethodBranch(e, "ClientRequest", "collaborationMode/list") == nil {
		t.Error("collaborationMode/list: want it only in the experimental bundle")
	}
	field := func(b *bundle, def, name string) bool {
		_, ok := b.defs[def].(map[string]any)["properties"].(map[string]any)[name]
		return ok
	}
	if field(s, "ThreadStartParams", "experimentalRawEvents") || !field(e, "ThreadStartParams", "experimentalRawEvents") {
		t.Error("ThreadStartParams.experimentalRawEvents: want it only in the experimental bundle")
	}
	if !field(s, "ThreadStartParams", "cwd") {
		t.Error("ThreadStartParams.cwd missing from the stable bundle")
	}
	// Gated variants stay in the stable bundle, as in the reference.
	if _, ok := branches(s, s.resolve(s.defs["AskForApproval"]))["{granular}"]; !ok {
		t.Error("AskForApproval.granular missing from the stable bundle")
	}
	if got := reflect.TypeOf(s.defs["ThreadItem"]); got == nil {
		t.Error("ThreadItem definition missing")
	}
}

// legacyMethods are client requests the reference accepts and lists in its
// "unknown variant" error though its schema bundles do not have them.
var legacyMethods = []string{"getConversationSummary", "gitDiffToRemote", "getAuthStatus"}

// TestReferenceClientRequestsAreKnown is TestConformance the other way
// round: every client request of the reference bundles is in the protocol
// table (so agentd serves it, or answers it -32601 after gating it, never
// "unknown variant"), experimental exactly when the stable bundle lacks
// it, and the table lists them in the reference's order, so that the
// "unknown variant" error is the one the reference sent.
func TestReferenceClientRequestsAreKnown(t *testing.T) {
	stable, err := refschema.LoadBundle(refschema.Dir(), schema.FileName(false))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("reference schema not found: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	exp, err := refschema.LoadBundle(refschema.Dir(), schema.FileName(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stable.Methods("ClientRequest") {
		if !exp.Has("ClientRequest", m) {
			t.Errorf("%s is in the stable bundle only", m)
		}
	}
	ref := exp.Methods("ClientRequest")
	for _, m := range ref {
		info, ok := protocol.Lookup(protocol.ClientRequest, m)
		switch {
		case !ok:
			t.Errorf("reference client request %s is not in the protocol table (protocol/table.go)", m)
		case info.Experimental == stable.Has("ClientRequest", m):
			t.Errorf("%s: Experimental = %v, the reference's stable bundle disagrees", m, info.Experimental)
		}
	}
	for _, m := range legacyMethods {
		if info, ok := protocol.Lookup(protocol.ClientRequest, m); !ok || info.Experimental || !info.NameOnly {
			t.Errorf("legacy method %s: want it known by name only, not experimental", m)
		}
	}

	// The order: UnknownMethod lists the table's client requests; the
	// reference lists its bundle's, with the legacy methods among them.
	msg := protocol.UnknownMethod("foo/bar").Message
	const prefix = "Invalid request: unknown variant `foo/bar`, expected one of "
	if !strings.HasPrefix(msg, prefix) {
		t.Fatalf("UnknownMethod: %q", msg)
	}
	var listed []string
	for _, name := range strings.Split(strings.TrimPrefix(msg, prefix), ", ") {
		if name = strings.Trim(name, "`"); !slices.Contains(legacyMethods, name) {
			listed = append(listed, name)
		}
	}
	if !slices.Equal(listed, ref) {
		t.Errorf("UnknownMethod lists, legacy methods aside,\n%v\nthe reference's bundle\n%v", listed, ref)
	}
	// And the whole message is the one the reference sent, where a
	// transcript has it.
	seen := 0
	for _, m := range refschema.Transcripts(t) {
		var e struct{ Message string }
		if !m.Response || m.Error == nil || json.Unmarshal(m.Error, &e) != nil || !strings.HasPrefix(e.Message, prefix) {
			continue
		}
		seen++
		if e.Message != msg {
			t.Errorf("%s:%d: the reference answered foo/bar\n%s\nagentd answers\n%s", m.File, m.Line, e.Message, msg)
		}
	}
	if seen == 0 {
		t.Error("no transcript has the reference's answer to foo/bar")
	}
}
