package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/model/demo"
)

// start serves the demo and returns a client for it.
func start(t *testing.T) (*model.Client, string) {
	t.Helper()
	url, stop, err := demo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return model.NewClient(model.Provider{ID: "demo", BaseURL: url, WireAPI: "responses"}), url
}

// result is one streamed response, put together.
type result struct {
	kinds     []model.StreamEventKind
	summary   string
	text      string // concatenated text deltas
	input     string // concatenated custom tool input deltas
	items     []model.ResponseItem
	completed model.StreamEvent
}

func run(t *testing.T, c *model.Client, input ...model.ResponseItem) result {
	t.Helper()
	req := &model.Request{Model: "demo", Input: input, ToolChoice: "auto", Stream: true}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Stream(ctx, req, model.CallMeta{ThreadID: "thr_demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var r result
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		r.kinds = append(r.kinds, ev.Kind)
		switch ev.Kind {
		case model.EventReasoningSummaryDelta:
			r.summary += ev.Delta
		case model.EventOutputTextDelta:
			r.text += ev.Delta
		case model.EventCustomToolCallInputDelta:
			r.input += ev.Delta
		case model.EventOutputItemDone:
			r.items = append(r.items, ev.Item)
		case model.EventCompleted:
			r.completed = ev
		}
	}
	if len(r.items) != 2 || r.items[0].Type() != "reasoning" {
		t.Fatalf("items = %v, want reasoning then one more", r.items)
	}
	if r.summary == "" {
		t.Error("no reasoning summary")
	}
	if r.completed.Model != "" {
		t.Errorf("served by %q, want the requested model", r.completed.Model)
	}
	return r
}

func user(text string) model.ResponseItem { return model.NewTextMessage("", "user", text) }

func envContext() model.ResponseItem {
	return user("<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>")
}

func TestHelpReply(t *testing.T) {
	c, _ := start(t)
	r := run(t, c, model.NewTextMessage("", "developer", "be brief"), envContext(), user("hello there"))
	msg := r.items[1]
	if msg.Type() != "message" || msg.Role() != "assistant" || msg.MessageText() != r.text {
		t.Fatalf("message %s does not match the deltas %q", msg.Raw(), r.text)
	}
	for _, want := range []string{"agentd", "run: ls -la", "patch: notes.txt", "plan:", "You wrote: \u201chello there\u201d"} {
		if !strings.Contains(r.text, want) {
			t.Errorf("reply lacks %q:\n%s", want, r.text)
		}
	}
	deltas := 0
	for _, k := range r.kinds {
		if k == model.EventOutputTextDelta {
			deltas++
		}
	}
	if deltas < 10 {
		t.Errorf("%d text deltas, want the reply streamed in several", deltas)
	}
	// One token per word.
	u := r.completed.Usage
	inWords := len(strings.Fields("be brief <environment_context>\n  <cwd>/tmp</cwd>\n</environment_context> hello there"))
	outWords := len(strings.Fields(r.summary)) + len(strings.Fields(r.text))
	want := model.TokenUsage{InputTokens: int64(inWords), OutputTokens: int64(outWords),
		ReasoningOutputTokens: int64(len(strings.Fields(r.summary))), TotalTokens: int64(inWords + outWords)}
	if u == nil || *u != want {
		t.Errorf("usage = %+v, want %+v", u, want)
	}
	// The same conversation gets the same answer.
	if again := run(t, c, model.NewTextMessage("", "developer", "be brief"), envContext(), user("hello there")); again.text != r.text {
		t.Error("the demo is not deterministic")
	}
}

func TestRunCallsExecCommand(t *testing.T) {
	c, _ := start(t)
	r := run(t, c, envContext(), user("run: ls -la | wc -l"))
	var fc model.FunctionCallFields
	if err := r.items[1].Decode(&fc); err != nil {
		t.Fatal(err)
	}
	if fc.Type != "function_call" || fc.Name != "exec_command" || fc.Arguments != `{"cmd":"ls -la | wc -l"}` || fc.CallID == "" {
		t.Errorf("call = %+v", fc)
	}
	if r.completed.Usage.OutputTokens <= r.completed.Usage.ReasoningOutputTokens {
		t.Errorf("usage %+v does not count the call", r.completed.Usage)
	}
}

func TestPatchAddsThenUpdates(t *testing.T) {
	c, _ := start(t)
	r := run(t, c, user("patch: notes/todo.txt buy milk"))
	var ct model.CustomToolCallFields
	if err := r.items[1].Decode(&ct); err != nil {
		t.Fatal(err)
	}
	add := "*** Begin Patch\n*** Add File: notes/todo.txt\n+buy milk\n*** End Patch\n"
	if ct.Name != "apply_patch" || ct.Input != add || r.input != add {
		t.Fatalf("call = %+v, streamed %q", ct, r.input)
	}
	// The second patch of the same file in the conversation replaces what
	// the first one wrote.
	history := []model.ResponseItem{
		user("patch: notes/todo.txt buy milk"), r.items[0], r.items[1],
		model.NewCustomToolCallOutput("", ct.CallID, "Success. Updated the following files:\nA notes/todo.txt\n"),
		model.NewTextMessage("", "assistant", "done"),
		user("patch: notes/todo.txt\nbuy bread\nbuy eggs\n"),
	}
	r2 := run(t, c, history...)
	if err := r2.items[1].Decode(&ct); err != nil {
		t.Fatal(err)
	}
	update := "*** Begin Patch\n*** Update File: notes/todo.txt\n@@\n-buy milk\n+buy bread\n+buy eggs\n*** End Patch\n"
	if ct.Input != update {
		t.Errorf("second patch:\n%s\nwant:\n%s", ct.Input, update)
	}
	if r2.completed.ResponseID == r.completed.ResponseID || ct.CallID == "call_demo_1" {
		t.Errorf("ids repeat across the conversation: %s, %s", r2.completed.ResponseID, ct.CallID)
	}
}

func TestPlanCallsUpdatePlan(t *testing.T) {
	c, _ := start(t)
	r := run(t, c, user("Plan:\n- read the code\n2. write tests\n\n* ship it"))
	var fc model.FunctionCallFields
	if err := r.items[1].Decode(&fc); err != nil {
		t.Fatal(err)
	}
	var args struct {
		Plan []struct{ Step, Status string }
	}
	if err := json.Unmarshal([]byte(fc.Arguments), &args); err != nil || fc.Name != "update_plan" {
		t.Fatalf("call %+v: %v", fc, err)
	}
	want := []struct{ Step, Status string }{{"read the code", "in_progress"}, {"write tests", "pending"}, {"ship it", "pending"}}
	if diff := cmp.Diff(want, args.Plan); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestCommandWithoutArgumentExplains(t *testing.T) {
	c, _ := start(t)
	for msg, want := range map[string]string{"run:": "`run:` needs a command", "patch: only-a-file": "`patch:` needs", "plan:\n\n": "`plan:` needs steps"} {
		r := run(t, c, user(msg))
		if r.items[1].Type() != "message" || !strings.Contains(r.text, want) {
			t.Errorf("%q: got %s %q", msg, r.items[1].Type(), r.text)
		}
	}
}

func TestAnswersToolOutput(t *testing.T) {
	c, _ := start(t)
	call := model.NewResponseItem(map[string]any{"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": `{"cmd":"echo hi"}`})
	out := model.NewFunctionCallOutput("", "call_1", "Process exited with code 0\nOutput:\nhi ```x```\n")
	r := run(t, c, user("run: echo hi"), call, out)
	want := "The command ran. Here is what it returned:\n\n````\nProcess exited with code 0\nOutput:\nhi ```x```\n````"
	if r.text != want {
		t.Errorf("reply:\n%s\nwant:\n%s", r.text, want)
	}
	// Structured outputs are quoted by their text.
	pcall := model.NewResponseItem(map[string]any{"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "x"})
	pout := model.NewFunctionCallOutput("", "call_2", []model.ContentPart{{Type: "input_text", Text: "Success."}})
	r = run(t, c, user("patch: a b"), pcall, pout)
	if !strings.HasPrefix(r.text, "I sent the patch to apply_patch") || !strings.Contains(r.text, "```\nSuccess.\n```") {
		t.Errorf("reply %q", r.text)
	}
	// A long output is shortened.
	long := strings.Repeat("line\n", 100)
	r = run(t, c, user("run: yes"), call, model.NewFunctionCallOutput("", "call_1", long))
	if n := strings.Count(r.text, "line"); n != 30 || !strings.Contains(r.text, "\n…\n") {
		t.Errorf("quoted %d lines of 100: %q", n, r.text)
	}
}

func TestBadRequests(t *testing.T) {
	c, url := start(t)
	resp, err := http.Get(url + "/responses")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	resp, err = http.Post(url+"/responses", "application/json", strings.NewReader(`{"input":`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "not valid JSON") {
		t.Errorf("bad JSON: %d %s", resp.StatusCode, b)
	}
	// Through the client, a non-streaming request is a fatal invalid request.
	_, err = c.Stream(context.Background(), &model.Request{Model: "demo", Input: []model.ResponseItem{user("hi")}}, model.CallMeta{})
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.ErrInvalidRequest || !strings.Contains(me.Message, "only streams") {
		t.Errorf("stream:false: %v", err)
	}
}

func TestStopEndsTheServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url, stop, err := demo.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cancel()
	c := model.NewClient(model.Provider{ID: "demo", BaseURL: url})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Stream(context.Background(), &model.Request{Model: "demo", Stream: true}, model.CallMeta{})
		var me *model.Error
		if errors.As(err, &me) && me.Kind == model.ErrConnectionFailed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server still answers after its context ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
