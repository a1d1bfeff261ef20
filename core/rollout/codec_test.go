package rollout

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

func ptr[T any](v T) *T { return &v }

// allItems has one value of every turn item kind, with every field set.
func allItems() []core.TurnItem {
	return []core.TurnItem{
		core.UserMessageItem{ID: "u1", ClientID: "c1", Content: []core.UserInput{
			{Kind: core.InputText, Text: "hi $x", TextElements: []core.TextElement{{Start: 3, End: 5, Placeholder: "$x"}}},
			{Kind: core.InputImage, ImageURL: "data:image/png;base64,AA", Detail: "high"},
			{Kind: core.InputLocalImage, Path: "/tmp/a.png"},
			{Kind: core.InputSkill, Name: "sk", Path: "/skills/sk"},
			{Kind: core.InputMention, Name: "app", Path: "app://x"},
		}},
		core.AgentMessageItem{ID: "msg_1", Text: "hello <b>&", Phase: "final_answer"},
		core.ReasoningItem{ID: "rs_1", Summary: []string{"s1", "s2"}, Content: []string{"raw"}},
		core.CommandExecutionItem{ID: "call_1", Command: "ls -la", Argv: []string{"ls", "-la"}, Cwd: "/w",
			Status: core.StatusCompleted, Source: core.SourceUnifiedExecStart, ProcessID: "p1",
			Actions: []policy.CommandAction{
				{Kind: policy.ActionListFiles, Command: "ls -la", Path: "."},
				{Kind: policy.ActionRead, Command: "cat a", Name: "a", Path: "/w/a"},
				{Kind: policy.ActionSearch, Command: "rg x", Query: "x", Path: "/w"},
			},
			AggregatedOutput: ptr("out\n"), ExitCode: ptr(0), DurationMs: ptr(int64(12))},
		core.CommandExecutionItem{ID: "call_2", Command: "rm", Cwd: "/w", Status: core.StatusDeclined, Source: core.SourceAgent},
		core.FileChangeItem{ID: "call_3", Status: core.StatusFailed, Changes: []core.FileChange{
			{Path: "/w/a", Kind: core.ChangeAdd, Diff: "hello\n"},
			{Path: "/w/b", Kind: core.ChangeUpdate, MovePath: "/w/c", Diff: "@@ -1 +1 @@\n-a\n+b\n"},
			{Path: "/w/d", Kind: core.ChangeDelete},
		}},
		core.PlanItem{ID: "t-plan", Text: "1. do\n2. done"},
		core.DynamicToolCallItem{ID: "call_4", Tool: "lookup", Namespace: "ns", Arguments: json.RawMessage(`{"q":1}`),
			Status: core.StatusCompleted, Success: ptr(true), DurationMs: ptr(int64(7)),
			ContentItems: []core.DynamicContentItem{{Type: "inputText", Text: "r"}, {Type: "inputImage", ImageURL: "u"}, {Type: "inputAudio", AudioURL: "a"}}},
		core.ContextCompactionItem{ID: "cc1"},
	}
}

func TestItemRoundTrip(t *testing.T) {
	for _, it := range allItems() {
		b, err := MarshalItem(it)
		if err != nil {
			t.Fatalf("%T: %v", it, err)
		}
		got, err := UnmarshalItem(b)
		if err != nil {
			t.Fatalf("%T: %v (%s)", it, err, b)
		}
		if diff := cmp.Diff(it, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%T round trip (-want +got):\n%s\n%s", it, diff, b)
		}
	}
}

func TestItemEncodingIsTaggedCamelCase(t *testing.T) {
	b, err := MarshalItem(allItems()[3])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != "commandExecution" || m["aggregatedOutput"] != "out\n" || m["processId"] != "p1" {
		t.Fatalf("unexpected encoding: %s", b)
	}
	if _, ok := m["commandActions"].([]any); !ok {
		t.Fatalf("commandActions missing: %s", b)
	}
}

func TestUnknownItemAndEventTypes(t *testing.T) {
	if _, err := UnmarshalItem([]byte(`{"type":"hologram","id":"x"}`)); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("unknown item: %v", err)
	}
	if _, err := UnmarshalEvent([]byte(`{"type":"futureThing","x":1}`)); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("unknown event: %v", err)
	}
	if _, err := UnmarshalEvent([]byte(`{"x":1}`)); err == nil || errors.Is(err, ErrUnknownType) {
		t.Fatalf("untyped event: %v", err)
	}
}

// keptEvents has one value of every kept event variant.
func keptEvents() []core.EventMsg {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	e := core.TurnError{Message: "bad", Kind: core.KindHTTPConnectionFailed, HTTPStatus: 502, Details: "eof"}
	u := model.TokenUsage{InputTokens: 1, CachedInputTokens: 2, OutputTokens: 3, ReasoningOutputTokens: 4, TotalTokens: 10}
	out := []core.EventMsg{
		core.TurnStarted{Kind: core.TurnCompact, StartedAt: at, ModelContextWindow: 258400},
		core.TurnComplete{LastAgentMessage: "done", CompletedAt: at, Duration: 1500 * time.Millisecond},
		core.TurnComplete{Error: &e, CompletedAt: at, Duration: time.Second},
		core.TurnAborted{Reason: core.AbortShutdown, CompletedAt: at, Duration: 2 * time.Millisecond},
		core.Error{Err: e},
		core.TokenCount{Info: core.TokenUsageInfo{Total: u, Last: u, ModelContextWindow: 1000}},
		core.ContextCompacted{},
	}
	for _, it := range allItems() {
		out = append(out, core.ItemStarted{Item: it}, core.ItemCompleted{Item: it})
	}
	return out
}

func TestEventRoundTrip(t *testing.T) {
	seen := map[reflect.Type]bool{}
	for _, msg := range keptEvents() {
		seen[reflect.TypeOf(msg)] = true
		b, err := MarshalEvent(msg)
		if err != nil {
			t.Fatalf("%T: %v", msg, err)
		}
		got, err := UnmarshalEvent(b)
		if err != nil {
			t.Fatalf("%T: %v (%s)", msg, err, b)
		}
		if diff := cmp.Diff(msg, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%T round trip (-want +got):\n%s\n%s", msg, diff, b)
		}
	}
	// Every kept variant is covered by the round trip above.
	for _, msg := range core.AllEventMsgs() {
		if Keeps(msg) && !seen[reflect.TypeOf(msg)] {
			t.Errorf("kept event %T has no round-trip case", msg)
		}
	}
}

func TestEveryEventVariantHasADecision(t *testing.T) {
	for _, msg := range core.AllEventMsgs() {
		if decide(msg) == decisionUnknown {
			t.Errorf("event %T: the rollout neither keeps nor drops it; add it to decide", msg)
		}
		_, err := MarshalEvent(msg)
		if Keeps(msg) && err != nil {
			// Item events need an item; the others must encode as is.
			if _, isItem := msg.(core.ItemStarted); !isItem {
				if _, isItem := msg.(core.ItemCompleted); !isItem {
					t.Errorf("kept event %T does not encode: %v", msg, err)
				}
			}
		}
		if !Keeps(msg) && err == nil {
			t.Errorf("dropped event %T encodes", msg)
		}
	}
}

func TestParseLineFastAndSlowAgree(t *testing.T) {
	at := time.Date(2026, 11, 29, 23, 1, 17, 115_000_000, time.UTC)
	for _, turnID := range []string{"", "turn-1", `we"ird\id`} {
		b := appendLine(nil, at, LineEventMsg, turnID, []byte(`{"type":"contextCompacted"}`))
		b = b[:len(b)-1]
		got, err := parseLine(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			Timestamp, Type, TurnID string
			Payload                 json.RawMessage
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if string(got.Timestamp) != "2026-11-29T23:01:17.115Z" || got.Type != want.Type || got.TurnID != want.TurnID ||
			string(got.Payload) != string(want.Payload) {
			t.Errorf("parseLine(%s) = %+v, want %+v", b, got, want)
		}
	}
	// Another writer's field order takes the slow path.
	got, err := parseLine([]byte(`{"type":"thread_name","payload":{"name":"n"},"timestamp":"2026-01-01T00:00:00.000Z"}`), nil)
	if err != nil || got.Type != LineThreadName || string(got.Payload) != `{"name":"n"}` {
		t.Fatalf("slow path: %+v %v", got, err)
	}
}

func TestCapOutputKeepsHeadAndTail(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("HEAD")
	for i := 0; sb.Len() < 200_000; i++ {
		sb.WriteString("é line " + string(rune('a'+i%26)) + "\n")
	}
	sb.WriteString("TAIL")
	big := sb.String()
	it := capItem(core.CommandExecutionItem{ID: "c", AggregatedOutput: &big}, 64<<10).(core.CommandExecutionItem)
	out := *it.AggregatedOutput
	if len(out) > 64<<10+200 || len(out) < 64<<10-10 {
		t.Fatalf("capped length %d", len(out))
	}
	if out[:4] != "HEAD" || out[len(out)-4:] != "TAIL" {
		t.Fatalf("head or tail lost")
	}
	if !utf8.ValidString(out) {
		t.Fatalf("cut inside a rune")
	}
	if !strings.Contains(out, "bytes of output omitted") {
		t.Fatalf("no note of the omission")
	}
	small := "short"
	if got := capItem(core.CommandExecutionItem{AggregatedOutput: &small}, 64<<10).(core.CommandExecutionItem); *got.AggregatedOutput != small {
		t.Fatalf("small output changed")
	}
}
