package protocol_test

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/schema/refschema"
)

func ptr[T any](v T) *T { return &v }

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

func keys(t *testing.T, v any) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(marshal(t, v)), &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestUnionEncoding(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{protocol.StatusIdle(), `{"type":"idle"}`},
		{protocol.StatusActive(), `{"type":"active","activeFlags":[]}`},
		{protocol.StatusActive(protocol.FlagWaitingOnApproval), `{"type":"active","activeFlags":["waitingOnApproval"]}`},
		{protocol.ApprovalPolicy(protocol.ApprovalOnRequest), `"on-request"`},
		{protocol.AskForApproval{Granular: &protocol.GranularApproval{Rules: true}},
			`{"granular":{"sandbox_approval":false,"rules":true,"mcp_elicitations":false}}`},
		{protocol.SandboxPolicy{ReadOnly: &protocol.ReadOnlySandbox{}}, `{"type":"readOnly","networkAccess":false}`},
		{protocol.SandboxPolicy{DangerFullAccess: &protocol.Empty{}}, `{"type":"dangerFullAccess"}`},
		{protocol.SandboxPolicy{WorkspaceWrite: &protocol.WorkspaceWriteSandbox{}},
			`{"type":"workspaceWrite","writableRoots":[],"networkAccess":false,"excludeTmpdirEnvVar":false,"excludeSlashTmp":false}`},
		{protocol.ChangeUpdate(nil), `{"type":"update","move_path":null}`},
		{protocol.ChangeAdd(), `{"type":"add"}`},
		{*protocol.ErrorInfo(protocol.ErrOther), `"other"`},
		{protocol.CodexErrorInfo{ResponseStreamDisconnected: &protocol.HTTPErrorInfo{}},
			`{"responseStreamDisconnected":{"httpStatusCode":null}}`},
		{protocol.Decision(protocol.DecisionAccept), `"accept"`},
		{protocol.CommandExecutionApprovalDecision{AcceptWithExecpolicyAmendment: &protocol.ExecpolicyAmendment{
			ExecpolicyAmendment: protocol.List[string]{"echo"}}},
			`{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo"]}}`},
		{protocol.SessionSource{Kind: protocol.SourceVSCode}, `"vscode"`},
		{protocol.SessionSource{SubAgent: &protocol.SubAgentSource{Kind: protocol.SubAgentReview}}, `{"subAgent":"review"}`},
		{protocol.TextUserInput("hi"), `{"type":"text","text":"hi","text_elements":[]}`},
		{protocol.StringID("a"), `"a"`},
		{protocol.IntID(7), `7`},
		{protocol.List[int](nil), `[]`},
		{protocol.Map[int](nil), `{}`},
	}
	for _, c := range cases {
		got := marshal(t, c.v)
		if got != c.want {
			t.Errorf("%T: got %s, want %s", c.v, got, c.want)
			continue
		}
		// And back: decoding what we wrote gives the same JSON again.
		p := newOf(c.v)
		if err := protocol.Unmarshal([]byte(got), p); err != nil {
			t.Errorf("%T: decode %s: %v", c.v, got, err)
		} else if again := marshal(t, p); again != got {
			t.Errorf("%T: round trip %s → %s", c.v, got, again)
		}
	}
}

func newOf(v any) any {
	switch v.(type) {
	case protocol.ThreadStatus:
		return new(protocol.ThreadStatus)
	case protocol.AskForApproval:
		return new(protocol.AskForApproval)
	case protocol.SandboxPolicy:
		return new(protocol.SandboxPolicy)
	case protocol.PatchChangeKind:
		return new(protocol.PatchChangeKind)
	case protocol.CodexErrorInfo:
		return new(protocol.CodexErrorInfo)
	case protocol.CommandExecutionApprovalDecision:
		return new(protocol.CommandExecutionApprovalDecision)
	case protocol.SessionSource:
		return new(protocol.SessionSource)
	case protocol.UserInput:
		return new(protocol.UserInput)
	case protocol.RequestID:
		return new(protocol.RequestID)
	case protocol.List[int]:
		return new(protocol.List[int])
	case protocol.Map[int]:
		return new(protocol.Map[int])
	}
	panic("newOf: add a case")
}

func TestUnionMisuse(t *testing.T) {
	if _, err := json.Marshal(protocol.ThreadStatus{}); err == nil || !strings.Contains(err.Error(), "no variant set") {
		t.Errorf("empty union: %v", err)
	}
	two := protocol.ThreadStatus{Idle: &protocol.Empty{}, SystemError: &protocol.Empty{}}
	if _, err := json.Marshal(two); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("two variants: %v", err)
	}
	mixed := protocol.AskForApproval{Mode: protocol.ApprovalNever, Granular: &protocol.GranularApproval{}}
	if _, err := json.Marshal(mixed); err == nil {
		t.Error("string and object variant both set: no error")
	}
	// encoding/json users get the serde-style errors too.
	var s protocol.ThreadStatus
	if err := json.Unmarshal([]byte(`{"type":"busy"}`), &s); err == nil || !strings.Contains(err.Error(), "unknown variant `busy`") {
		t.Errorf("unknown tag: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"activeFlags":[]}`), &s); err == nil || !strings.Contains(err.Error(), "missing field `type`") {
		t.Errorf("missing tag: %v", err)
	}
	var a protocol.AskForApproval
	if err := json.Unmarshal([]byte(`{"granular":{},"never":null}`), &a); err == nil {
		t.Error("two keys: no error")
	}
}

func TestThreadItemHelpers(t *testing.T) {
	it := protocol.ThreadItem{AgentMessage: &protocol.AgentMessageItem{ID: "msg_1", Text: "hi"}}
	if it.Type() != "agentMessage" || it.ID() != "msg_1" {
		t.Errorf("Type %q ID %q", it.Type(), it.ID())
	}
	if (protocol.ThreadItem{}).Type() != "" || (protocol.ThreadItem{}).ID() != "" {
		t.Error("empty item has a type or id")
	}
}

// TestFieldPresence pins the presence rules clients depend on: items and
// threads write every field (nulls included), results have the reference's
// key set, the command approval request omits absent optional fields.
func TestFieldPresence(t *testing.T) {
	v := refschema.Validator(t)
	started := int64(1)
	item := protocol.ThreadItem{AgentMessage: &protocol.AgentMessageItem{ID: "msg_1"}, StartedAtMs: &started}
	if got, want := keys(t, item), []string{"completedAtMs", "delivery", "id", "memoryCitation", "moderation",
		"phase", "questions", "startedAtMs", "text", "type"}; !slices.Equal(got, want) {
		t.Errorf("agentMessage keys %v, want %v", got, want)
	}
	cmd := protocol.ThreadItem{CommandExecution: &protocol.CommandExecutionItem{ID: "call_1", Command: "ls", Cwd: "/w",
		Source: protocol.SourceAgent, Status: protocol.CommandInProgress}}
	if got, want := keys(t, cmd), []string{"aggregatedOutput", "command", "commandActions", "completedAtMs", "cwd",
		"durationMs", "exitCode", "id", "pluginId", "processId", "scriptPath", "source", "startedAtMs", "status", "type"}; !slices.Equal(got, want) {
		t.Errorf("commandExecution keys %v, want %v", got, want)
	}

	thread := protocol.Thread{ID: "t", SessionID: "t", Cwd: "/w", ModelProvider: "p", CliVersion: "0",
		HistoryMode: protocol.HistoryPaginated, Status: protocol.StatusIdle(), Source: protocol.SessionSource{Kind: protocol.SourceVSCode}}
	res := protocol.ThreadStartResponse{Thread: thread, Model: "m", ModelProvider: "p", Cwd: "/w",
		ApprovalPolicy: protocol.ApprovalPolicy(protocol.ApprovalOnRequest), ApprovalsReviewer: protocol.ReviewerUser,
		Sandbox:        protocol.SandboxPolicy{ReadOnly: &protocol.ReadOnlySandbox{}},
		MultiAgentMode: protocol.MultiAgentMode{Mode: protocol.MultiAgentExplicitRequestOnly}}
	if got := keys(t, res); len(got) != 14 {
		t.Errorf("ThreadStartResponse has %d keys: %v", len(got), got)
	}
	if got := keys(t, thread); len(got) != 33 {
		t.Errorf("Thread has %d keys: %v", len(got), got)
	}
	if err := v.ValidateResponse("thread/start", []byte(marshal(t, res))); err != nil {
		t.Errorf("ThreadStartResponse against the reference: %v", err)
	}
	note := []byte(`{"method":"item/started","emittedAtMs":2,"params":` + marshal(t, protocol.ItemStartedNotification{
		Item: cmd, ThreadID: "t", TurnID: "u", StartedAtMs: 1}) + `}`)
	if err := v.ValidateServerMessage(note); err != nil {
		t.Errorf("item/started against the reference: %v", err)
	}

	kind := protocol.ApprovalKindCommand
	req := protocol.CommandExecutionRequestApprovalParams{Kind: &kind, ThreadID: "t", TurnID: "u", ItemID: "call_1", StartedAtMs: 1}
	if got, want := keys(t, req), []string{"itemId", "kind", "startedAtMs", "threadId", "turnId"}; !slices.Equal(got, want) {
		t.Errorf("approval request keys %v, want %v", got, want)
	}
	fc := protocol.FileChangeRequestApprovalParams{ThreadID: "t", TurnID: "u", ItemID: "call_1", StartedAtMs: 1}
	if got := marshal(t, fc); !strings.Contains(got, `"reason":null,"grantRoot":null`) {
		t.Errorf("file change request %s: want explicit nulls", got)
	}
}

// BenchmarkEncodeItemCompleted measures encoding the most common
// authoritative notification.
func BenchmarkEncodeItemCompleted(b *testing.B) {
	n := protocol.ItemCompletedNotification{
		Item: protocol.ThreadItem{AgentMessage: &protocol.AgentMessageItem{ID: "msg_1",
			Text: "Hello from the model, with a sentence or two of text."}, StartedAtMs: ptr(int64(1)), CompletedAtMs: ptr(int64(2))},
		ThreadID: "01a22982-4e6d-7951-b9df-a075c7026089", TurnID: "01a22982-4e94-70f3-9d82-59fa1ac2d598", CompletedAtMs: 2,
	}
	for b.Loop() {
		if _, err := json.Marshal(n); err != nil {
			b.Fatal(err)
		}
	}
}

// '<', '>' and '&' are written as they are, inside unions too.
func TestNoHTMLEscaping(t *testing.T) {
	it := protocol.ThreadItem{AgentMessage: &protocol.AgentMessageItem{ID: "m", Text: "a < b && c > d"}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(it)
	if !strings.Contains(buf.String(), `"a < b && c > d"`) {
		t.Fatalf("escaped: %s", buf.String())
	}
}

// listElem has what encoding/json (the server's encoder) writes in its own
// way: a nil slice as null, an omitted empty field, '<' and '&' as they
// are, map keys sorted, raw JSON compacted, bytes in base64.
type listElem struct {
	Nil   []string           `json:"nil"`
	Empty []string           `json:"empty,omitempty"`
	Text  string             `json:"text"`
	Keys  map[string]int     `json:"keys"`
	Raw   json.RawMessage    `json:"raw"`
	Bytes []byte             `json:"bytes"`
	Inner protocol.List[int] `json:"inner"`
	Obj   protocol.Map[int]  `json:"obj"`
}

// A List or Map inside a value is written by the value's encoder as it
// writes the plain slice or map, with [] or {} for nil.
func TestListAndMapEncodeAsTheirParent(t *testing.T) {
	elems := []listElem{{Text: "<a&b>", Keys: map[string]int{"z": 1, "a": 2}, Raw: json.RawMessage(`{"x" : 1}`), Bytes: []byte("hi")}, {Empty: []string{}}}
	type parent struct {
		L protocol.List[listElem] `json:"l"`
		N protocol.List[listElem] `json:"n"`
		M protocol.Map[listElem]  `json:"m"`
		Z protocol.Map[listElem]  `json:"z"`
	}
	var got bytes.Buffer
	enc := json.NewEncoder(&got)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(parent{L: elems, M: map[string]listElem{"k": elems[0]}}); err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	enc = json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"l": elems, "n": []int{}, "m": map[string]listElem{"k": elems[0]}, "z": map[string]int{}}); err != nil {
		t.Fatal(err)
	}
	// The plain form's keys are sorted (l, m, n, z); the parent's follow
	// its fields (l, n, m, z): compare them decoded, and the text of the
	// list alone.
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(got.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(plain.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"l", "n", "m", "z"} {
		if string(a[k]) != string(b[k]) {
			t.Errorf("%s:\n got %s\nwant %s", k, a[k], b[k])
		}
	}
	if !strings.Contains(got.String(), `"text":"<a&b>"`) || !strings.Contains(got.String(), `"nil":null`) {
		t.Errorf("not the server encoder's own writing: %s", got.String())
	}
}

// depthProbe records how deep in its encoder's output it is written.
type depthProbe struct{ depth *int }

func (p depthProbe) MarshalJSONTo(enc *jsontext.Encoder) error {
	*p.depth = enc.StackDepth()
	return enc.WriteToken(jsontext.Null)
}

// A List's elements are written by the encoder of the value the list is
// in (not by an encoder of their own, whose output the parent would copy
// and check again), with the same result as the plain slice under
// encoding/json's other entry points too: json.Marshal (which escapes
// '<', '>' and '&'), and values it writes in its own way.
func TestListWritesInPlace(t *testing.T) {
	var depth int
	type parent struct {
		L protocol.List[depthProbe] `json:"l"`
	}
	if _, err := json.Marshal(parent{L: protocol.List[depthProbe]{{&depth}}}); err != nil {
		t.Fatal(err)
	}
	if depth != 2 { // inside the parent's object and the list's array
		t.Errorf("the element was written at depth %d of its encoder, want 2 (the parent's)", depth)
	}

	type elem struct {
		Text  string         `json:"text"`
		Bad   string         `json:"bad"`
		Wait  time.Duration  `json:"wait"`
		At    time.Time      `json:"at"`
		Keys  map[string]int `json:"keys"`
		Count int            `json:"count,string"`
	}
	es := []elem{{Text: "<a&b>\u2028", Bad: "\xff", Wait: time.Second, At: time.Date(2026, 12, 2, 1, 2, 3, 4, time.UTC),
		Keys: map[string]int{"b": 1, "a<": 2, "c": 3}, Count: 7}}
	type wrap struct {
		L protocol.List[elem] `json:"l"`
		M protocol.Map[elem]  `json:"m"`
	}
	type plainWrap struct {
		L []elem          `json:"l"`
		M map[string]elem `json:"m"`
	}
	got, err := json.Marshal(wrap{L: es, M: map[string]elem{"z": es[0], "<y>": es[0]}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(plainWrap{L: es, M: map[string]elem{"z": es[0], "<y>": es[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("json.Marshal:\n got %s\nwant %s", got, want)
	}
}
