package projection

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/schema/refschema"
)

const tid = "thread-1"
const turnID = "turn-1"

var t0 = time.Unix(1795992735, 0)

func ev(msg core.EventMsg) core.Event {
	return core.Event{TurnID: turnID, Time: t0, Msg: msg}
}

// names renders outputs as short strings: methods, "request:<method>",
// "resolved:<callID>", and status changes with their status.
func names(outs []Output) []string {
	var s []string
	for _, o := range outs {
		switch {
		case o.Request != nil:
			s = append(s, "request:"+o.Request.Method)
		case o.Resolved != nil:
			s = append(s, "resolved:"+o.Resolved.CallID)
		case o.Method == "thread/status/changed":
			b, _ := json.Marshal(o.Params.(protocol.ThreadStatusChangedNotification).Status)
			s = append(s, "status"+string(b))
		default:
			s = append(s, o.Method)
		}
	}
	return s
}

// validate checks every output against the reference schema.
func validate(t *testing.T, outs []Output) {
	t.Helper()
	v := refschema.Validator(t)
	for _, o := range outs {
		var msg map[string]any
		switch {
		case o.Request != nil:
			msg = map[string]any{"id": 0, "method": o.Request.Method, "params": o.Request.Params}
		case o.Resolved != nil:
			msg = map[string]any{"method": "serverRequest/resolved", "params": protocol.ServerRequestResolvedNotification{ThreadID: tid, RequestID: protocol.IntID(0)}, "emittedAtMs": 1}
		default:
			if o.Audience == RawEvents {
				continue // not in the reference schema
			}
			msg = map[string]any{"method": o.Method, "params": o.Params, "emittedAtMs": 1}
		}
		b, err := json.Marshal(msg)
		if err != nil {
			t.Fatalf("marshal %v: %v", names([]Output{o}), err)
		}
		if err := v.ValidateServerMessage(b); err != nil {
			t.Errorf("%s does not validate: %v\n%s", names([]Output{o}), err, b)
		}
	}
}

func apply(p *Thread, evs ...core.EventMsg) []Output {
	var out []Output
	for _, m := range evs {
		out = append(out, p.Apply(ev(m))...)
	}
	return out
}

func expect(t *testing.T, got []Output, want ...string) {
	t.Helper()
	if g := names(got); !slices.Equal(g, want) {
		t.Fatalf("outputs\n got %q\nwant %q", g, want)
	}
}

// Every core event variant has a decision: Apply never reaches the panic.
func TestEveryEventHasDecision(t *testing.T) {
	for _, m := range core.AllEventMsgs() {
		p := NewThread(tid, protocol.StatusIdle())
		p.Apply(ev(core.TurnStarted{StartedAt: t0}))
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%T: %v", m, r)
				}
			}()
			switch m.(type) {
			case core.ItemStarted, core.ItemCompleted:
				m = core.ItemStarted{Item: core.AgentMessageItem{ID: "x"}}
			case core.Error:
				m = core.Error{Err: core.TurnError{Message: "x", Kind: core.KindOther}}
			}
			p.Apply(ev(m))
		}()
	}
}

func TestTextTurn(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	user := core.UserMessageItem{ID: "u1", Content: []core.UserInput{core.TextInput("hi")}}
	msg := core.AgentMessageItem{ID: "msg_1", Text: "Hello"}
	out := apply(p,
		core.SessionConfigured{},
		core.TurnStarted{StartedAt: t0},
		core.ItemStarted{Item: user}, core.ItemCompleted{Item: user},
		core.ItemStarted{Item: core.AgentMessageItem{ID: "msg_1"}},
		core.AgentMessageDelta{ItemID: "msg_1", Delta: "Hel"},
		core.AgentMessageDelta{ItemID: "msg_1", Delta: "lo"},
		core.ItemCompleted{Item: msg}, core.AgentMessage{ItemID: "msg_1", Message: "Hello"},
		core.TokenCount{Info: core.TokenUsageInfo{ModelContextWindow: 1000}},
		core.TurnComplete{LastAgentMessage: "Hello", CompletedAt: t0.Add(time.Second), Duration: time.Second},
	)
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started",
		"item/started", "item/completed", "item/started", "item/agentMessage/delta", "item/agentMessage/delta",
		"item/completed", "thread/tokenUsage/updated", `status{"type":"idle"}`, "turn/completed")
	validate(t, out)
	done := out[len(out)-1].Params.(protocol.TurnNotification).Turn
	if done.Status != protocol.TurnCompleted || done.ItemsView != protocol.ItemsSummary || len(done.Items) != 1 || done.Items[0].ID() != "msg_1" || *done.DurationMs != 1000 || *done.StartedAt != t0.Unix() {
		t.Fatalf("turn/completed turn = %+v", done)
	}
	b, _ := json.Marshal(out[2].Params)
	for _, key := range []string{`"clientId":null`, `"text_elements":[]`, `"startedAtMs":`, `"completedAtMs":null`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("user message item/started lacks %s: %s", key, b)
		}
	}
	b, _ = json.Marshal(out[4].Params)
	for _, key := range []string{`"phase":null`, `"memoryCitation":null`, `"moderation":null`, `"delivery":null`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("agent message item lacks %s: %s", key, b)
		}
	}
}

func cmdItem(status core.ItemStatus, src core.CommandSource) core.CommandExecutionItem {
	return core.CommandExecutionItem{ID: "call_1", Command: "/bin/bash -lc 'echo hi'", Cwd: "/w", Status: status, Source: src,
		Actions: []policy.CommandAction{{Kind: policy.ActionUnknown, Command: "echo hi"}}}
}

var approval = core.ExecApprovalRequest{CallID: "call_1", Command: []string{"/bin/bash", "-lc", "echo hi"}, Cwd: "/w",
	Actions: []policy.CommandAction{{Kind: policy.ActionUnknown, Command: "echo hi"}}, ProposedAmendment: []string{"echo", "hi"},
	AvailableDecisions: []core.DecisionKind{core.DecisionAccept, core.DecisionAcceptWithAmendment, core.DecisionCancel}}

// Command approval: status first, then item/started, then the request; the
// flag clears when the command starts.
func TestCommandApprovalAccept(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	out := apply(p, core.TurnStarted{StartedAt: t0}, approval, core.ItemStarted{Item: cmdItem(core.StatusInProgress, core.SourceAgent)})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", `status{"type":"active","activeFlags":["waitingOnApproval"]}`, "item/started", "request:item/commandExecution/requestApproval")
	validate(t, out)
	req := out[4].Request
	b, _ := json.Marshal(req.Params)
	want := `{"kind":"command","threadId":"thread-1","turnId":"turn-1","itemId":"call_1","startedAtMs":1795992735000,"environmentId":"local","command":"/bin/bash -lc 'echo hi'","cwd":"/w","commandActions":[{"type":"unknown","command":"echo hi"}],"proposedExecpolicyAmendment":["echo","hi"],"availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo","hi"]}},"cancel"]}`
	if string(b) != want {
		t.Fatalf("request params\n got %s\nwant %s", b, want)
	}
	if len(p.PendingRequests()) != 1 {
		t.Fatalf("pending = %v", p.PendingRequests())
	}
	ans, ok := p.Answered("call_1")
	expect(t, ans, "resolved:call_1")
	if !ok {
		t.Fatal("answer not taken")
	}
	if _, ok := p.Answered("call_1"); ok {
		t.Fatal("second answer taken")
	}
	out = apply(p, core.ExecCommandBegin{CallID: "call_1"}, core.ExecCommandOutputDelta{CallID: "call_1", Chunk: []byte("hi\n")},
		core.ExecCommandEnd{CallID: "call_1"}, core.ItemCompleted{Item: cmdItem(core.StatusCompleted, core.SourceUnifiedExecStart)})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "item/commandExecution/outputDelta", "item/completed")
	validate(t, out)
	op, err := req.Decode(json.RawMessage(`{"decision":{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo"]}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := op.(core.OpExecApproval); a.Decision.Kind != core.DecisionAcceptWithAmendment || !slices.Equal(a.Decision.ExecPolicyAmendment, []string{"echo"}) {
		t.Fatalf("decoded %+v", op)
	}
}

// Decline: resolved, then the declined item, then the flag clears.
func TestCommandApprovalDecline(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	apply(p, core.TurnStarted{StartedAt: t0}, approval, core.ItemStarted{Item: cmdItem(core.StatusInProgress, core.SourceAgent)})
	out, _ := p.Answered("call_1")
	out = append(out, apply(p, core.ItemCompleted{Item: cmdItem(core.StatusDeclined, core.SourceAgent)})...)
	expect(t, out, "resolved:call_1", "item/completed", `status{"type":"active","activeFlags":[]}`)
	validate(t, out)
}

// An interrupt with a request pending: idle, turn/completed interrupted,
// then serverRequest/resolved (after turn/completed, as the reference).
func TestInterruptWithPendingRequest(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	apply(p, core.TurnStarted{StartedAt: t0}, approval, core.ItemStarted{Item: cmdItem(core.StatusInProgress, core.SourceAgent)})
	out := apply(p, core.TurnAborted{Reason: core.AbortInterrupted, CompletedAt: t0})
	expect(t, out, `status{"type":"idle"}`, "turn/completed", "resolved:call_1")
	validate(t, out)
	turn := out[1].Params.(protocol.TurnNotification).Turn
	if turn.Status != protocol.TurnInterrupted || turn.ItemsView != protocol.ItemsNotLoaded || len(turn.Items) != 0 || turn.Error != nil {
		t.Fatalf("turn = %+v", turn)
	}
	if len(p.PendingRequests()) != 0 {
		t.Fatal("requests still pending after the turn ended")
	}
	if _, ok := p.Answered("call_1"); ok {
		t.Fatal("late answer accepted")
	}
}

// Patch approval: item/started first, then the status, then the request.
func TestPatchApproval(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	fc := core.FileChangeItem{ID: "call_1", Status: core.StatusInProgress, Changes: []core.FileChange{{Path: "/w/hello.txt", Kind: core.ChangeAdd, Diff: "hello\n"}}}
	out := apply(p, core.TurnStarted{StartedAt: t0}, core.ItemStarted{Item: fc}, core.PatchApprovalRequest{CallID: "call_1", Changes: fc.Changes})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", "item/started", `status{"type":"active","activeFlags":["waitingOnApproval"]}`, "request:item/fileChange/requestApproval")
	validate(t, out)
	b, _ := json.Marshal(out[4].Request.Params)
	if !strings.Contains(string(b), `"reason":null,"grantRoot":null`) {
		t.Fatalf("patch request %s", b)
	}
	ans, _ := p.Answered("call_1")
	fc.Status = core.StatusCompleted
	ans = append(ans, apply(p, core.PatchApplyBegin{CallID: "call_1"}, core.PatchApplyEnd{CallID: "call_1"}, core.ItemCompleted{Item: fc}, core.TurnDiff{UnifiedDiff: "diff --git a/hello.txt b/hello.txt\n"})...)
	expect(t, ans, "resolved:call_1", `status{"type":"active","activeFlags":[]}`, "item/completed", "turn/diff/updated")
	validate(t, ans)
	op, err := out[4].Request.Decode(json.RawMessage(`{"decision":"decline"}`), nil)
	if err != nil || op.(core.OpPatchApproval).Decision.Kind != core.DecisionDecline {
		t.Fatalf("decoded %+v %v", op, err)
	}
	op, _ = out[4].Request.Decode(nil, errors.New("client broke"))
	if op.(core.OpPatchApproval).Decision.Kind != core.DecisionFailed {
		t.Fatalf("error answer decoded as %+v", op)
	}
}

func TestUserInputRequest(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	out := apply(p, core.TurnStarted{StartedAt: t0}, core.UserInputRequest{CallID: "call_1", Questions: []core.Question{{ID: "q", Header: "H", Question: "?", IsOther: true, Options: []core.QuestionOption{{Label: "a", Description: "b"}}}}})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", `status{"type":"active","activeFlags":["waitingOnUserInput"]}`, "request:item/tool/requestUserInput")
	validate(t, out)
	ans, _ := p.Answered("call_1")
	expect(t, ans, "resolved:call_1", `status{"type":"active","activeFlags":[]}`)
	op, err := out[3].Request.Decode(json.RawMessage(`{"answers":{"q":{"answers":["a"]}}}`), nil)
	if err != nil || !slices.Equal(op.(core.OpUserInputAnswer).Answers["q"], []string{"a"}) {
		t.Fatalf("decoded %+v %v", op, err)
	}
}

func TestDynamicToolCall(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	item := core.DynamicToolCallItem{ID: "call_1", Tool: "lookup", Arguments: json.RawMessage(`{"q":1}`), Status: core.StatusInProgress}
	out := apply(p, core.TurnStarted{StartedAt: t0}, core.ItemStarted{Item: item}, core.DynamicToolCallRequest{CallID: "call_1", Tool: "lookup", Arguments: json.RawMessage(`{"q":1}`)})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", "item/started", "request:item/tool/call")
	validate(t, out)
	ans, _ := p.Answered("call_1")
	expect(t, ans, "resolved:call_1")
	op, err := out[3].Request.Decode(json.RawMessage(`{"contentItems":[{"type":"inputText","text":"x"}],"success":true}`), nil)
	r := op.(core.OpDynamicToolResponse)
	if err != nil || !r.Success || r.ContentItems[0].Text != "x" {
		t.Fatalf("decoded %+v %v", op, err)
	}
}

// An MCP call: item/started, the server's progress, item/completed with
// the result (or the error), each valid against the reference schema.
func TestMcpToolCall(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	ro := true
	item := core.McpToolCallItem{ID: "call_1", Server: "srv", Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), Status: core.StatusInProgress, ReadOnly: &ro}
	done := item
	dur := int64(4)
	done.Status, done.DurationMs = core.StatusCompleted, &dur
	done.Result = &core.McpToolResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)}, StructuredContent: json.RawMessage(`{"n":1}`)}
	failed := item
	failed.ID, failed.Status, failed.Error = "call_2", core.StatusFailed, "tool call error: boom"
	out := apply(p, core.TurnStarted{StartedAt: t0}, core.ItemStarted{Item: item}, core.McpToolCallProgress{ItemID: "call_1", Message: "working"},
		core.ItemCompleted{Item: done}, core.ItemStarted{Item: failed}, core.ItemCompleted{Item: failed})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", "item/started", "item/mcpToolCall/progress", "item/completed", "item/started", "item/completed")
	validate(t, out)
	b, _ := json.Marshal(out[4].Params)
	for _, want := range []string{`"type":"mcpToolCall"`, `"server":"srv"`, `"tool":"echo"`, `"status":"completed"`, `"arguments":{"text":"hi"}`,
		`"result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":1}`, `"durationMs":4`, `"readOnlyHint":true`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("item/completed lacks %s: %s", want, b)
		}
	}
	b, _ = json.Marshal(out[6].Params)
	if !strings.Contains(string(b), `"status":"failed"`) || !strings.Contains(string(b), `"error":{"message":"tool call error: boom"}`) {
		t.Errorf("failed item: %s", b)
	}
	b, _ = json.Marshal(out[3].Params)
	if string(b) != `{"threadId":"thread-1","turnId":"turn-1","itemId":"call_1","message":"working"}` {
		t.Errorf("progress: %s", b)
	}
}

// An MCP tool approval and a server's form are mcpServer/elicitation/request
// (valid against the reference schema), with the waiting flags; answers
// decode to the core's Op; a form the server gave up on is withdrawn.
func TestMcpElicitationRequests(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	item := core.McpToolCallItem{ID: "call_1", Server: "srv", Tool: "write", Arguments: json.RawMessage(`{"path":"a"}`), Status: core.StatusInProgress}
	out := apply(p, core.TurnStarted{StartedAt: t0}, core.ItemStarted{Item: item},
		core.McpToolApprovalRequest{CallID: "call_1", Server: "srv", Tool: "write", Description: "Write a file.", Arguments: json.RawMessage(`{"path":"a"}`)})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", "item/started",
		`status{"type":"active","activeFlags":["waitingOnApproval"]}`, "request:mcpServer/elicitation/request")
	validate(t, out)
	b, _ := json.Marshal(out[4].Request.Params)
	for _, want := range []string{`"serverName":"srv"`, `"mode":"form"`, `"message":"Allow the srv MCP server to run tool \"write\"?"`,
		`"requestedSchema":{"properties":{},"type":"object"}`, `"codex_approval_kind":"mcp_tool_call"`, `"tool_params":{"path":"a"}`, `"turnId":"turn-1"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("approval request lacks %s: %s", want, b)
		}
	}
	op, err := out[4].Request.Decode(json.RawMessage(`{"action":"accept","content":{},"_meta":{"persist":"session"}}`), nil)
	if a, ok := op.(core.OpMcpElicitationAnswer); err != nil || !ok || a.CallID != "call_1" || a.Action != "accept" || string(a.Meta) != `{"persist":"session"}` {
		t.Fatalf("decoded %+v %v", op, err)
	}
	if _, err := out[4].Request.Decode(json.RawMessage(`{"action":"maybe"}`), nil); err == nil {
		t.Error("an unknown action decoded")
	}
	ans, _ := p.Answered("call_1")
	expect(t, ans, "resolved:call_1", `status{"type":"active","activeFlags":[]}`)

	out = apply(p, core.McpElicitationRequest{CallID: "el-1", Server: "srv", Message: "Which colour?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"c":{"type":"string"}}}`)})
	expect(t, out, `status{"type":"active","activeFlags":["waitingOnUserInput"]}`, "request:mcpServer/elicitation/request")
	validate(t, out)
	out = apply(p, core.McpElicitationEnded{CallID: "el-1"})
	expect(t, out, "resolved:el-1", `status{"type":"active","activeFlags":[]}`)
	if _, ok := p.Answered("el-1"); ok {
		t.Error("a withdrawn request took an answer")
	}
}

// A failed turn: systemError, the error, then turn/completed failed.
func TestFailedTurn(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	terr := core.TurnError{Message: `{"error":"bad"}`, Kind: core.KindOther, HTTPStatus: 400}
	out := apply(p, core.TurnStarted{StartedAt: t0},
		core.StreamError{Message: "Reconnecting... 1/2", Kind: core.KindStreamDisconnected, Details: "cause"},
		core.Error{Err: terr}, core.TurnComplete{Error: &terr, CompletedAt: t0})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", "error", `status{"type":"systemError"}`, "error", "turn/completed")
	validate(t, out)
	retry, _ := json.Marshal(out[2].Params)
	if want := `{"error":{"message":"Reconnecting... 1/2","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":null}},"additionalDetails":"cause","misalignment":null},"willRetry":true,"threadId":"thread-1","turnId":"turn-1"}`; string(retry) != want {
		t.Fatalf("retry error\n got %s\nwant %s", retry, want)
	}
	final, _ := json.Marshal(out[4].Params)
	if want := `{"error":{"message":"{\"error\":\"bad\"}","codexErrorInfo":"other","additionalDetails":null,"misalignment":null},"willRetry":false,"threadId":"thread-1","turnId":"turn-1"}`; string(final) != want {
		t.Fatalf("final error\n got %s\nwant %s", final, want)
	}
	turn := out[5].Params.(protocol.TurnNotification).Turn
	if turn.Status != protocol.TurnFailed || turn.Error == nil || len(turn.Items) != 0 {
		t.Fatalf("turn = %+v", turn)
	}
	// The next turn leaves systemError.
	out = apply(p, core.TurnStarted{StartedAt: t0})
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started")
}

// Output split inside a UTF-8 sequence is joined, never mangled.
func TestOutputDeltaUTF8(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	apply(p, core.TurnStarted{StartedAt: t0})
	word := []byte("héllo→")
	var text string
	for i := range word {
		for _, o := range p.Apply(ev(core.ExecCommandOutputDelta{CallID: "c", Chunk: word[i : i+1]})) {
			text += o.Params.(protocol.ItemDeltaNotification).Delta
		}
	}
	if text != "héllo→" {
		t.Fatalf("joined %q", text)
	}
}

func TestRawEventsAudience(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	out := apply(p, core.RawResponseCompleted{ResponseID: "r", RawUsage: json.RawMessage(`{"input_tokens":1}`)})
	if len(out) != 1 || out[0].Audience != RawEvents || out[0].Method != "rawResponse/completed" {
		t.Fatalf("raw outputs %+v", out)
	}
}

func TestPlanAndReasoningShapes(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	out := apply(p, core.TurnStarted{StartedAt: t0},
		core.PlanUpdate{Plan: []core.PlanStep{{Step: "a", Status: core.PlanInProgress}}},
		core.ItemStarted{Item: core.ReasoningItem{ID: "rs_1"}},
		core.ReasoningSummaryPartAdded{ItemID: "rs_1"},
		core.ReasoningSummaryDelta{ItemID: "rs_1", Delta: "x"},
		core.ReasoningRawDelta{ItemID: "rs_1", Delta: "y"},
		core.ItemCompleted{Item: core.ReasoningItem{ID: "rs_1", Summary: []string{"x"}, Content: []string{"y"}}},
		core.PatchPreview{CallID: "call_1", Changes: []core.FileChange{{Path: "a.txt", Kind: core.ChangeUpdate, Diff: "@@"}}},
		core.Warning{Message: "careful"},
		core.ModelReroute{From: "a", To: "b"},
	)
	validate(t, out)
	plan, _ := json.Marshal(out[2].Params)
	if want := `{"threadId":"thread-1","turnId":"turn-1","explanation":null,"plan":[{"step":"a","status":"inProgress"}]}`; string(plan) != want {
		t.Fatalf("plan %s", plan)
	}
}

// An approval asked after the item started (a rerun outside the sandbox)
// is sent at once.
func TestApprovalAfterItemStarted(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	out := apply(p, core.TurnStarted{StartedAt: t0}, core.ItemStarted{Item: cmdItem(core.StatusInProgress, core.SourceUnifiedExecStart)}, approval)
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started", "item/started", `status{"type":"active","activeFlags":["waitingOnApproval"]}`, "request:item/commandExecution/requestApproval")
	validate(t, out)
}

// A review turn's turn/started follows its enteredReviewMode item; a
// review that ends before that item still starts before it completes.
func TestReviewTurnStartFollowsEnteredItem(t *testing.T) {
	entered := core.EnteredReviewModeItem{ID: "rv", Hint: "current changes"}
	p := NewThread(tid, protocol.StatusIdle())
	out := apply(p, core.TurnStarted{Kind: core.TurnReview, StartedAt: t0},
		core.ItemStarted{Item: entered}, core.ItemCompleted{Item: entered},
		core.ItemCompleted{Item: core.ExitedReviewModeItem{ID: "x", Review: "Fine."}},
		core.TurnComplete{})
	validate(t, out)
	want := []string{"item/started", "item/completed", `status{"type":"active","activeFlags":[]}`, "turn/started",
		"item/completed", `status{"type":"idle"}`, "turn/completed"}
	if got := names(out); !slices.Equal(got, want) {
		t.Fatalf("review turn: %v, want %v", got, want)
	}

	p = NewThread(tid, protocol.StatusIdle())
	out = apply(p, core.TurnStarted{Kind: core.TurnReview, StartedAt: t0}, core.TurnAborted{Reason: core.AbortInterrupted})
	want = []string{`status{"type":"active","activeFlags":[]}`, "turn/started", `status{"type":"idle"}`, "turn/completed"}
	if got := names(out); !slices.Equal(got, want) {
		t.Fatalf("review aborted at once: %v, want %v", got, want)
	}
}
