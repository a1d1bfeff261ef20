package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

func lookup(t testing.TB, method string) *protocol.MethodInfo {
	t.Helper()
	m, ok := protocol.Lookup(protocol.ClientRequest, method)
	if !ok {
		t.Fatalf("method %s not registered", method)
	}
	return m
}

func TestDecodeParamsErrors(t *testing.T) {
	cases := []struct {
		method, params, want string
	}{
		// Texts observed from the reference server.
		{"thread/start", `{"cwd": 123}`, "Invalid request: invalid type: integer `123`, expected a string"},
		{"turn/start", `{"input": []}`, "Invalid request: missing field `threadId`"},
		{"thread/loaded/list", ``, ""},
		{"thread/archive", ``, "Invalid request: missing field `params`"},
		{"thread/archive", `null`, "Invalid request: missing field `params`"},
		// "detached" is agentd's extension (the reference refuses it:
		// "unknown variant `detached`, expected `inline`").
		{"review/start", `{"threadId":"t","target":{"type":"uncommittedChanges"},"delivery":"detached"}`, ""},
		{"review/start", `{"threadId":"t","target":{"type":"uncommittedChanges"},"delivery":"attached"}`,
			"Invalid request: unknown variant `attached`, expected `inline` or `detached`"},
		{"fs/readFile", `{"path": "relative.txt"}`, "Invalid request: AbsolutePathBuf deserialized without a base path"},
		// serde's wording for the other cases.
		{"thread/list", `{"sortDirection":"up"}`, "Invalid request: unknown variant `up`, expected `asc` or `desc`"},
		{"thread/start", `{"sandbox":"none"}`,
			"Invalid request: unknown variant `none`, expected one of `read-only`, `workspace-write`, `danger-full-access`"},
		{"thread/start", `{"approvalPolicy":"sometimes"}`,
			"Invalid request: unknown variant `sometimes`, expected one of `untrusted`, `on-request`, `never`, `granular`"},
		{"thread/start", `{"approvalPolicy":{"granular":{"rules":true}}}`, "Invalid request: missing field `sandbox_approval`"},
		{"thread/start", `{"approvalPolicy":{}}`, "Invalid request: invalid value: map, expected map with a single key"},
		{"thread/start", `{"approvalPolicy":5}`, "Invalid request: invalid type: integer `5`, expected string or map"},
		{"thread/start", `{"ephemeral":"yes"}`, "Invalid request: invalid type: string \"yes\", expected a boolean"},
		{"thread/start", `[1]`, "Invalid request: invalid type: sequence, expected struct ThreadStartParams"},
		{"thread/list", `{"limit":-1}`, "Invalid request: invalid value: integer `-1`, expected u32"},
		{"thread/list", `{"limit":4294967296}`, "Invalid request: invalid value: integer `4294967296`, expected u32"},
		{"thread/list", `{"limit":1.5}`, "Invalid request: invalid type: floating point `1.5`, expected u32"},
		{"thread/list", `{"limit":2.0}`, "Invalid request: invalid type: floating point `2.0`, expected u32"},
		{"thread/list", `{"cwd":7}`, "Invalid request: data did not match any variant of untagged enum ThreadListCwdFilter"},
		{"turn/start", `{"threadId":"t","input":null}`, "Invalid request: invalid type: null, expected a sequence"},
		{"turn/start", `{"threadId":null,"input":[]}`, "Invalid request: invalid type: null, expected a string"},
		{"turn/start", `{"threadId":"t","input":[{"text":"hi"}]}`, "Invalid request: missing field `type`"},
		{"turn/start", `{"threadId":"t","input":[{"type":"video"}]}`,
			"Invalid request: unknown variant `video`, expected one of `text`, `image`, `localImage`, `audio`, `localAudio`, `skill`, `mention`"},
		{"turn/start", `{"threadId":"t","input":[{"type":"text"}]}`, "Invalid request: missing field `text`"},
		{"turn/start", `{"threadId":"t","input":[],"responsesapiClientMetadataPatch":{"a":null}}`, "Invalid request: invalid type: null, expected a string"},
		{"turn/start", `{"threadId":"t","input":"hi"}`, "Invalid request: invalid type: string \"hi\", expected a sequence"},
		{"turn/start", `{"threadId":"t","input":[],"sandboxPolicy":{"type":"workspaceWrite","writableRoots":["rel"]}}`,
			"Invalid request: AbsolutePathBuf deserialized without a base path"},
		{"turn/start", `{"threadId":"t","input":[],"threadId":"u"}`, "Invalid request: duplicate field `threadId`"},
		{"command/exec", `{"command":["ls"],"env":{"A":1}}`, "Invalid request: invalid type: integer `1`, expected a string"},
		{"command/exec/resize", `{"processId":"p","size":{"rows":70000,"cols":1}}`, "Invalid request: invalid value: integer `70000`, expected u16"},
		{"thread/items/list", `{"threadId":"t","cursor":{"type":"turn"}}`,
			"Invalid request: data did not match any variant of untagged enum ThreadItemsListCursor"},
		{"turn/start", `{"threadId":"t","input":[`, "Invalid request: EOF while parsing a value at line 1 column 26"},
	}
	for _, c := range cases {
		_, err := protocol.DecodeParams(lookup(t, c.method), json.RawMessage(c.params))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: unexpected error %v", c.method, c.params, err)
		case c.want != "" && err == nil:
			t.Errorf("%s %s: no error, want %q", c.method, c.params, c.want)
		case c.want != "":
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidRequest || pe.Message != c.want {
				t.Errorf("%s %s:\n got %v\nwant %q", c.method, c.params, err, c.want)
			}
		}
	}
}

func TestDecodeParamsValues(t *testing.T) {
	v, err := protocol.DecodeParams(lookup(t, "turn/start"), json.RawMessage(`{
		"threadId": "t1", "bogus": {"deep": [1, 2]}, "THREADID": "ignored",
		"input": [{"type": "text", "text": "hi", "text_elements": []}, {"type": "localImage", "path": "/a.png"}],
		"approvalPolicy": "never",
		"sandboxPolicy": {"type": "workspaceWrite", "writableRoots": ["/w"], "networkAccess": true},
		"effort": "high", "outputSchema": {"type": "object"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	p := v.(*protocol.TurnStartParams)
	if p.ThreadID != "t1" || len(p.Input) != 2 || p.Input[0].Text.Text != "hi" || p.Input[1].LocalImage.Path != "/a.png" {
		t.Errorf("decoded %+v", p)
	}
	if p.ApprovalPolicy.Mode != protocol.ApprovalNever || p.ApprovalPolicy.Granular != nil {
		t.Errorf("approvalPolicy %+v", p.ApprovalPolicy)
	}
	ww := p.SandboxPolicy.WorkspaceWrite
	if ww == nil || !ww.NetworkAccess || len(ww.WritableRoots) != 1 || ww.WritableRoots[0] != "/w" {
		t.Errorf("sandboxPolicy %+v", p.SandboxPolicy)
	}
	if *p.Effort != "high" || !reflect.DeepEqual(p.OutputSchema, map[string]any{"type": "object"}) {
		t.Errorf("effort %v, outputSchema %v", *p.Effort, p.OutputSchema)
	}

	// No required fields: omitted, null and {} params all decode to zero values.
	for _, raw := range []string{``, `null`, ` {} `} {
		v, err := protocol.DecodeParams(lookup(t, "thread/start"), json.RawMessage(raw))
		if err != nil || !reflect.DeepEqual(v, &protocol.ThreadStartParams{}) {
			t.Errorf("thread/start %q: %#v, %v", raw, v, err)
		}
	}
	// A method without a params type ignores whatever it gets.
	if v, err := protocol.DecodeParams(lookup(t, "configRequirements/read"), json.RawMessage(`{"x":1}`)); v != nil || err != nil {
		t.Errorf("configRequirements/read: %v, %v", v, err)
	}
	// Nullable optional fields accept null.
	v, err = protocol.DecodeParams(lookup(t, "thread/start"), json.RawMessage(`{"model":null,"config":null,"dynamicTools":null}`))
	if err != nil || !reflect.DeepEqual(v, &protocol.ThreadStartParams{}) {
		t.Errorf("nulls: %#v, %v", v, err)
	}
	// A dynamic tool without "type" is a function, as the reference (0.169)
	// reads it; one with another type is still refused.
	v, err = protocol.DecodeParams(lookup(t, "thread/start"), json.RawMessage(`{"dynamicTools":[{"name":"lookup","description":"d","inputSchema":{"type":"object"}},{"type":"namespace","name":"ns","description":"n","tools":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tools := v.(*protocol.ThreadStartParams).DynamicTools
	if len(tools) != 2 || tools[0].Function == nil || tools[0].Function.Name != "lookup" || tools[1].Namespace == nil {
		t.Errorf("dynamic tools %+v", tools)
	}
	var spec protocol.DynamicToolSpec
	if err := json.Unmarshal([]byte(`{"name":"lookup","description":"d","inputSchema":{}}`), &spec); err != nil || spec.Function == nil || spec.Function.Name != "lookup" {
		t.Errorf("untagged spec %+v: %v", spec, err)
	}
	if _, err := protocol.DecodeParams(lookup(t, "thread/start"), json.RawMessage(`{"dynamicTools":[{"type":"bogus","name":"x"}]}`)); err == nil {
		t.Error("a dynamic tool of an unknown type was accepted")
	}
}

func TestExperimentalUse(t *testing.T) {
	cases := []struct {
		method, params, want string
	}{
		{"thread/start", `{"cwd":"/w","experimentalRawEvents":true}`, "thread/start.experimentalRawEvents"},
		// A default value is no use: false for a boolean, null for anything.
		{"thread/start", `{"cwd":"/w","experimentalRawEvents":false}`, ""},
		{"thread/start", `{"experimentalRawEvents":null}`, ""},
		{"thread/start", `{"dynamicTools":[]}`, "thread/start.dynamicTools"},
		{"thread/items/list", `{"threadId":"t","deferOutput":{"mcpToolCall":false}}`, ""},
		{"thread/start", `{"mockExperimentalField":"x"}`, "thread/start.mockExperimentalField"},
		{"thread/start", `{"mockExperimentalField":null}`, ""},
		{"thread/start", `{"dynamicTools":[{"type":"function","name":"f","description":"d","inputSchema":{}}]}`, "thread/start.dynamicTools"},
		{"thread/start", `{"approvalPolicy":{"granular":{"sandbox_approval":true,"rules":true,"mcp_elicitations":true}}}`, "askForApproval.granular"},
		{"thread/start", `{"approvalPolicy":"never","sandbox":"read-only"}`, ""},
		{"thread/start", `{"historyMode":"paginated","permissions":"p"}`, "thread/start.historyMode"},
		{"turn/start", `{"threadId":"t","input":[],"collaborationMode":{"mode":"plan","settings":{"model":"m"}}}`, "turn/start.collaborationMode"},
		{"turn/start", `{"threadId":"t","input":[],"approvalPolicy":{"granular":{}}}`, "askForApproval.granular"},
		{"turn/start", `{"threadId":"t","input":[{"type":"text","text":"x"}]}`, ""},
		{"thread/items/list", `{"threadId":"t","deferOutput":{"mcpToolCall":true}}`, "thread/items/list.deferOutput.mcpToolCall"},
		{"thread/items/list", `{"threadId":"t","deferOutput":{}}`, ""},
		{"command/exec", `{"command":["ls"],"permissionProfile":"p"}`, "command/exec.permissionProfile"},
		// A nullable boolean's false is a choice (the reference's
		// Some(false)); an empty path is none; thread/list's projectId
		// null is a filter (threads in no project), not its default.
		{"thread/start", `{"daybreakEnabled":false}`, "thread/start.daybreakEnabled"},
		{"thread/start", `{"daybreakEnabled":null}`, ""},
		{"thread/resume", `{"threadId":"t","path":""}`, ""},
		{"thread/fork", `{"threadId":"t","path" : ""}`, ""},
		{"thread/fork", `{"threadId":"t","path":"x"}`, "thread/fork.path"},
		{"thread/start", `{"permissions":""}`, "thread/start.permissions"},
		{"thread/list", `{"projectId":null}`, "thread/list.projectId"},
		{"thread/list", `{"parentThreadId":null}`, ""},
		{"thread/archive", `{"threadId":"t","experimentalRawEvents":true}`, ""},
		{"thread/start", `{"experimentalRawEvents":`, ""},
	}
	for _, c := range cases {
		if got := protocol.ExperimentalUse(lookup(t, c.method), json.RawMessage(c.params)); got != c.want {
			t.Errorf("%s %s: ExperimentalUse = %q, want %q", c.method, c.params, got, c.want)
		}
	}
}

func TestUnknownMethod(t *testing.T) {
	err := protocol.UnknownMethod("foo/bar")
	if err.Code != protocol.CodeInvalidRequest {
		t.Errorf("code %d", err.Code)
	}
	const prefix = "Invalid request: unknown variant `foo/bar`, expected one of `initialize`, `server/diagnostics`, "
	if len(err.Message) < len(prefix) || err.Message[:len(prefix)] != prefix {
		t.Errorf("message %q", err.Message)
	}
}

func TestMethodsSorted(t *testing.T) {
	for _, k := range []protocol.MethodKind{protocol.ClientRequest, protocol.ClientNotification, protocol.ServerRequest, protocol.ServerNotification} {
		ms := protocol.Methods(k)
		if len(ms) == 0 {
			t.Errorf("kind %d has no methods", k)
		}
		for i := 1; i < len(ms); i++ {
			if ms[i-1].Method >= ms[i].Method {
				t.Errorf("kind %d: %s before %s", k, ms[i-1].Method, ms[i].Method)
			}
		}
		for _, m := range ms {
			if got, ok := protocol.Lookup(k, m.Method); !ok || got != m {
				t.Errorf("Lookup(%s) = %v, %v", m.Method, got, ok)
			}
		}
	}
}

// BenchmarkDecodeParams compares DecodeParams on a typical turn/start with
// plain encoding/json into the same type.
func BenchmarkDecodeParams(b *testing.B) {
	raw := json.RawMessage(`{"threadId":"01a22982-4e6d-7951-b9df-a075c7026089","input":[{"type":"text","text":"say hello, and then list the files in the current directory","text_elements":[]}],"cwd":"/workspace","approvalPolicy":"on-request","sandboxPolicy":{"type":"workspaceWrite","writableRoots":["/workspace"],"networkAccess":false},"model":"gpt-5.5","effort":"medium","summary":"auto"}`)
	m := lookup(b, "turn/start")
	b.Run("DecodeParams", func(b *testing.B) {
		for b.Loop() {
			if _, err := protocol.DecodeParams(m, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var p protocol.TurnStartParams
			if err := json.Unmarshal(raw, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
