package rollout

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/review"
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
		core.McpToolCallItem{ID: "call_5", Server: "srv", Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`),
			Status: core.StatusCompleted, ReadOnly: ptr(true), DurationMs: ptr(int64(3)),
			Result: &core.McpToolResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)},
				StructuredContent: json.RawMessage(`{"ok":true}`), Meta: json.RawMessage(`{"k":"v"}`)}},
		core.McpToolCallItem{ID: "call_6", Server: "srv", Tool: "slow", Arguments: json.RawMessage(`{}`),
			Status: core.StatusFailed, Error: "tool call error: timed out", DurationMs: ptr(int64(2000))},
		core.ContextCompactionItem{ID: "cc1"},
		core.WebSearchItem{ID: "ws_1", Query: "q", Action: core.WebSearchAction{Kind: core.WebSearchSearch, Query: "q", Queries: []string{"q", "r"}}},
		core.WebSearchItem{ID: "ws_2", Query: "https://x", Action: core.WebSearchAction{Kind: core.WebSearchOpenPage, URL: "https://x"}},
		core.WebSearchItem{ID: "ws_3", Query: "'p' in https://x", Action: core.WebSearchAction{Kind: core.WebSearchFindInPage, URL: "https://x", Pattern: "p"}},
		core.WebSearchItem{ID: "ws_4", Action: core.WebSearchAction{Kind: core.WebSearchOther}},
		core.ImageViewItem{ID: "call_7", Path: "/w/shot.png"},
		core.ImageGenerationItem{ID: "ig_1", Status: "completed", RevisedPrompt: "a dot", Result: "iVBORw0KGgo=", SavedPath: "/h/generated_images/t/ig_1.png"},
		core.EnteredReviewModeItem{ID: "rv1", Target: review.Target{Kind: review.Commit, SHA: "abc1234def", Title: "tidy"}, Hint: "commit abc1234: tidy"},
		core.EnteredReviewModeItem{ID: "rv2", Target: review.Target{Kind: review.BaseBranch, Branch: "main"}, Hint: "changes against 'main'"},
		core.EnteredReviewModeItem{ID: "rv3", Target: review.Target{Kind: review.Custom, Instructions: "look"}, Hint: "look"},
		core.EnteredReviewModeItem{ID: "rv4", Target: review.Target{Kind: review.UncommittedChanges}, Hint: "current changes"},
		exitedWith(review.Output{OverallExplanation: "One bug.", OverallCorrectness: "patch is incorrect", OverallConfidenceScore: 0.5,
			Findings: []review.Finding{{Title: "[P1] Fix", Body: "b", ConfidenceScore: 0.9, Priority: ptr(1),
				CodeLocation: review.Location{AbsoluteFilePath: "/w/a.go", LineRange: review.LineRange{Start: 2, End: 3}}}}}),
		exitedWith(review.Output{OverallExplanation: "plain text"}),
		core.ExitedReviewModeItem{ID: "rv7", Review: "The review was interrupted."},
	}
}

// exitedWith is an exitedReviewMode item with out and its text.
func exitedWith(out review.Output) core.ExitedReviewModeItem {
	return core.ExitedReviewModeItem{ID: "rv-" + out.OverallExplanation, Output: &out, Review: out.Render()}
}

// writeEvents writes a format 2 rollout of evs (after a session_meta)
// with the encoder the recorder uses, and returns its path.
func writeEvents(t testing.TB, evs ...core.Event) string {
	t.Helper()
	meta := testMeta("t-codec", baseTime)
	b, err := metaLine(meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if b, err = appendEvent(b, meta.ID, ev.Time, ev); err != nil {
			t.Fatalf("%T: %v", ev.Msg, err)
		}
	}
	p := filepath.Join(t.TempDir(), FileName(baseTime, meta.ID))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// turnEvents wraps msgs in a turn, one millisecond apart.
func turnEvents(id string, msgs ...core.EventMsg) []core.Event {
	at := baseTime
	evs := []core.Event{{TurnID: id, Time: at, Msg: core.TurnStarted{Kind: core.TurnRegular, StartedAt: at}}}
	for _, m := range msgs {
		at = at.Add(time.Millisecond)
		evs = append(evs, core.Event{TurnID: id, Time: at, Msg: m})
	}
	return evs
}

func TestItemRoundTrip(t *testing.T) {
	for _, it := range allItems() {
		p := writeEvents(t, turnEvents("t1", core.ItemStarted{Item: it}, core.ItemCompleted{Item: it}, core.TurnComplete{})...)
		th := mustRead(t, p, ReadOptions{})
		if len(th.Warnings) > 0 || len(th.Turns) != 1 || len(th.Turns[0].Items) != 1 {
			b, _ := os.ReadFile(p)
			t.Fatalf("%T: %+v\n%s", it, th, b)
		}
		if diff := cmp.Diff(it, th.Turns[0].Items[0], cmpopts.EquateEmpty()); diff != "" {
			b, _ := os.ReadFile(p)
			t.Errorf("%T round trip (-want +got):\n%s\n%s", it, diff, b)
		}
	}
}

func TestItemStartedAloneIsSettled(t *testing.T) {
	// A crash leaves a tool call started: it is shown failed, with the
	// state it started with.
	cmd := allItems()[3].(core.CommandExecutionItem)
	cmd.Status, cmd.AggregatedOutput, cmd.ExitCode, cmd.DurationMs = core.StatusInProgress, nil, nil, nil
	p := writeEvents(t, turnEvents("t1", core.ItemStarted{Item: cmd})...)
	th := mustRead(t, p, ReadOptions{})
	want := cmd
	want.Status = core.StatusFailed
	if len(th.Turns) != 1 || th.Turns[0].Status != TurnInterrupted || len(th.Turns[0].Items) != 1 {
		t.Fatalf("%+v", th.Turns)
	}
	if diff := cmp.Diff(core.TurnItem(want), th.Turns[0].Items[0], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTurnEventsRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	httpErr := core.TurnError{Message: "bad", Kind: core.KindHTTPConnectionFailed, HTTPStatus: 502, Details: "eof"}
	plainErr := core.TurnError{Message: "no", Kind: core.KindBadRequest, HTTPStatus: 400}
	u := model.TokenUsage{InputTokens: 1, CachedInputTokens: 2, OutputTokens: 3, ReasoningOutputTokens: 4, TotalTokens: 10}
	ev := func(turn string, d time.Duration, m core.EventMsg) core.Event {
		return core.Event{TurnID: turn, Time: at.Add(d), Msg: m}
	}
	p := writeEvents(t,
		ev("c", 0, core.TurnStarted{Kind: core.TurnCompact, StartedAt: at, ModelContextWindow: 258400}),
		ev("c", time.Second, core.TurnComplete{LastAgentMessage: "done", CompletedAt: at.Add(time.Second), Duration: 1500 * time.Millisecond}),
		ev("f", 2*time.Second, core.TurnStarted{Kind: core.TurnRegular, StartedAt: at.Add(2 * time.Second)}),
		ev("f", 3*time.Second, core.Error{Err: httpErr}),
		ev("f", 3*time.Second, core.TurnComplete{Error: &httpErr, CompletedAt: at.Add(3 * time.Second), Duration: time.Second}),
		ev("g", 4*time.Second, core.TurnStarted{Kind: core.TurnUserShell, StartedAt: at.Add(4 * time.Second)}),
		ev("g", 5*time.Second, core.Error{Err: plainErr}),
		ev("g", 5*time.Second, core.TurnComplete{Error: &plainErr, CompletedAt: at.Add(5 * time.Second), Duration: time.Second}),
		ev("a", 6*time.Second, core.TurnStarted{Kind: core.TurnRegular, StartedAt: at.Add(6 * time.Second)}),
		ev("a", 7*time.Second, core.TokenCount{Info: core.TokenUsageInfo{Total: u, Last: u, ModelContextWindow: 1000}}),
		ev("a", 8*time.Second, core.TurnAborted{Reason: core.AbortShutdown, CompletedAt: at.Add(8 * time.Second), Duration: 2 * time.Second}),
	)
	th := mustRead(t, p, ReadOptions{})
	want := []Turn{
		{ID: "c", Kind: core.TurnCompact, Status: TurnCompleted, StartedAt: at, CompletedAt: at.Add(time.Second), Duration: 1500 * time.Millisecond},
		{ID: "f", Kind: core.TurnRegular, Status: TurnFailed, Error: &httpErr, StartedAt: at.Add(2 * time.Second), CompletedAt: at.Add(3 * time.Second), Duration: time.Second},
		{ID: "g", Kind: core.TurnUserShell, Status: TurnFailed, Error: &plainErr, StartedAt: at.Add(4 * time.Second), CompletedAt: at.Add(5 * time.Second), Duration: time.Second},
		{ID: "a", Kind: core.TurnRegular, Status: TurnInterrupted, StartedAt: at.Add(6 * time.Second), CompletedAt: at.Add(8 * time.Second), Duration: 2 * time.Second},
	}
	if diff := cmp.Diff(want, th.Turns, cmpopts.EquateEmpty(), ignoreOrdinals); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	wantUsage := &TokenUsage{TurnID: "a", Info: core.TokenUsageInfo{Total: u, Last: u, ModelContextWindow: 1000}}
	if diff := cmp.Diff(wantUsage, th.TokenUsage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestEveryEventVariantHasADecision(t *testing.T) {
	for _, msg := range core.AllEventMsgs() {
		if decide(msg) == decisionUnknown {
			t.Errorf("event %T: the rollout neither keeps nor drops it; add it to decide", msg)
		}
		_, err := appendEvent(nil, "t", baseTime, core.Event{TurnID: "t1", Msg: msg})
		_, isStart := msg.(core.ItemStarted)
		_, isEnd := msg.(core.ItemCompleted)
		// Item events need an item; the others must encode as is.
		if Keeps(msg) && err != nil && !isStart && !isEnd {
			t.Errorf("kept event %T does not encode: %v", msg, err)
		}
		if !Keeps(msg) && err == nil {
			t.Errorf("dropped event %T encodes", msg)
		}
	}
}

// referenceEventTypes are the event_msg types agentd writes: all of them
// the reference's.
var referenceEventTypes = map[string]bool{
	"task_started": true, "task_complete": true, "turn_aborted": true, "error": true, "token_count": true,
	"user_message": true, "agent_message": true, "agent_reasoning": true, "agent_reasoning_raw_content": true,
	"exec_command_begin": true, "exec_command_end": true, "patch_apply_begin": true, "patch_apply_end": true,
	"dynamic_tool_call_request": true, "dynamic_tool_call_response": true, "item_started": true, "item_completed": true,
	"context_compacted": true, "thread_rolled_back": true, "entered_review_mode": true, "exited_review_mode": true,
}

// snakeKey is a reference field name, or an agentd one.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func TestRecordsUseTheReferenceSchema(t *testing.T) {
	var evs []core.Event
	for i, it := range allItems() {
		evs = append(evs, turnEvents(string(rune('a'+i)), core.ItemStarted{Item: it}, core.ItemCompleted{Item: it},
			core.Error{Err: core.TurnError{Message: "m", Kind: core.KindOther}},
			core.TokenCount{Info: core.TokenUsageInfo{ModelContextWindow: 5}},
			core.TurnAborted{Reason: core.AbortInterrupted})...)
	}
	p := writeEvents(t, evs...)
	b, _ := os.ReadFile(p)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var env map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &env); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		for k := range env {
			if k != "timestamp" && k != "type" && k != "payload" && k != "turnId" {
				t.Errorf("envelope member %q: %s", k, l)
			}
		}
		var payload map[string]json.RawMessage
		if err := json.Unmarshal(env["payload"], &payload); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		for k := range payload {
			if !snakeKey.MatchString(k) {
				t.Errorf("payload member %q is not the reference's spelling: %s", k, l)
			}
		}
		var typ string
		_ = json.Unmarshal(payload["type"], &typ)
		if string(env["type"]) == `"event_msg"` && !referenceEventTypes[typ] {
			t.Errorf("event type %q is not the reference's: %s", typ, l)
		}
	}
}

func TestSessionMetaRoundTrip(t *testing.T) {
	for _, src := range []string{"vscode", "cli", "exec", "appServer", "subAgentReview", "subAgentThreadSpawn", "unknown"} {
		m := SessionMeta{
			ID: "t1", CreatedAt: baseTime, Cwd: "/w", ModelProvider: "mock", Model: "m", Effort: "high", Source: src,
			ThreadSource: "ts", Originator: "o", CLIVersion: "1.2.3", Git: &GitInfo{SHA: "abc", Branch: "main", OriginURL: "https://x"},
			ForkedFromID: "t0", BaseInstructions: "base", DeveloperInstructions: "dev",
		}
		payload, err := model.MarshalNoEscape(metaToWire(m))
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMeta(payload)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s\n%s", src, diff, payload)
		}
	}
}

func TestTurnContextRoundTrip(t *testing.T) {
	for _, sb := range []policy.SandboxPolicy{
		policy.ReadOnly(),
		{Mode: policy.SandboxWorkspaceWrite, WritableRoots: []string{"/a"}, NetworkAccess: true, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true},
		{Mode: policy.SandboxDangerFullAccess},
		{Mode: policy.SandboxExternal, NetworkAccess: true},
	} {
		tc := TurnContext{Cwd: "/w", Model: "m", Effort: "low", Summary: "concise", ApprovalPolicy: policy.ApprovalOnRequest, Sandbox: sb}
		b, _ := json.Marshal(turnContextToWire("t1", tc))
		var w wireTurnContext
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc, w.turnContext(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("(-want +got):\n%s\n%s", diff, b)
		}
	}
}

func TestEventTypesAreCovered(t *testing.T) {
	// Every kept variant takes part in a round trip above.
	seen := map[reflect.Type]bool{}
	for _, m := range []core.EventMsg{core.TurnStarted{}, core.TurnComplete{}, core.TurnAborted{}, core.Error{},
		core.TokenCount{}, core.ItemStarted{}, core.ItemCompleted{}} {
		seen[reflect.TypeOf(m)] = true
	}
	for _, msg := range core.AllEventMsgs() {
		if Keeps(msg) && !seen[reflect.TypeOf(msg)] {
			t.Errorf("kept event %T has no round-trip case", msg)
		}
	}
}

// A turn's collaboration mode is kept with its settings, in the
// reference's shape, and read back: a client's own instructions as
// theirs, agentd's text as agentd's. A mode nobody chose is not written.
func TestTurnContextModeRoundTrip(t *testing.T) {
	for _, m := range []core.CollaborationMode{
		{}, {Kind: core.ModePlan}, {Kind: core.ModeDefault}, {Kind: core.ModePlan, Instructions: "plan my way"},
	} {
		tc := TurnContext{Cwd: "/w", Model: "m", Effort: "high", Mode: m}
		b, _ := json.Marshal(turnContextToWire("t1", tc))
		var w wireTurnContext
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		if got := w.turnContext().Mode; got != m {
			t.Errorf("mode %+v read back as %+v: %s", m, got, b)
		}
		var raw struct {
			Mode *struct {
				Mode     string `json:"mode"`
				Settings struct {
					Model, ReasoningEffort string
					DeveloperInstructions  *string `json:"developer_instructions"`
				} `json:"settings"`
			} `json:"collaboration_mode"`
		}
		_ = json.Unmarshal(b, &raw)
		switch {
		case m.Kind == "" && raw.Mode != nil:
			t.Errorf("an unchosen mode was written: %s", b)
		case m.Kind != "" && (raw.Mode == nil || raw.Mode.Mode != string(m.Kind) || raw.Mode.Settings.DeveloperInstructions == nil || *raw.Mode.Settings.DeveloperInstructions != m.Text()):
			t.Errorf("mode %+v written as %s", m, b)
		}
	}
	// The reference's records: a default mode without instructions is
	// no choice; its own text for plan mode reads as plan mode with
	// agentd's text.
	for rec, want := range map[string]core.CollaborationMode{
		`{"mode":"default","settings":{"model":"m","reasoning_effort":null,"developer_instructions":null}}`:         {},
		`{"mode":"plan","settings":{"model":"m","reasoning_effort":null,"developer_instructions":"# Plan Mode …"}}`: {Kind: core.ModePlan},
		`{"mode":"default","settings":{"model":"m","developer_instructions":"# Collaboration Mode: Default …"}}`:    {Kind: core.ModeDefault},
		`{"mode":"pair","settings":{"model":"m"}}`:                                                                  {},
	} {
		var w wireTurnContext
		if err := json.Unmarshal([]byte(`{"cwd":"/w","model":"m","collaboration_mode":`+rec+`}`), &w); err != nil {
			t.Fatal(err)
		}
		if got := w.turnContext().Mode; got != want {
			t.Errorf("%s read as %+v, want %+v", rec, got, want)
		}
	}
}

// "result" is an object in an McpToolCall item and a base64 string in an
// ImageGeneration item: each is read by its item's type, and the other
// shape is an error naming the type, not a lost result.
func TestTypedItemResultByType(t *testing.T) {
	cases := []struct {
		item string
		want core.TurnItem
	}{
		{`{"type":"ImageGeneration","id":"ig","status":"completed","result":"aGk="}`,
			core.ImageGenerationItem{ID: "ig", Status: "completed", Result: "aGk="}},
		{`{"type":"McpToolCall","id":"c","server":"s","tool":"t","arguments":null,"status":"completed","result":{"content":[]}}`,
			core.McpToolCallItem{ID: "c", Server: "s", Tool: "t", Status: core.StatusCompleted, Result: &core.McpToolResult{Content: []json.RawMessage{}}}},
		{`{"type":"McpToolCall","id":"c","server":"s","tool":"t","arguments":null,"status":"failed","result":null,"error":{"message":"no"}}`,
			core.McpToolCallItem{ID: "c", Server: "s", Tool: "t", Status: core.StatusFailed, Error: "no"}},
		{`{"type":"ImageGeneration","id":"ig","status":"completed","result":{"content":[]}}`, nil},
		{`{"type":"McpToolCall","id":"c","server":"s","tool":"t","arguments":{},"status":"completed","result":"aGk="}`, nil},
	}
	for _, tc := range cases {
		b := []byte(`{"type":"item_completed","thread_id":"th","turn_id":"tu","item":` + tc.item + `}`)
		r, err := decodeTypedItem(b, true)
		if tc.want == nil {
			if err == nil || !strings.Contains(err.Error(), "result") {
				t.Errorf("%s: decoded %+v, err %v; want a result error", tc.item, r.item, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(r.item, tc.want) {
			t.Errorf("%s:\n got %#v, %v\nwant %#v", tc.item, r.item, err, tc.want)
		}
	}
}
