package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/skills"
)

func typeName(m EventMsg) string { return strings.TrimPrefix(fmt.Sprintf("%T", m), "core.") }

func newTestSession(t *testing.T, c *fakeClient, mod func(*Config)) *Session {
	t.Helper()
	cfg := Config{
		ThreadID:         "thread-1",
		Model:            "test-model",
		Provider:         "test",
		Client:           c,
		Cwd:              t.TempDir(),
		ApprovalPolicy:   policy.ApprovalOnRequest,
		Sandbox:          policy.WorkspaceWrite(),
		StreamMaxRetries: 2,
		Sleep:            func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func userInput(text string) OpUserInput { return OpUserInput{Input: []UserInput{TextInput(text)}} }

// The event sequence of a plain text turn, with the recording order of
// every history item.
func TestTextTurnEventOrder(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "Hel", "lo ", "there")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	ack, err := s.Call(ctx10(t), userInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Outcome != AckStarted || ack.TurnID != ack.SubmissionID {
		t.Fatalf("ack = %+v; want started with turn id = submission id", ack)
	}
	evs := col.waitFor(turnEnded)
	want := []string{
		"SessionConfigured", "TurnStarted",
		"RawResponseItem", "RawResponseItem", // developer instructions, environment context
		"ItemStarted", "RawResponseItem", "ItemCompleted", // user message
		"ItemStarted", "AgentMessageDelta", "AgentMessageDelta", "AgentMessageDelta",
		"ItemCompleted", "AgentMessage", "RawResponseItem",
		"RawResponseCompleted", "TokenCount", "RateLimits", "TurnComplete",
	}
	var got []string
	for _, ev := range evs {
		got = append(got, typeName(ev.Msg))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if i >= 1 && ev.TurnID != ack.TurnID {
			t.Fatalf("event %s has turn %q, want %q", typeName(ev.Msg), ev.TurnID, ack.TurnID)
		}
	}
	done := evs[len(evs)-1].Msg.(TurnComplete)
	if done.LastAgentMessage != "Hello there" || done.Error != nil {
		t.Fatalf("TurnComplete = %+v", done)
	}
	msg := evs[11].Msg.(ItemCompleted).Item.(AgentMessageItem)
	if msg.ID != "msg_1" || msg.Text != "Hello there" {
		t.Fatalf("agent message item = %+v", msg)
	}
	tc := evs[15].Msg.(TokenCount)
	if tc.Info.Total.TotalTokens != 15 || tc.Info.Last.TotalTokens != 15 {
		t.Fatalf("token count = %+v", tc)
	}
	req := c.requests()[0]
	if len(req.Input) != 3 || req.Input[0].Role() != "developer" || !strings.HasPrefix(req.Input[1].MessageText(), "<environment_context>") || req.Input[2].MessageText() != "hi" {
		t.Fatalf("request input = %s", rawList(req.Input))
	}
	if req.Store || !req.Stream || req.PromptCacheKey != "thread-1" || req.ToolChoice != "auto" || !req.ParallelToolCalls {
		t.Fatalf("request = %+v", req)
	}
}

func rawList(items []model.ResponseItem) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, string(it.Raw()))
	}
	return strings.Join(parts, "\n")
}

// A second turn replays the whole history, the model's items byte for byte.
func TestHistoryReplayedExactly(t *testing.T) {
	odd := model.NewResponseItem(map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}, "encrypted_content": "opaque==", "x_unknown": map[string]any{"k": []int{1, 2}}})
	evs := []model.StreamEvent{evCreated(), {Kind: model.EventOutputItemDone, Item: odd}}
	evs = append(evs, textEvents("msg_1", "one")[1:]...)
	c := newFakeClient(t, script{events: evs}, script{events: textEvents("msg_2", "two")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), userInput("first")); err != nil {
		t.Fatal(err)
	}
	col.waitFor(turnEnded)
	if _, err := s.Call(ctx10(t), userInput("second")); err != nil {
		t.Fatal(err)
	}
	col.waitFor(func(ev Event) bool {
		_, ok := ev.Msg.(TurnComplete)
		return ok && ev.Msg.(TurnComplete).LastAgentMessage == "two"
	})
	in := c.requests()[1].Input
	found := false
	for _, it := range in {
		if string(it.Raw()) == string(odd.Raw()) {
			found = true
		}
	}
	if !found {
		t.Fatalf("second request lacks the reasoning item as received:\n%s", rawList(in))
	}
	if last := in[len(in)-1].MessageText(); last != "second" {
		t.Fatalf("last input = %q", last)
	}
}

// A resumed session keeps its history once, in the history: the config
// it was made with does not hold the items for its life.
func TestResumedHistoryHeldOnce(t *testing.T) {
	c := newFakeClient(t)
	prior := []model.ResponseItem{model.NewResponseItem(map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "before"}}})}
	s := newTestSession(t, c, func(cfg *Config) { cfg.History = prior })
	if h := s.History(); len(h) != 1 || h[0].MessageText() != "before" {
		t.Fatalf("history %s", rawList(h))
	}
	if s.cfg.History != nil {
		t.Errorf("the session's config still holds %d history items", len(s.cfg.History))
	}
}

// A raw-item event is never seen before its item is in the history.
func TestRawItemAfterHistory(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "update_plan", map[string]any{"plan": []any{map[string]any{"step": "a", "status": "pending"}}}))},
		script{events: textEvents("msg_1", "done")},
	)
	var s *Session
	var violations []string
	ready := make(chan struct{})
	s = newTestSession(t, c, nil)
	col := collect(t, s, func(ev Event) {
		<-ready
		if r, ok := ev.Msg.(RawResponseItem); ok {
			h := s.History()
			if !slices.ContainsFunc(h, func(it model.ResponseItem) bool { return string(it.Raw()) == string(r.Item.Raw()) }) {
				violations = append(violations, string(r.Item.Raw()))
			}
		}
	})
	close(ready)
	if _, err := s.Call(ctx10(t), userInput("plan")); err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(turnEnded)
	raws := 0
	for _, ev := range evs {
		if isMsg[RawResponseItem](ev) {
			raws++
		}
	}
	if raws < 6 {
		t.Fatalf("only %d raw items seen", raws)
	}
	if len(violations) > 0 {
		t.Fatalf("raw items seen before they were in history: %v", violations)
	}
}

// Tool outputs are recorded in the order the model issued the calls, even
// when the tools finish in another order.
func TestParallelToolOutputsInCallOrder(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_a", "tool_a", map[string]any{"n": 1}), functionCall("call_b", "tool_b", map[string]any{"n": 2}))},
		script{events: textEvents("msg_1", "ok")},
	)
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.DynamicTools = []DynamicToolSpec{{Name: "tool_a"}, {Name: "tool_b"}}
	})
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), userInput("go")); err != nil {
		t.Fatal(err)
	}
	// Both requests are out before either is answered: the tools run in
	// parallel.
	col.waitFor(func(ev Event) bool {
		r, ok := ev.Msg.(DynamicToolCallRequest)
		return ok && r.CallID == "call_b"
	})
	col.waitFor(func(ev Event) bool {
		r, ok := ev.Msg.(DynamicToolCallRequest)
		return ok && r.CallID == "call_a"
	})
	if st, _ := s.Status(); st != StatusWaiting {
		t.Fatalf("status = %v, want waiting", st)
	}
	answer := func(call, text string) {
		if _, err := s.Call(ctx10(t), OpDynamicToolResponse{CallID: call, Success: true, ContentItems: []DynamicContentItem{{Type: "inputText", Text: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	answer("call_b", "B")
	answer("call_a", "A")
	col.waitFor(turnEnded)
	in := c.requests()[1].Input
	var outs []string
	for _, it := range in {
		if it.Type() == model.TypeFunctionCallOutput {
			outs = append(outs, it.CallID())
		}
	}
	if !slices.Equal(outs, []string{"call_a", "call_b"}) {
		t.Fatalf("outputs in order %v", outs)
	}
	// Answering a settled call is refused, not crashed on.
	_, err := s.Call(ctx10(t), OpDynamicToolResponse{CallID: "call_a", Success: true})
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Reason != RejectUnknownCall {
		t.Fatalf("late answer: %v", err)
	}
}

func TestDynamicToolItems(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "lookup", map[string]any{"q": "x"}))},
		script{events: textEvents("msg_1", "ok")},
	)
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.DynamicTools = []DynamicToolSpec{{Name: "lookup", Description: "find", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(isMsg[DynamicToolCallRequest])
	s.Call(ctx10(t), OpDynamicToolResponse{CallID: "call_1", Success: false, ContentItems: []DynamicContentItem{{Type: "inputText", Text: "nope"}}})
	evs := col.waitFor(turnEnded)
	var started, completed *DynamicToolCallItem
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if it, ok := m.Item.(DynamicToolCallItem); ok {
				started = &it
			}
		case ItemCompleted:
			if it, ok := m.Item.(DynamicToolCallItem); ok {
				completed = &it
			}
		}
	}
	if started == nil || started.Status != StatusInProgress || string(started.Arguments) != `{"q":"x"}` {
		t.Fatalf("started = %+v", started)
	}
	if completed == nil || completed.Status != StatusFailed || completed.Success == nil || *completed.Success || completed.DurationMs == nil {
		t.Fatalf("completed = %+v", completed)
	}
	var spec map[string]any
	for _, raw := range c.requests()[0].Tools {
		var m map[string]any
		json.Unmarshal(raw, &m)
		if m["name"] == "lookup" {
			spec = m
		}
	}
	if spec == nil || spec["type"] != "function" || spec["description"] != "find" {
		t.Fatalf("lookup spec = %v", spec)
	}
}

func TestValidateDynamicTools(t *testing.T) {
	cases := []struct {
		specs []DynamicToolSpec
		want  string
	}{
		{[]DynamicToolSpec{{Name: "ok_tool"}, {Name: "x", Namespace: "ns"}}, ""},
		{[]DynamicToolSpec{{Name: "bad name"}}, "invalid tool name"},
		{[]DynamicToolSpec{{Name: "a"}, {Name: "a"}}, "duplicate tool"},
		{[]DynamicToolSpec{{Name: "exec_command"}}, "built-in tool"},
		{[]DynamicToolSpec{{Name: "a", InputSchema: json.RawMessage(`[1]`)}}, "inputSchema must be a JSON object"},
		{[]DynamicToolSpec{{Name: "a", InputSchema: json.RawMessage(`{"type":"string"}`)}}, `type must be "object"`},
		{[]DynamicToolSpec{{Name: "a", Namespace: "b c"}}, "invalid namespace"},
	}
	for _, tc := range cases {
		err := ValidateDynamicTools(tc.specs)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: err = %v, want %q", tc.specs, err, tc.want)
		}
	}
}

func TestUpdatePlan(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "update_plan", map[string]any{"explanation": "why", "plan": []any{
			map[string]any{"step": "read", "status": "completed"}, map[string]any{"step": "write", "status": "in_progress"}}}))},
		script{events: textEvents("msg_1", "ok")},
	)
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	var pu *PlanUpdate
	for _, ev := range evs {
		if m, ok := ev.Msg.(PlanUpdate); ok {
			pu = &m
		}
	}
	want := PlanUpdate{Explanation: "why", Plan: []PlanStep{{"read", PlanCompleted}, {"write", PlanInProgress}}}
	if pu == nil || pu.Explanation != want.Explanation || !slices.Equal(pu.Plan, want.Plan) {
		t.Fatalf("plan update = %+v", pu)
	}
	out := c.requests()[1].Input
	last := out[len(out)-1]
	var f struct{ Output string }
	last.Decode(&f)
	if last.Type() != model.TypeFunctionCallOutput || f.Output != "Plan updated" {
		t.Fatalf("last input = %s", last.Raw())
	}
}

func TestRequestUserInput(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "request_user_input", map[string]any{"questions": []any{
			map[string]any{"id": "color", "header": "Color", "question": "Which?", "options": []any{map[string]any{"label": "red", "description": "warm"}}}}}))},
		script{events: textEvents("msg_1", "ok")},
	)
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(isMsg[UserInputRequest])
	req := evs[len(evs)-1].Msg.(UserInputRequest)
	if len(req.Questions) != 1 || req.Questions[0].ID != "color" || req.Questions[0].Options[0].Label != "red" || !req.Questions[0].IsOther {
		t.Fatalf("request = %+v", req)
	}
	if _, err := s.Call(ctx10(t), OpUserInputAnswer{CallID: "call_1", Answers: map[string][]string{"color": {"red"}}}); err != nil {
		t.Fatal(err)
	}
	col.waitFor(turnEnded)
	in := c.requests()[1].Input
	var f struct{ Output string }
	in[len(in)-1].Decode(&f)
	if f.Output != `{"answers":{"color":{"answers":["red"]}}}` {
		t.Fatalf("output = %s", f.Output)
	}
}

// Steering abandons the in-flight stream: the partial message never
// completes, the steered input is a user message of the same turn, and a
// new request carries it.
func TestSteer(t *testing.T) {
	gate := make(chan struct{})
	evs := textEvents("msg_1", "partial", " never")
	c := newFakeClient(t, script{events: evs, gate: gate, gateAt: 3}, script{events: textEvents("msg_2", "steered reply")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	ack, err := s.Call(ctx10(t), userInput("first"))
	if err != nil {
		t.Fatal(err)
	}
	col.waitFor(isMsg[AgentMessageDelta])
	_, err = s.Call(ctx10(t), OpSteer{Input: []UserInput{TextInput("x")}, ExpectedTurnID: "wrong"})
	if err == nil || err.Error() != fmt.Sprintf("expected active turn id `wrong` but found `%s`", ack.TurnID) {
		t.Fatalf("mismatched steer: %v", err)
	}
	sack, err := s.Call(ctx10(t), OpSteer{Input: []UserInput{TextInput("change of plan")}, ExpectedTurnID: ack.TurnID})
	if err != nil || sack.Outcome != AckSteered || sack.TurnID != ack.TurnID {
		t.Fatalf("steer: %+v %v", sack, err)
	}
	all := col.waitFor(turnEnded)
	for _, ev := range all {
		if m, ok := ev.Msg.(ItemCompleted); ok {
			if a, ok := m.Item.(AgentMessageItem); ok && a.ID == "msg_1" {
				t.Fatalf("abandoned message was completed")
			}
		}
	}
	users := 0
	for _, ev := range all {
		if m, ok := ev.Msg.(ItemCompleted); ok {
			if _, ok := m.Item.(UserMessageItem); ok {
				users++
				if ev.TurnID != ack.TurnID {
					t.Fatalf("steered message in turn %s", ev.TurnID)
				}
			}
		}
	}
	if users != 2 {
		t.Fatalf("%d user messages, want 2", users)
	}
	in := c.requests()[1].Input
	if in[len(in)-1].MessageText() != "change of plan" {
		t.Fatalf("second request ends with %s", in[len(in)-1].Raw())
	}
	if tc := all[len(all)-1].Msg.(TurnComplete); tc.LastAgentMessage != "steered reply" {
		t.Fatalf("turn complete = %+v", tc)
	}
	// Steering with no turn running is refused with the reference's text.
	if _, err := s.Call(ctx10(t), OpSteer{Input: []UserInput{TextInput("x")}}); err == nil || err.Error() != "no active turn to steer" {
		t.Fatalf("steer when idle: %v", err)
	}
	// User input with a turn running steers rather than starting a turn.
	close(gate)
}

func TestUserInputWhileRunningSteers(t *testing.T) {
	gate := make(chan struct{})
	c := newFakeClient(t, script{events: textEvents("msg_1", "a", "b"), gate: gate, gateAt: 3}, script{events: textEvents("msg_2", "c")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	ack, _ := s.Call(ctx10(t), userInput("first"))
	col.waitFor(isMsg[AgentMessageDelta])
	ack2, err := s.Call(ctx10(t), userInput("more"))
	if err != nil || ack2.Outcome != AckSteered || ack2.TurnID != ack.TurnID {
		t.Fatalf("second input: %+v %v", ack2, err)
	}
	col.waitFor(turnEnded)
}

func TestInterruptDuringStream(t *testing.T) {
	gate := make(chan struct{})
	c := newFakeClient(t, script{events: textEvents("msg_1", "a", "b"), gate: gate, gateAt: 3})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), OpInterrupt{}); err == nil || err.Error() != "no active turn to interrupt" {
		t.Fatalf("idle interrupt: %v", err)
	}
	ack, _ := s.Call(ctx10(t), userInput("go"))
	col.waitFor(isMsg[AgentMessageDelta])
	iack, err := s.Call(ctx10(t), OpInterrupt{TurnID: ack.TurnID})
	if err != nil || iack.TurnID != ack.TurnID {
		t.Fatalf("interrupt: %+v %v", iack, err)
	}
	evs := col.waitFor(turnEnded)
	ab, ok := evs[len(evs)-1].Msg.(TurnAborted)
	if !ok || ab.Reason != AbortInterrupted {
		t.Fatalf("last event %+v", evs[len(evs)-1])
	}
	for _, ev := range evs {
		if m, ok := ev.Msg.(ItemCompleted); ok {
			if _, ok := m.Item.(AgentMessageItem); ok {
				t.Fatalf("interrupted message completed")
			}
		}
	}
	h := s.History()
	if !strings.HasPrefix(h[len(h)-1].MessageText(), "<turn_aborted>") {
		t.Fatalf("history ends with %s", h[len(h)-1].Raw())
	}
	// The session is idle and takes a new turn.
	waitStatus(t, s, StatusIdle)
	if _, err := s.Call(ctx10(t), OpInterrupt{}); err == nil {
		t.Fatalf("second interrupt accepted")
	}
}

func waitStatus(t *testing.T, s *Session, want AgentStatus) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		st, ch := s.Status()
		if st == want {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("status %v, want %v", st, want)
		}
	}
}

// An interrupt while a tool waits for the client ends the turn; the call
// still gets an output so the history stays well formed.
func TestInterruptDuringToolWait(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "lookup", map[string]any{}))},
		script{events: textEvents("msg_1", "next turn")},
	)
	s := newTestSession(t, c, func(cfg *Config) { cfg.DynamicTools = []DynamicToolSpec{{Name: "lookup"}} })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(isMsg[DynamicToolCallRequest])
	waitStatus(t, s, StatusWaiting)
	s.Call(ctx10(t), OpInterrupt{})
	evs := col.waitFor(turnEnded)
	if _, ok := evs[len(evs)-1].Msg.(TurnAborted); !ok {
		t.Fatalf("turn ended with %s", typeName(evs[len(evs)-1].Msg))
	}
	waitStatus(t, s, StatusIdle)
	s.Call(ctx10(t), userInput("again"))
	col.waitFor(func(ev Event) bool { m, ok := ev.Msg.(TurnComplete); return ok && m.LastAgentMessage == "next turn" })
	in := c.requests()[1].Input
	calls, outs := 0, 0
	for _, it := range in {
		switch it.Type() {
		case model.TypeFunctionCall:
			calls++
		case model.TypeFunctionCallOutput:
			outs++
		}
	}
	if calls != 1 || outs != 1 {
		t.Fatalf("calls %d outputs %d in %s", calls, outs, rawList(in))
	}
}

func TestRetryableErrorThenSuccess(t *testing.T) {
	c := newFakeClient(t,
		script{connectErr: &model.Error{Kind: model.ErrInternalServer, HTTPStatus: 500, Message: "busy"}},
		script{events: textEvents("msg_1", "a")[:3], err: &model.Error{Kind: model.ErrStreamDisconnected, Message: "cut"}},
		script{events: textEvents("msg_2", "ok")},
	)
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	var retries []StreamError
	for _, ev := range evs {
		if m, ok := ev.Msg.(StreamError); ok {
			retries = append(retries, m)
		}
	}
	if len(retries) != 2 || retries[0].Message != "Reconnecting... 1/2" || retries[1].Message != "Reconnecting... 2/2" || retries[0].Details != "busy" {
		t.Fatalf("retries = %+v", retries)
	}
	if tc := evs[len(evs)-1].Msg.(TurnComplete); tc.Error != nil || tc.LastAgentMessage != "ok" {
		t.Fatalf("turn = %+v", tc)
	}
	if n := len(c.requests()); n != 3 {
		t.Fatalf("%d requests", n)
	}
}

// Every stream that opened reports its rate limits when it ends, after
// its usage; a request that got no stream (HTTP 500) reports none.
func TestRateLimitsAfterEveryOpenedStream(t *testing.T) {
	limits := model.RateLimitSnapshot{LimitID: "codex", Primary: &model.RateLimitWindow{UsedPercent: 12.5}}
	c := newFakeClient(t,
		script{connectErr: &model.Error{Kind: model.ErrInternalServer, HTTPStatus: 500, Message: "busy"}},
		script{events: textEvents("msg_1", "a")[:3], err: &model.Error{Kind: model.ErrStreamDisconnected, Message: "cut"}},
		script{events: textEvents("msg_2", "ok"), limits: &limits},
	)
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	var seq []string
	var last RateLimits
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case StreamError, TokenCount:
			seq = append(seq, typeName(m))
		case RateLimits:
			seq = append(seq, typeName(m))
			last = m
		}
	}
	want := []string{"StreamError", "RateLimits", "StreamError", "TokenCount", "RateLimits"}
	if !slices.Equal(seq, want) {
		t.Fatalf("events %v, want %v", seq, want)
	}
	if last.Snapshot.LimitID != "codex" || last.Snapshot.Primary == nil || last.Snapshot.Primary.UsedPercent != 12.5 {
		t.Fatalf("last snapshot %+v", last.Snapshot)
	}
}

func TestRetriesExhausted(t *testing.T) {
	fail := script{connectErr: &model.Error{Kind: model.ErrInternalServer, HTTPStatus: 500, Message: "busy"}}
	c := newFakeClient(t, fail, fail, fail)
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	tc := evs[len(evs)-1].Msg.(TurnComplete)
	if tc.Error == nil || tc.Error.Kind != KindInternalServerError || tc.Error.HTTPStatus != 500 {
		t.Fatalf("turn = %+v", tc)
	}
	if e := evs[len(evs)-2].Msg.(Error); e.Err != *tc.Error {
		t.Fatalf("error event %+v", e)
	}
	if n := len(c.requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestFatalErrorNotRetried(t *testing.T) {
	c := newFakeClient(t, script{connectErr: &model.Error{Kind: model.ErrInvalidRequest, HTTPStatus: 400, Message: `{"error":"bad"}`}})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	tc := evs[len(evs)-1].Msg.(TurnComplete)
	if tc.Error == nil || tc.Error.Kind != KindOther || tc.Error.Message != `{"error":"bad"}` {
		t.Fatalf("turn = %+v", tc)
	}
	if n := len(c.requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

// A response with end_turn false is followed by another request.
// Token usage is summed per thread and per turn.
func TestTokenUsageSums(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "update_plan", map[string]any{"plan": []any{}}))},
		script{events: textEvents("msg_1", "a")},
		script{events: textEvents("msg_2", "b")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("one"))
	col.waitFor(turnEnded)
	s.Call(ctx10(t), userInput("two"))
	evs := col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "b" })
	counts := eventsOf[TokenCount](evs)
	if len(counts) != 3 {
		t.Fatalf("%d token counts", len(counts))
	}
	if c := counts[1].Info; c.Turn.TotalTokens != 30 || c.Total.TotalTokens != 30 || c.Last.TotalTokens != 15 {
		t.Fatalf("after the first turn: %+v", c)
	}
	if c := counts[2].Info; c.Turn.TotalTokens != 15 || c.Total.TotalTokens != 45 {
		t.Fatalf("in the second turn: %+v", c)
	}
}

func TestEndTurnFalseContinues(t *testing.T) {
	f := false
	first := textEvents("msg_1", "thinking")
	first[len(first)-1] = evCompleted(&f)
	c := newFakeClient(t, script{events: first}, script{events: textEvents("msg_2", "done")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	if tc := evs[len(evs)-1].Msg.(TurnComplete); tc.LastAgentMessage != "done" {
		t.Fatalf("turn = %+v", tc)
	}
}

func TestReasoningItems(t *testing.T) {
	rs := model.NewResponseItem(map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{map[string]any{"type": "summary_text", "text": "s0"}, map[string]any{"type": "summary_text", "text": "s1"}}})
	evs := []model.StreamEvent{evCreated(),
		{Kind: model.EventOutputItemAdded, Item: model.NewResponseItem(map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}})},
		{Kind: model.EventReasoningSummaryPartAdded, ItemID: "rs_1", SummaryIndex: 0},
		{Kind: model.EventReasoningSummaryDelta, ItemID: "rs_1", SummaryIndex: 0, Delta: "s0"},
		{Kind: model.EventReasoningSummaryPartAdded, ItemID: "rs_1", SummaryIndex: 1},
		{Kind: model.EventReasoningSummaryDelta, ItemID: "rs_1", SummaryIndex: 1, Delta: "s1"},
		{Kind: model.EventReasoningTextDelta, ItemID: "rs_1", ContentIndex: 0, Delta: "raw"},
		{Kind: model.EventOutputItemDone, Item: rs},
	}
	evs = append(evs, textEvents("msg_1", "answer")[1:]...)
	c := newFakeClient(t, script{events: evs})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	got := col.waitFor(turnEnded)
	var done *ReasoningItem
	seq := ""
	for _, ev := range got {
		switch m := ev.Msg.(type) {
		case ReasoningSummaryPartAdded:
			seq += fmt.Sprintf("P%d ", m.SummaryIndex)
		case ReasoningSummaryDelta:
			seq += fmt.Sprintf("D%d ", m.SummaryIndex)
		case ReasoningRawDelta:
			seq += fmt.Sprintf("R%d ", m.ContentIndex)
		case ItemCompleted:
			if r, ok := m.Item.(ReasoningItem); ok {
				done = &r
			}
		}
	}
	if seq != "P0 D0 P1 D1 R0 " {
		t.Fatalf("reasoning sequence %q", seq)
	}
	if done == nil || !slices.Equal(done.Summary, []string{"s0", "s1"}) || !slices.Equal(done.Content, []string{"raw"}) {
		t.Fatalf("reasoning item = %+v", done)
	}
}

func TestOverridesPersistAndOutputSchemaDoesNot(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_2", "b")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	m, e := "other-model", "high"
	s.Call(ctx10(t), OpUserInput{Input: []UserInput{TextInput("1")}, Overrides: TurnOverrides{Model: &m, Effort: &e, OutputSchema: json.RawMessage(`{"type":"object"}`)}})
	col.waitFor(turnEnded)
	s.Call(ctx10(t), userInput("2"))
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "b" })
	r := c.requests()
	if r[0].Model != "other-model" || r[0].Reasoning == nil || r[0].Reasoning.Effort != "high" || r[0].Text == nil {
		t.Fatalf("first request %+v", r[0])
	}
	if f := r[0].Text.Format; f == nil || f.Type != "json_schema" || f.Name != "codex_output_schema" || !f.Strict || string(f.Schema) != `{"type":"object"}` {
		t.Fatalf("first request's text.format %+v", f)
	}
	if r[1].Model != "other-model" || r[1].Reasoning.Effort != "high" || r[1].Text != nil {
		t.Fatalf("second request %+v", r[1])
	}
}

func TestModelReroute(t *testing.T) {
	evs := textEvents("msg_1", "a")
	evs[0].Model = "served-model"
	c := newFakeClient(t, script{events: evs})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	got := col.waitFor(turnEnded)
	var seq []string
	for _, ev := range got {
		switch m := ev.Msg.(type) {
		case ModelReroute:
			seq = append(seq, "reroute")
			if m.From != "test-model" || m.To != "served-model" {
				t.Fatalf("reroute %+v", m)
			}
		case Warning:
			seq = append(seq, "warning")
			if m.Message != rerouteWarning {
				t.Fatalf("warning %q", m.Message)
			}
		}
	}
	// As the reference: the reroute, then its warning, once per turn.
	if !slices.Equal(seq, []string{"reroute", "warning"}) {
		t.Fatalf("events %v", seq)
	}
}

func TestModelRerouteIgnoresCase(t *testing.T) {
	evs := textEvents("msg_1", "a")
	evs[0].Model = "TEST-Model"
	c := newFakeClient(t, script{events: evs})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	for _, ev := range col.waitFor(turnEnded) {
		switch ev.Msg.(type) {
		case ModelReroute, Warning:
			t.Fatalf("unexpected %T for the requested model in another case", ev.Msg)
		}
	}
}

func TestCompact(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_s", "the summary")}, script{events: textEvents("msg_2", "b")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("remember the number 42"))
	col.waitFor(turnEnded)
	ack, err := s.Call(ctx10(t), OpCompact{})
	if err != nil || ack.Outcome != AckStarted {
		t.Fatalf("compact: %+v %v", ack, err)
	}
	evs := col.waitFor(func(ev Event) bool { return turnEnded(ev) && ev.TurnID == ack.TurnID })
	var seq []string
	for _, ev := range evs {
		if ev.TurnID == ack.TurnID {
			seq = append(seq, typeName(ev.Msg))
		}
	}
	if !slices.Equal(seq, []string{"TurnStarted", "ItemStarted", "TokenCount", "RateLimits", "ItemCompleted", "ContextCompacted", "TurnComplete"}) {
		t.Fatalf("compaction events %v", seq)
	}
	if len(c.requests()[1].Tools) != 0 {
		t.Fatalf("compaction request offered tools")
	}
	s.Call(ctx10(t), userInput("what number?"))
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "b" })
	in := c.requests()[2].Input
	text := rawList(in)
	if !strings.Contains(text, "the summary") || strings.Contains(text, `"text":"a"`) || !strings.Contains(text, "remember the number 42") {
		t.Fatalf("post-compaction input:\n%s", text)
	}
}

func TestUserShellCommandStandalone(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "seen")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	ack, err := s.Call(ctx10(t), OpShellCommand{Command: "echo out; echo err >&2; exit 3"})
	if err != nil || ack.Outcome != AckStarted {
		t.Fatalf("%+v %v", ack, err)
	}
	evs := col.waitFor(turnEnded)
	var item *CommandExecutionItem
	for _, ev := range evs {
		if m, ok := ev.Msg.(ItemCompleted); ok {
			if it, ok := m.Item.(CommandExecutionItem); ok {
				item = &it
			}
		}
	}
	if item == nil || item.Source != SourceUserShell || item.Status != StatusFailed || *item.ExitCode != 3 || !strings.Contains(*item.AggregatedOutput, "out") || !strings.Contains(*item.AggregatedOutput, "err") {
		t.Fatalf("item = %+v", item)
	}
	s.Call(ctx10(t), userInput("what happened"))
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "seen" })
	if !strings.Contains(rawList(c.requests()[0].Input), "<user_shell_command>") {
		t.Fatalf("model did not get the shell output")
	}
}

func TestInjectAndRollback(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_2", "b")}, script{events: textEvents("msg_3", "c")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("one"))
	col.waitFor(turnEnded)
	s.Call(ctx10(t), userInput("two"))
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "b" })
	if _, err := s.Call(ctx10(t), OpRollback{NumTurns: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx10(t), OpInjectItems{Items: []model.ResponseItem{model.NewTextMessage("", "user", "injected")}}); err != nil {
		t.Fatal(err)
	}
	s.Call(ctx10(t), userInput("three"))
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "c" })
	text := rawList(c.requests()[2].Input)
	if strings.Contains(text, `"two"`) || !strings.Contains(text, `"one"`) || !strings.Contains(text, "injected") {
		t.Fatalf("input after rollback:\n%s", text)
	}
}

// Items injected before a thread's first turn come after its initial
// context (developer instructions, environment) and before the prompt, as
// in the reference; a session rebuilt from that history (a resume) sends
// the same prefix and records no second initial context.
func TestInjectBeforeFirstTurnFollowsInitialContext(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_2", "b")})
	s := newTestSession(t, c, func(cfg *Config) { cfg.DeveloperInstructions = "be brief" })
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), OpInjectItems{Items: []model.ResponseItem{model.NewTextMessage("", "user", "injected note")}}); err != nil {
		t.Fatal(err)
	}
	s.Call(ctx10(t), userInput("the prompt"))
	col.waitFor(turnEnded)
	describe := func(items []model.ResponseItem) []string {
		var out []string
		for _, it := range items {
			text := it.MessageText()
			switch {
			case it.Role() == "developer" && text == "be brief":
				out = append(out, "developer:instructions")
			case it.Role() == "developer":
				out = append(out, "developer")
			case strings.Contains(text, "<environment_context>"):
				out = append(out, "environment")
			default:
				out = append(out, it.Role()+":"+text)
			}
		}
		return out
	}
	first := describe(c.requests()[0].Input)
	want := []string{"developer", "developer:instructions", "environment", "user:injected note", "user:the prompt"}
	if !slices.Equal(first, want) {
		t.Fatalf("first request input %q, want %q", first, want)
	}

	hist := s.History()
	c2 := newFakeClient(t, script{events: textEvents("msg_2", "b")})
	s2 := newTestSession(t, c2, func(cfg *Config) {
		cfg.DeveloperInstructions = "be brief"
		cfg.Cwd = s.TurnContext().Cwd
		cfg.History = hist
	})
	col2 := collect(t, s2, nil)
	s2.Call(ctx10(t), userInput("again"))
	col2.waitFor(turnEnded)
	resumed := describe(c2.requests()[0].Input)
	if len(resumed) < len(want) || !slices.Equal(resumed[:len(want)], want) {
		t.Fatalf("resumed request input %q, want the prefix %q", resumed, want)
	}
}

// The client's metadata for a turn reaches its model requests as the
// reference sends it: flattened into the JSON of
// client_metadata["x-codex-turn-metadata"] (and the header of that name),
// next to the session, thread and turn ids, which it cannot replace; a
// steer replaces it (a patch adds to it) for the next request; the next
// turn starts without it.
func TestClientMetadataForwarded(t *testing.T) {
	gate := make(chan struct{})
	c := newFakeClient(t,
		script{events: textEvents("msg_1", "partial", " never"), gate: gate, gateAt: 3},
		script{events: textEvents("msg_2", "steered")},
		script{events: textEvents("msg_3", "next")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	ack, err := s.Call(ctx10(t), OpUserInput{Input: []UserInput{TextInput("go")},
		ClientMetadata: map[string]string{"fiber_run_id": "fiber-start", "turn_id": "not-mine", "x-codex-window-id": "w"}})
	if err != nil {
		t.Fatal(err)
	}
	col.waitFor(isMsg[AgentMessageDelta])
	if _, err := s.Call(ctx10(t), OpSteer{Input: []UserInput{TextInput("steer")}, ExpectedTurnID: ack.TurnID,
		ClientMetadata: map[string]string{"fiber_run_id": "fiber-steer"}, ClientMetadataPatch: map[string]string{"origin": "gaas"}}); err != nil {
		t.Fatal(err)
	}
	col.waitFor(turnEnded)
	s.Call(ctx10(t), userInput("again"))
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "next" })

	reqs, metas := c.requests(), c.callMetas()
	turnMeta := func(i int) map[string]string {
		t.Helper()
		cm := reqs[i].ClientMetadata
		keys := slices.Sorted(maps.Keys(cm))
		if !slices.Equal(keys, []string{"session_id", "thread_id", "turn_id", "x-codex-turn-metadata"}) {
			t.Fatalf("request %d client_metadata keys %v", i, keys)
		}
		if cm["session_id"] != "thread-1" || cm["thread_id"] != "thread-1" || cm["turn_id"] != metas[i].TurnID {
			t.Fatalf("request %d client_metadata %v", i, cm)
		}
		if metas[i].TurnMetadata != cm["x-codex-turn-metadata"] {
			t.Fatalf("request %d header %q, body %q", i, metas[i].TurnMetadata, cm["x-codex-turn-metadata"])
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(cm["x-codex-turn-metadata"]), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	want := []map[string]string{
		{"session_id": "thread-1", "thread_id": "thread-1", "turn_id": ack.TurnID, "fiber_run_id": "fiber-start"},
		{"session_id": "thread-1", "thread_id": "thread-1", "turn_id": ack.TurnID, "fiber_run_id": "fiber-steer", "origin": "gaas"},
		{"session_id": "thread-1", "thread_id": "thread-1", "turn_id": metas[2].TurnID},
	}
	for i, w := range want {
		if got := turnMeta(i); !maps.Equal(got, w) {
			t.Fatalf("request %d turn metadata %v, want %v", i, got, w)
		}
	}
}

func TestSubmitAfterShutdown(t *testing.T) {
	c := newFakeClient(t)
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	if err := s.Shutdown(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	col.waitFor(isMsg[ShutdownComplete])
	_, err := s.Call(ctx10(t), userInput("x"))
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Reason != RejectShutdown {
		t.Fatalf("after shutdown: %v", err)
	}
	if st, _ := s.Status(); st != StatusShutdown {
		t.Fatalf("status %v", st)
	}
}

// AllEventMsgs lists every type in event.go that implements EventMsg.
func TestAllEventMsgsComplete(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "eventMsg" || fn.Recv == nil {
			continue
		}
		declared = append(declared, fn.Recv.List[0].Type.(*ast.Ident).Name)
	}
	var listed []string
	for _, m := range AllEventMsgs() {
		listed = append(listed, typeName(m))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Fatalf("AllEventMsgs = %v\nevent.go declares %v", listed, declared)
	}
}

// Stream retries wait 200 ms × 2^(n−1), with a jitter in [0.9, 1.1], or
// the delay the server asked for.
func TestRetryBackoffDelays(t *testing.T) {
	var delays []time.Duration
	c := newFakeClient(t,
		script{connectErr: &model.Error{Kind: model.ErrInternalServer, HTTPStatus: 500, Message: "busy"}},
		script{connectErr: &model.Error{Kind: model.ErrInternalServer, HTTPStatus: 500, Message: "busy"}},
		script{connectErr: &model.Error{Kind: model.ErrRateLimited, HTTPStatus: 429, Message: "slow down", RetryAfter: 1500 * time.Millisecond}},
		script{events: textEvents("msg_1", "ok")},
	)
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.StreamMaxRetries = 3
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			delays = append(delays, d)
			return nil
		}
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(turnEnded)
	if len(delays) != 3 {
		t.Fatalf("delays %v", delays)
	}
	for i, base := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond} {
		if lo, hi := base*9/10, base*11/10; delays[i] < lo || delays[i] > hi {
			t.Errorf("retry %d waited %v, want within [%v, %v]", i+1, delays[i], lo, hi)
		}
	}
	if delays[2] != 1500*time.Millisecond {
		t.Errorf("server-requested delay ignored: %v", delays[2])
	}
}

// A skill list cut to fit: one thread-scoped warning, with the reference's
// text, when the list is first given to the model (not again next turn).
func TestSkillsOmittedWarnsOnce(t *testing.T) {
	var many []skills.Skill
	for i := range 100 {
		many = append(many, skills.Skill{Name: fmt.Sprintf("skill-%d", i), Description: strings.Repeat("d", 1000), Path: "/p/SKILL.md", Enabled: true})
	}
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_2", "b")})
	s := newTestSession(t, c, func(cfg *Config) { cfg.Skills = many })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("one"))
	col.waitFor(turnEnded)
	s.Call(ctx10(t), userInput("two"))
	evs := col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "b" })
	var warnings []string
	var seq []string
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case Warning:
			warnings = append(warnings, m.Message)
			seq = append(seq, "Warning")
		case TurnStarted, ItemStarted:
			seq = append(seq, typeName(ev.Msg))
		}
	}
	if !slices.Equal(warnings, []string{skillsOmittedWarning}) {
		t.Fatalf("warnings %q", warnings)
	}
	if len(seq) < 3 || seq[0] != "TurnStarted" || seq[1] != "Warning" || seq[2] != "ItemStarted" {
		t.Fatalf("order %v: want the warning after TurnStarted, before the user message", seq)
	}
}
