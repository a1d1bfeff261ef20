package test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/schema/refschema"
)

// noThread is a thread id no test creates: requests that need a thread
// get past the gate and then fail in their handler.
const noThread = "01a1f000-0000-7000-8000-00000000dead"

// experimentalField is how the reference gates one experimental field of
// a stable method's params, as recorded against the reference 0.169
// binary: values it lets through without experimentalApi (its defaults)
// and values it refuses with "<descriptor> requires experimentalApi
// capability".
type experimentalField struct {
	// base are the method's params without the field.
	base map[string]any
	// set puts the value in the params (nil: at the top level).
	set                   func(params map[string]any, value any)
	defaults, nonDefaults []any
	// notServed: agentd decodes and gates the method's params, then
	// answers -32601 (docs/compatibility.md).
	notServed bool
}

// experimentalFields has every experimental field of a stable method's
// params in the reference schema, by descriptor.
func experimentalFields() map[string]experimentalField {
	threadStart := map[string]any{}
	resume := map[string]any{"threadId": noThread}
	turn := map[string]any{"threadId": noThread, "input": []any{}}
	steer := map[string]any{"threadId": noThread, "input": []any{}, "expectedTurnId": "x"}
	list := map[string]any{}
	meta := map[string]any{"threadId": noThread}
	exec := map[string]any{"command": []any{"true"}}
	// The common shapes of the reference's defaults.
	plainBool := func(base map[string]any) experimentalField {
		return experimentalField{base: base, defaults: []any{false}, nonDefaults: []any{true}}
	}
	nullableBool := func(base map[string]any) experimentalField {
		return experimentalField{base: base, defaults: []any{nil}, nonDefaults: []any{false, true}}
	}
	nullableString := func(base map[string]any) experimentalField {
		return experimentalField{base: base, defaults: []any{nil}, nonDefaults: []any{"", "x"}}
	}
	nullable := func(base map[string]any, values ...any) experimentalField {
		return experimentalField{base: base, defaults: []any{nil}, nonDefaults: values}
	}
	// An empty path is no path.
	path := experimentalField{base: resume, defaults: []any{nil, ""}, nonDefaults: []any{"x"}}
	deferOutput := func(name string) experimentalField {
		return experimentalField{base: map[string]any{"threadId": noThread}, defaults: []any{false}, nonDefaults: []any{true},
			set: func(p map[string]any, v any) { p["deferOutput"] = map[string]any{name: v} }}
	}
	notServed := func(f experimentalField) experimentalField { f.notServed = true; return f }
	collaboration := map[string]any{"mode": "default", "settings": map[string]any{"model": "m", "reasoning_effort": nil, "developer_instructions": nil}}
	tool := map[string]any{"type": "function", "name": "t", "description": "d", "inputSchema": map[string]any{"type": "object"}}
	return map[string]experimentalField{
		"thread/start.allowProviderModelFallback": plainBool(threadStart),
		"thread/start.daybreakEnabled":            nullableBool(threadStart),
		"thread/start.dynamicTools":               nullable(threadStart, []any{}, []any{tool}),
		"thread/start.environments":               nullable(threadStart, []any{}),
		"thread/start.experimentalRawEvents":      plainBool(threadStart),
		"thread/start.historyMode":                nullable(threadStart, "legacy", "paginated"),
		"thread/start.mockExperimentalField":      nullableString(threadStart),
		"thread/start.multiAgentMode":             nullable(threadStart, "proactive", map[string]any{"custom": "x"}),
		"thread/start.permissions":                nullableString(threadStart),
		"thread/start.projectId":                  nullableString(threadStart),
		"thread/start.runtimeWorkspaceRoots":      nullable(threadStart, []any{}, []any{"/tmp"}),
		"thread/start.selectedCapabilityRoots":    nullable(threadStart, []any{}),

		"thread/resume.history":               nullable(resume, []any{}),
		"thread/resume.initialTurnsPage":      nullable(resume, map[string]any{}),
		"thread/resume.path":                  path,
		"thread/resume.permissions":           nullableString(resume),
		"thread/resume.runtimeWorkspaceRoots": nullable(resume, []any{}),

		"thread/fork.attachToSource":                   plainBool(resume),
		"thread/fork.beforeTurnId":                     nullableString(resume),
		"thread/fork.deferGoalContinuation":            plainBool(resume),
		"thread/fork.experimentalDisablePredictionMcp": plainBool(resume),
		"thread/fork.experimentalPredictionMode":       plainBool(resume),
		"thread/fork.path":                             path,
		"thread/fork.permissions":                      nullableString(resume),
		"thread/fork.runtimeWorkspaceRoots":            nullable(resume, []any{}),

		"thread/metadata/update.daybreakEnabled": notServed(nullableBool(meta)),
		"thread/metadata/update.projectId":       notServed(nullableString(meta)),

		"thread/list.ancestorThreadId":       nullableString(list),
		"thread/list.attachedToThreadId":     nullableString(list),
		"thread/list.includeAttachedThreads": plainBool(list),
		"thread/list.parentThreadId":         nullableString(list),
		// null means "threads in no project": absent is the default.
		"thread/list.projectId": {base: list, nonDefaults: []any{nil, "", "x"}},

		"thread/items/list.deferOutput.commandExecution": deferOutput("commandExecution"),
		"thread/items/list.deferOutput.mcpToolCall":      deferOutput("mcpToolCall"),

		"turn/start.additionalContext":               nullable(turn, map[string]any{}),
		"turn/start.collaborationMode":               nullable(turn, collaboration),
		"turn/start.cyberAccessProgram":              nullable(turn, "standard"),
		"turn/start.environments":                    nullable(turn, []any{}),
		"turn/start.multiAgentMode":                  nullable(turn, "proactive"),
		"turn/start.permissions":                     nullableString(turn),
		"turn/start.responsesapiClientMetadata":      nullable(turn, map[string]any{}, map[string]any{"k": "v"}),
		"turn/start.responsesapiClientMetadataPatch": nullable(turn, map[string]any{}),
		"turn/start.runtimeWorkspaceRoots":           nullable(turn, []any{}),

		"turn/steer.additionalContext":               nullable(steer, map[string]any{}),
		"turn/steer.responsesapiClientMetadata":      nullable(steer, map[string]any{}),
		"turn/steer.responsesapiClientMetadataPatch": nullable(steer, map[string]any{}),

		"command/exec.permissionProfile": nullableString(exec),
	}
}

// referenceExperimentalFields lists the descriptors of the experimental
// fields of stable client methods' params in the reference schema: the
// fields its experimental bundle has and its stable bundle has not, at
// the top level and in the objects reached through fields both have.
func referenceExperimentalFields(t *testing.T) []string {
	exp := refschema.Validator(t)
	stable, err := refschema.LoadBundle(refschema.Dir(), "stable.schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(e, s map[string]any, at string, seen map[string]bool)
	walk = func(e, s map[string]any, at string, seen map[string]bool) {
		ep, _ := e["properties"].(map[string]any)
		sp, _ := s["properties"].(map[string]any)
		for name, sch := range ep {
			ssch, ok := sp[name]
			if !ok {
				out = append(out, at+"."+name)
				continue
			}
			eref, sref := objectRef(sch), objectRef(ssch)
			if eref != "" && sref != "" && !seen[eref] {
				seen[eref] = true
				walk(exp.Definition(eref), stable.Definition(sref), at+"."+name, seen)
			}
		}
	}
	for _, m := range stable.Methods("ClientRequest") {
		eref, sref := exp.ParamsRef("ClientRequest", m), stable.ParamsRef("ClientRequest", m)
		if eref == "" || sref == "" {
			continue
		}
		walk(exp.Definition(eref), stable.Definition(sref), m, map[string]bool{eref: true})
	}
	slices.Sort(out)
	return out
}

// objectRef is the definition a field's schema refers to, directly or as
// the non-null alternative of an anyOf.
func objectRef(v any) string {
	m, _ := v.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		return ref
	}
	alts, _ := m["anyOf"].([]any)
	for _, a := range alts {
		if ref, ok := a.(map[string]any)["$ref"].(string); ok {
			return ref
		}
	}
	return ""
}

// Every experimental field of a stable method's params in the reference
// schema is gated by its value as the reference gates it: without
// experimentalApi, its defaults get past the gate (to the method's own
// answer), and every other value is refused with the reference's error
// text. The fields come from the reference schema, so a field the table
// lacks fails the test.
func TestExperimentalFieldsGatedByValue(t *testing.T) {
	table := experimentalFields()
	if got, want := referenceExperimentalFields(t), slices.Sorted(maps.Keys(table)); !slices.Equal(got, want) {
		t.Fatalf("the reference's experimental fields\n%v\nthe table's\n%v", got, want)
	}
	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("plain", nil)
	for _, desc := range slices.Sorted(maps.Keys(table)) {
		f := table[desc]
		method, field := splitDescriptor(desc)
		call := func(v any) Message {
			t.Helper()
			p := maps.Clone(f.base)
			if method == "thread/start" {
				p["cwd"] = t.TempDir()
			}
			if f.set != nil {
				f.set(p, v)
			} else {
				p[field] = v
			}
			return c.Call(method, p)
		}
		show := func(v any) string { b, _ := json.Marshal(v); return string(b) }
		for _, v := range f.defaults {
			m := call(v)
			if m.Error != nil && (strings.HasSuffix(m.Error.Message, "requires experimentalApi capability") || strings.HasPrefix(m.Error.Message, "Invalid request: ")) {
				t.Errorf("%s = %s (its default) was refused: %s", desc, show(v), m.Raw)
			}
			if f.notServed && (m.Error == nil || m.Error.Code != -32601) {
				t.Errorf("%s = %s: %s, want -32601 (not served)", desc, show(v), m.Raw)
			}
		}
		for _, v := range f.nonDefaults {
			m := call(v)
			if m.Error == nil || m.Error.Code != codeInvalidRequest || m.Error.Message != desc+" requires experimentalApi capability" {
				t.Errorf("%s = %s: %s, want -32600 %q", desc, show(v), m.Raw, desc+" requires experimentalApi capability")
			}
		}
	}
}

// splitDescriptor splits "thread/items/list.deferOutput.mcpToolCall"
// into its method and its first field.
func splitDescriptor(desc string) (method, field string) {
	method, rest, _ := strings.Cut(desc, ".")
	field, _, _ = strings.Cut(rest, ".")
	return method, field
}
