package core

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// fakeMCP is one server, "srv", with tools echo, fail, boom, big and
// slow. core/mcp tests the real client; this one tests the core's use of
// it.
type fakeMCP struct {
	slowStarted chan struct{}
	slowEnded   chan error
}

func newFakeMCP() *fakeMCP {
	return &fakeMCP{slowStarted: make(chan struct{}, 1), slowEnded: make(chan error, 1)}
}

func (f *fakeMCP) tool(name string) mcp.Tool {
	ro := name != "boom" && name != "write"
	return mcp.Tool{Server: "srv", Name: name, Qualified: "mcp__srv__" + name, Description: name + " tool",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`), ReadOnly: &ro}
}

func (f *fakeMCP) Tools(context.Context) []mcp.Tool {
	var out []mcp.Tool
	for _, n := range []string{"ask", "big", "boom", "echo", "fail", "slow", "write"} {
		out = append(out, f.tool(n))
	}
	return out
}

func (f *fakeMCP) Lookup(name, namespace string) (mcp.Tool, bool) {
	if namespace != "" {
		name = strings.TrimSuffix(namespace, "__") + "__" + name
	}
	for _, t := range f.Tools(context.Background()) {
		if t.Qualified == name {
			return t, true
		}
	}
	return mcp.Tool{}, false
}

func (f *fakeMCP) Call(ctx context.Context, server, tool string, args json.RawMessage, hooks mcp.CallHooks) (*mcp.CallResult, error) {
	progress := hooks.Progress
	text := func(s string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return b
	}
	switch tool {
	case "echo":
		progress(mcp.Progress{Progress: 1, Message: "working"})
		progress(mcp.Progress{Progress: 2, Total: 4})
		return &mcp.CallResult{Content: []json.RawMessage{
			text("got " + string(args)),
			json.RawMessage(`{"type":"image","data":"AAAA","mimeType":"image/png"}`),
			json.RawMessage(`{"type":"resource","resource":{"uri":"file:///r","text":"resource text"}}`),
		}, StructuredContent: json.RawMessage(`{"ok":true}`)}, nil
	case "fail":
		return &mcp.CallResult{Content: []json.RawMessage{text("it failed")}, IsError: true}, nil
	case "write":
		return &mcp.CallResult{Content: []json.RawMessage{text("written")}}, nil
	case "ask":
		ans := hooks.Elicit(ctx, mcp.Elicitation{Message: "Which colour?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"c":{"type":"string"}}}`)})
		return &mcp.CallResult{Content: []json.RawMessage{text(ans.Action + " " + string(ans.Content))}}, nil
	case "boom":
		return nil, errors.New("timed out awaiting tools/call after 2s")
	case "big":
		return &mcp.CallResult{Content: []json.RawMessage{text(strings.Repeat("a", 2000) + strings.Repeat("z", 2000))}}, nil
	case "slow":
		f.slowStarted <- struct{}{}
		<-ctx.Done()
		f.slowEnded <- ctx.Err()
		return nil, ctx.Err()
	}
	return nil, errors.New("no such tool")
}

func withMCP(f *fakeMCP) func(*Config) { return func(c *Config) { c.MCP = f } }

// rawOutput is the output the model got for callID, as JSON.
func rawOutput(t *testing.T, req *model.Request, callID string) string {
	t.Helper()
	for _, it := range req.Input {
		if it.IsToolOutput() && it.CallID() == callID {
			var f struct{ Output json.RawMessage }
			_ = it.Decode(&f)
			return string(f.Output)
		}
	}
	t.Fatalf("no output for %s in %s", callID, rawList(req.Input))
	return ""
}

func mcpItems(evs []Event) (started, completed []McpToolCallItem) {
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if it, ok := m.Item.(McpToolCallItem); ok {
				started = append(started, it)
			}
		case ItemCompleted:
			if it, ok := m.Item.(McpToolCallItem); ok {
				completed = append(completed, it)
			}
		}
	}
	return
}

// A call runs as an item: started, the server's progress, completed with
// the result; the model gets the content (text, image, resource text)
// after the wall time, and sees the MCP tools among its tools.
func TestMCPToolCall(t *testing.T) {
	c := newFakeClient(t, script{events: callEvents(functionCall("call_1", "mcp__srv__echo", map[string]any{"x": 1}))}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, withMCP(newFakeMCP()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)

	var order []string
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if _, ok := m.Item.(McpToolCallItem); ok {
				order = append(order, "started")
			}
		case McpToolCallProgress:
			order = append(order, "progress:"+m.Message)
		case ItemCompleted:
			if _, ok := m.Item.(McpToolCallItem); ok {
				order = append(order, "completed")
			}
		}
	}
	if got := strings.Join(order, " "); got != "started progress:working progress:2/4 completed" {
		t.Errorf("events: %s", got)
	}
	started, completed := mcpItems(evs)
	st, done := started[0], completed[0]
	if st.ID != "call_1" || st.Server != "srv" || st.Tool != "echo" || string(st.Arguments) != `{"x":1}` || st.Status != StatusInProgress || st.ReadOnly == nil || !*st.ReadOnly {
		t.Errorf("started %+v", st)
	}
	if done.Status != StatusCompleted || done.Result == nil || len(done.Result.Content) != 3 || string(done.Result.StructuredContent) != `{"ok":true}` || done.DurationMs == nil || done.Error != "" {
		t.Errorf("completed %+v", done)
	}

	reqs := c.requests()
	var offered []string
	for _, spec := range reqs[0].Tools {
		var f struct{ Name string }
		_ = json.Unmarshal(spec, &f)
		if strings.HasPrefix(f.Name, "mcp__") {
			offered = append(offered, f.Name)
		}
	}
	if strings.Join(offered, ",") != "mcp__srv__ask,mcp__srv__big,mcp__srv__boom,mcp__srv__echo,mcp__srv__fail,mcp__srv__slow,mcp__srv__write" {
		t.Errorf("offered %v", offered)
	}
	var parts []model.ContentPart
	if err := json.Unmarshal([]byte(rawOutput(t, reqs[1], "call_1")), &parts); err != nil {
		t.Fatal(err)
	}
	if len(parts) != 4 || !strings.HasPrefix(parts[0].Text, "Wall time: ") || parts[1].Text != `got {"x":1}` ||
		parts[2].Type != "input_image" || parts[2].ImageURL != "data:image/png;base64,AAAA" || parts[3].Text != "resource text" {
		t.Errorf("output %+v", parts)
	}
}

// The namespace form of a call (the reference's) reaches the same tool.
func TestMCPToolNamespacedCall(t *testing.T) {
	call := model.NewResponseItem(map[string]any{"type": "function_call", "id": "fc_1", "status": "completed", "name": "echo", "namespace": "mcp__srv", "arguments": "{}", "call_id": "call_1"})
	c := newFakeClient(t, script{events: callEvents(call)}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, withMCP(newFakeMCP()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	_, completed := mcpItems(col.waitFor(turnEnded))
	if len(completed) != 1 || completed[0].Tool != "echo" {
		t.Fatalf("completed %+v", completed)
	}
}

func TestMCPToolFailures(t *testing.T) {
	bad := model.NewResponseItem(map[string]any{"type": "function_call", "id": "fc_bad", "status": "completed", "name": "mcp__srv__echo", "arguments": "not json", "call_id": "call_bad"})
	c := newFakeClient(t,
		script{events: callEvents(bad, functionCall("call_fail", "mcp__srv__fail", map[string]any{}), functionCall("call_boom", "mcp__srv__boom", map[string]any{}))},
		script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, func(cfg *Config) { cfg.MCP = newFakeMCP(); cfg.ApprovalPolicy = policy.ApprovalNever })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	_, completed := mcpItems(col.waitFor(turnEnded))
	byID := map[string]McpToolCallItem{}
	for _, it := range completed {
		byID[it.ID] = it
	}
	if _, ok := byID["call_bad"]; ok {
		t.Error("arguments that are not JSON made an item")
	}
	if f := byID["call_fail"]; f.Status != StatusFailed || f.Result == nil || f.Error != "" {
		t.Errorf("tool error: %+v", f)
	}
	if b := byID["call_boom"]; b.Status != StatusFailed || b.Result != nil || b.Error != "tool call error: tool call failed for `srv/boom`: timed out awaiting tools/call after 2s" {
		t.Errorf("call error: %+v", b)
	}
	req := c.requests()[1]
	if out := outputOf(t, req, "call_bad"); !strings.HasPrefix(out, "err: the arguments must be a JSON object") {
		t.Errorf("bad arguments output %q", out)
	}
	if out := rawOutput(t, req, "call_boom"); !strings.Contains(out, "tool call failed for `srv/boom`") {
		t.Errorf("call error output %s", out)
	}
	if out := rawOutput(t, req, "call_fail"); !strings.Contains(out, "it failed") {
		t.Errorf("tool error output %s", out)
	}
}

// A huge answer is cut to tool_output_token_limit, head and tail kept.
func TestMCPToolOutputTruncated(t *testing.T) {
	c := newFakeClient(t, script{events: callEvents(functionCall("call_1", "mcp__srv__big", map[string]any{}))}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, func(cfg *Config) { cfg.MCP = newFakeMCP(); cfg.ToolOutputTokenLimit = 100 })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(turnEnded)
	var parts []model.ContentPart
	_ = json.Unmarshal([]byte(rawOutput(t, c.requests()[1], "call_1")), &parts)
	text := parts[1].Text
	if len(text) >= 4000 || len(text) > 600 || !strings.HasPrefix(text, "aaaa") || !strings.HasSuffix(text, "zzzz") {
		t.Errorf("output of %d bytes: %.80q…", len(text), text)
	}
}

// An interrupt cancels a running call at the server; the item is left to
// the turn's end, as other tools' are.
func TestMCPToolInterrupted(t *testing.T) {
	f := newFakeMCP()
	c := newFakeClient(t, script{events: callEvents(functionCall("call_1", "mcp__srv__slow", map[string]any{}))})
	s := newTestSession(t, c, withMCP(f))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	<-f.slowStarted
	s.Call(ctx10(t), OpInterrupt{})
	evs := col.waitFor(turnEnded)
	if _, ok := evs[len(evs)-1].Msg.(TurnAborted); !ok {
		t.Fatalf("turn ended with %s", typeName(evs[len(evs)-1].Msg))
	}
	if err := <-f.slowEnded; !errors.Is(err, context.Canceled) {
		t.Errorf("the call ended with %v", err)
	}
	if _, completed := mcpItems(evs); len(completed) != 0 {
		t.Errorf("completed %+v", completed)
	}
}

// A tool not marked read-only asks first (under any policy but never):
// declined, it does not run and the item fails; accepted for the session,
// it runs, and runs again without asking.
func TestMCPToolApproval(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "mcp__srv__write", map[string]any{"path": "a"}))},
		script{events: callEvents(functionCall("call_2", "mcp__srv__write", map[string]any{"path": "b"}))},
		script{events: callEvents(functionCall("call_3", "mcp__srv__write", map[string]any{"path": "c"}))},
		script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, func(cfg *Config) { cfg.MCP = newFakeMCP(); cfg.ApprovalPolicy = policy.ApprovalOnRequest })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	req := eventsOf[McpToolApprovalRequest](col.waitFor(isMsg[McpToolApprovalRequest]))[0]
	if req.CallID != "call_1" || req.Server != "srv" || req.Tool != "write" || string(req.Arguments) != `{"path":"a"}` || req.Description != "write tool" {
		t.Fatalf("request %+v", req)
	}
	if _, err := s.Call(ctx10(t), OpMcpElicitationAnswer{CallID: "call_1", Action: "decline"}); err != nil {
		t.Fatal(err)
	}
	col.waitFor(func(ev Event) bool { r, ok := ev.Msg.(McpToolApprovalRequest); return ok && r.CallID == "call_2" })
	if _, err := s.Call(ctx10(t), OpMcpElicitationAnswer{CallID: "call_2", Action: "accept", Meta: json.RawMessage(`{"persist":"session"}`)}); err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(turnEnded)
	if n := len(eventsOf[McpToolApprovalRequest](evs)); n != 2 {
		t.Errorf("%d approval requests, want 2 (the third call was allowed for the session)", n)
	}
	_, completed := mcpItems(evs)
	byID := map[string]McpToolCallItem{}
	for _, it := range completed {
		byID[it.ID] = it
	}
	if d := byID["call_1"]; d.Status != StatusFailed || d.Error != "the MCP tool call was not run: the user declined it" || d.Result != nil {
		t.Errorf("declined %+v", d)
	}
	for _, id := range []string{"call_2", "call_3"} {
		if a := byID[id]; a.Status != StatusCompleted || a.Result == nil {
			t.Errorf("%s %+v", id, a)
		}
	}
	if out := rawOutput(t, c.requests()[1], "call_1"); !strings.Contains(out, "the user declined it") {
		t.Errorf("declined output %s", out)
	}
}

// A server's elicitation becomes a request of the turn; the answer goes
// back to the server. Under the never policy it is declined unasked.
func TestMCPElicitation(t *testing.T) {
	for _, never := range []bool{false, true} {
		c := newFakeClient(t, script{events: callEvents(functionCall("call_1", "mcp__srv__ask", map[string]any{}))}, script{events: textEvents("msg_1", "done")})
		s := newTestSession(t, c, func(cfg *Config) {
			cfg.MCP = newFakeMCP()
			if never {
				cfg.ApprovalPolicy = policy.ApprovalNever
			}
		})
		col := collect(t, s, nil)
		s.Call(ctx10(t), userInput("go"))
		if !never {
			req := eventsOf[McpElicitationRequest](col.waitFor(isMsg[McpElicitationRequest]))[0]
			if req.Server != "srv" || req.Message != "Which colour?" || !strings.Contains(string(req.RequestedSchema), `"c"`) || req.CallID == "" {
				t.Fatalf("request %+v", req)
			}
			if _, err := s.Call(ctx10(t), OpMcpElicitationAnswer{CallID: req.CallID, Action: "accept", Content: json.RawMessage(`{"c":"red"}`)}); err != nil {
				t.Fatal(err)
			}
		}
		evs := col.waitFor(turnEnded)
		want := `accept {"c":"red"}`
		if never {
			want = "decline "
			if n := len(eventsOf[McpElicitationRequest](evs)); n != 0 {
				t.Errorf("never: %d requests", n)
			}
		}
		_, completed := mcpItems(evs)
		if len(completed) != 1 || !strings.Contains(string(completed[0].Result.Content[0]), strings.ReplaceAll(want, `"`, `\"`)) {
			t.Errorf("never=%v: completed %+v", never, completed)
		}
	}
}

// The resource tools' specs, built at first use, are what the program's
// start used to build: a function tool of each name, with its parameters.
func TestResourceToolSpecs(t *testing.T) {
	required := map[string][]string{listResourcesTool: {}, listTemplatesTool: {}, readResourceTool: {"server", "uri"}}
	specs := resourceToolSpecs()
	if len(specs) != len(required) {
		t.Fatalf("%d specs", len(specs))
	}
	for name, raw := range specs {
		var spec struct {
			Type, Name, Description string
			Strict                  *bool
			Parameters              struct {
				Type                 string
				Properties           map[string]struct{ Type, Description string }
				Required             []string
				AdditionalProperties *bool
			}
		}
		if err := json.Unmarshal(raw, &spec); err != nil {
			t.Fatal(err)
		}
		p := spec.Parameters
		if spec.Type != "function" || spec.Name != name || spec.Description == "" || spec.Strict == nil || *spec.Strict ||
			p.Type != "object" || p.AdditionalProperties == nil || *p.AdditionalProperties || !slices.Equal(p.Required, required[name]) ||
			p.Properties["server"].Type != "string" || len(p.Properties) != 2 {
			t.Errorf("%s: %s", name, raw)
		}
	}
	if &resourceToolSpecs()[readResourceTool][0] != &specs[readResourceTool][0] {
		t.Error("the specs are built again at each use")
	}
}

// An elicitation that reaches a turn already ending (the server asks as
// its call's answer is on its way and the turn finishes) is cancelled
// unasked: no request goes out, and the session is not left waiting on a
// turn that is over. One on a turn still running is asked.
func TestMCPElicitationAfterTheTurnEnds(t *testing.T) {
	s := newTestSession(t, newFakeClient(t), func(cfg *Config) { cfg.MCP = newFakeMCP() })
	col := collect(t, s, nil)
	newTurn := func(id string) (*turn, *[]bool) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		var waits []bool
		return &turn{id: id, subID: id, ctx: ctx, cancel: cancel, done: make(chan struct{}), pending: map[string]chan any{},
			onWaiting: func(w bool) { waits = append(waits, w) }}, &waits
	}
	ending, waits := newTurn("t-ending")
	ending.markEnding() // as finishTurn ends a turn
	ending.cancel()
	if res := s.elicit(ctx10(t), ending, "srv", mcp.Elicitation{Message: "too late"}); res.Action != "cancel" {
		t.Fatalf("an elicitation on an ending turn: %+v", res)
	}
	if len(*waits) != 0 || ending.waiting() {
		t.Fatalf("the ending turn waits: %v", *waits)
	}
	// The same on a running turn is asked (and cancelled here with its
	// call), after nothing from the first.
	running, waits := newTurn("t-running")
	callCtx, cancelCall := context.WithCancel(context.Background())
	done := make(chan mcp.ElicitResult)
	go func() { done <- s.elicit(callCtx, running, "srv", mcp.Elicitation{Message: "in time"}) }()
	evs := col.waitFor(isMsg[McpElicitationRequest])
	if reqs := eventsOf[McpElicitationRequest](evs); len(reqs) != 1 || reqs[0].Message != "in time" {
		t.Fatalf("requests %+v", reqs)
	}
	cancelCall()
	if res := <-done; res.Action != "cancel" || !slices.Equal(*waits, []bool{true, false}) {
		t.Fatalf("running turn: %+v, waits %v", res, *waits)
	}
}
