package model_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// flat is the comparable part of a StreamEvent.
type flat struct {
	Kind         model.StreamEventKind
	ItemID       string
	Delta        string
	SummaryIndex int
	ContentIndex int
	ItemType     string
	ResponseID   string
	Model        string
}

func flatten(evs []model.StreamEvent) []flat {
	out := make([]flat, len(evs))
	for i, e := range evs {
		out[i] = flat{e.Kind, e.ItemID, e.Delta, e.SummaryIndex, e.ContentIndex, e.Item.Type(), e.ResponseID, e.Model}
	}
	return out
}

func TestStreamParsesEveryEventType(t *testing.T) {
	srv := mockmodel.New(t)
	core, logs := observer.New(zapcore.DebugLevel)
	srv.Enqueue(mockmodel.SSE(
		mockmodel.CreatedBy("resp_1", "mock-model-large"),
		mockmodel.Raw("response.in_progress", `{"type":"response.in_progress","response":{"id":"resp_1"}}`),
		mockmodel.Reasoning("rs_1", []string{"Think one", "Two"}, "raw thought"),
		mockmodel.Text("msg_1", "Hello there"),
		mockmodel.Raw("response.output_text.done", `{"type":"response.output_text.done","item_id":"msg_1","text":"Hello there"}`),
		mockmodel.Raw("response.content_part.added", `{"type":"response.content_part.added","item_id":"msg_1","part":{}}`),
		mockmodel.Raw("response.future_thing", `{"type":"response.future_thing","x":1}`),
		mockmodel.ExecCommand("call_1", "ls -la"),
		mockmodel.ApplyPatch("call_2", "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"),
		mockmodel.CompletedBy("resp_1", "mock-model-large", false, mockmodel.Usage{Input: 100, Cached: 40, Output: 20, Reasoning: 7}),
	))
	c := model.NewClient(provider(srv), model.WithLogger(zap.New(core)))
	st, err := c.Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	const (
		created   = model.EventCreated
		added     = model.EventOutputItemAdded
		text      = model.EventOutputTextDelta
		partAdded = model.EventReasoningSummaryPartAdded
		summary   = model.EventReasoningSummaryDelta
		reasoning = model.EventReasoningTextDelta
		input     = model.EventCustomToolCallInputDelta
		done      = model.EventOutputItemDone
		completed = model.EventCompleted
	)
	want := []flat{
		{Kind: created, ResponseID: "resp_1"}, // the body's model is not a reroute
		{Kind: added, ItemID: "rs_1", ItemType: "reasoning"},
		{Kind: partAdded, ItemID: "rs_1", SummaryIndex: 0},
		{Kind: summary, ItemID: "rs_1", SummaryIndex: 0, Delta: "Think "},
		{Kind: summary, ItemID: "rs_1", SummaryIndex: 0, Delta: "one"},
		{Kind: partAdded, ItemID: "rs_1", SummaryIndex: 1},
		{Kind: summary, ItemID: "rs_1", SummaryIndex: 1, Delta: "Two"},
		{Kind: reasoning, ItemID: "rs_1", Delta: "raw "},
		{Kind: reasoning, ItemID: "rs_1", Delta: "thought"},
		{Kind: done, ItemID: "rs_1", ItemType: "reasoning"},
		{Kind: added, ItemID: "msg_1", ItemType: "message"},
		{Kind: text, ItemID: "msg_1", Delta: "Hello "},
		{Kind: text, ItemID: "msg_1", Delta: "there"},
		{Kind: done, ItemID: "msg_1", ItemType: "message"},
		{Kind: added, ItemID: "fc_call_1", ItemType: "function_call"},
		{Kind: done, ItemID: "fc_call_1", ItemType: "function_call"},
		{Kind: added, ItemID: "ctc_call_2", ItemType: "custom_tool_call"},
		{Kind: input, ItemID: "ctc_call_2", Delta: "*** Begin Patch\n"},
		{Kind: input, ItemID: "ctc_call_2", Delta: "*** Add File: a.txt\n"},
		{Kind: input, ItemID: "ctc_call_2", Delta: "+hi\n"},
		{Kind: input, ItemID: "ctc_call_2", Delta: "*** End Patch\n"},
		{Kind: done, ItemID: "ctc_call_2", ItemType: "custom_tool_call"},
		{Kind: completed, ResponseID: "resp_1"},
	}
	if diff := cmp.Diff(want, flatten(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}

	// The items are the server's JSON, unchanged.
	var fc model.FunctionCallFields
	if err := evs[15].Item.Decode(&fc); err != nil || fc.Arguments != `{"cmd":"ls -la"}` || fc.CallID != "call_1" || fc.Name != "exec_command" {
		t.Errorf("function call = %+v, %v", fc, err)
	}
	var rs model.ReasoningFields
	if err := evs[9].Item.Decode(&rs); err != nil || len(rs.Summary) != 2 || rs.Content[0].Text != "raw thought" ||
		rs.EncryptedContent == nil || *rs.EncryptedContent != "enc-rs_1" {
		t.Errorf("reasoning = %+v, %v", rs, err)
	}
	if got := evs[13].Item.MessageText(); got != "Hello there" {
		t.Errorf("message text = %q", got)
	}

	last := evs[len(evs)-1]
	wantUsage := model.TokenUsage{InputTokens: 100, CachedInputTokens: 40, OutputTokens: 20, ReasoningOutputTokens: 7, TotalTokens: 120}
	if last.Usage == nil || *last.Usage != wantUsage {
		t.Errorf("usage = %+v, want %+v", last.Usage, wantUsage)
	}
	if last.EndTurn == nil || *last.EndTurn {
		t.Errorf("end_turn = %v, want false", last.EndTurn)
	}
	var raw map[string]any
	if err := json.Unmarshal(last.RawUsage, &raw); err != nil || raw["total_tokens"] != 120.0 {
		t.Errorf("raw usage = %s (%v)", last.RawUsage, err)
	}

	// Dropped events are counted and the unknown one is logged.
	if n := logs.FilterMessage("unknown model stream event ignored").FilterField(zap.String("type", "response.future_thing")).Len(); n != 1 {
		t.Errorf("unknown event logged %d times, want 1", n)
	}
	ended := logs.FilterMessage("model stream ended").All()
	if len(ended) != 1 {
		t.Fatalf("stream end logged %d times, want 1", len(ended))
	}
	dropped, _ := ended[0].ContextMap()["dropped"].(map[string]int)
	wantDropped := map[string]int{
		"response.in_progress":                   1,
		"response.output_text.done":              1,
		"response.content_part.added":            1,
		"response.function_call_arguments.delta": 1,
		"response.function_call_arguments.done":  1,
		"response.reasoning_summary_part.done":   2,
	}
	if diff := cmp.Diff(wantDropped, dropped); diff != "" {
		t.Errorf("dropped counts (-want +got):\n%s", diff)
	}
}

// streamOne streams resp from a mock model and returns its events.
func streamOne(t *testing.T, resp mockmodel.Response) []model.StreamEvent {
	t.Helper()
	srv := mockmodel.New(t)
	srv.Enqueue(resp)
	st, err := model.NewClient(provider(srv)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestStreamReportsModelOnlyWhenRerouted(t *testing.T) {
	evs := streamOne(t, mockmodel.SSE(
		mockmodel.CreatedBy("resp_1", "mock-model"),
		mockmodel.CompletedBy("resp_1", "mock-model", true, mockmodel.Usage{}),
	))
	for _, e := range evs {
		if e.Model != "" {
			t.Errorf("%v: Model = %q for the requested model, want empty", e.Kind, e.Model)
		}
	}
	if e := evs[len(evs)-1]; e.EndTurn == nil || !*e.EndTurn {
		t.Errorf("end_turn = %v, want true", e.EndTurn)
	}
}

// The served model comes from the OpenAI-Model response header, or that
// header repeated in response.created, as the reference (0.169) reads it;
// the header wins; the body's "model" field is ignored; the comparison
// ignores case.
func TestStreamReportsRerouteFromHeader(t *testing.T) {
	createdWithHeaders := func(m string) mockmodel.Events {
		return mockmodel.Raw("response.created", `{"type":"response.created","response":{"id":"resp_1","headers":{"OpenAI-Model":"`+m+`"}}}`)
	}
	done := mockmodel.Completed("resp_1", mockmodel.Usage{})
	for _, tc := range []struct {
		name string
		resp mockmodel.Response
		want string
	}{
		{"header", mockmodel.SSE(mockmodel.Created("resp_1"), done).WithHeader("OpenAI-Model", "served-model"), "served-model"},
		{"header in response.created", mockmodel.SSE(createdWithHeaders("served-model"), done), "served-model"},
		{"header wins", mockmodel.SSE(createdWithHeaders("other-model"), done).WithHeader("OpenAI-Model", "served-model"), "served-model"},
		{"header is the requested model in another case", mockmodel.SSE(mockmodel.Created("resp_1"), done).WithHeader("OpenAI-Model", "MOCK-Model"), ""},
		{"body model only", mockmodel.SSE(mockmodel.CreatedBy("resp_1", "served-model"), mockmodel.CompletedBy("resp_1", "served-model", true, mockmodel.Usage{})), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := streamOne(t, tc.resp)
			if got := evs[0].Model; evs[0].Kind != model.EventCreated || got != tc.want {
				t.Errorf("created: Model = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStreamTypeFromDataWithoutEventLines(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "no event lines")).DataOnly())
	st, err := model.NewClient(provider(srv)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.StreamEventKind{model.EventCreated, model.EventOutputItemAdded, model.EventOutputTextDelta,
		model.EventOutputTextDelta, model.EventOutputTextDelta, model.EventOutputItemDone, model.EventCompleted}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}

// A response.completed that repeats a large output is far above go-sse's
// default 64 KiB event limit.
func TestStreamHugeEvents(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 20<<10) // 320 KiB
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.SSE(
		mockmodel.Created("resp_1"),
		mockmodel.TextN("msg_1", big, 4),
		mockmodel.Completed("resp_1", mockmodel.Usage{Input: 1, Output: 80000}),
	))
	st, err := model.NewClient(provider(srv)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[len(evs)-2].Item.MessageText(); got != big {
		t.Errorf("done message has %d bytes, want %d", len(got), len(big))
	}
	if u := evs[len(evs)-1].Usage; u == nil || u.OutputTokens != 80000 {
		t.Errorf("usage = %+v", u)
	}
}

// response.completed repeats the whole output; the client leaves it out
// as it reads (it takes the items from output_item.done), so a completed
// event larger than the parser's event limit, each item within it, ends
// the stream normally, with its usage.
func TestStreamCompletedOutputLeftOut(t *testing.T) {
	defer model.SetMaxEventSize(64 << 10)()
	part := strings.Repeat("0123456789abcdef", 3<<10) // 48 KiB: two are past the limit
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.SSE(
		mockmodel.Created("resp_1"),
		mockmodel.TextN("msg_1", part, 3),
		mockmodel.TextN("msg_2", part, 3),
		mockmodel.Completed("resp_1", mockmodel.Usage{Input: 1, Output: 24000}),
	))
	st, err := model.NewClient(provider(srv)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, ev := range evs {
		if ev.Kind == model.EventOutputItemDone {
			texts = append(texts, ev.Item.MessageText())
		}
	}
	if len(texts) != 2 || texts[0] != part || texts[1] != part {
		t.Fatalf("%d items done", len(texts))
	}
	if last := evs[len(evs)-1]; last.Kind != model.EventCompleted || last.ResponseID != "resp_1" || last.Usage == nil || last.Usage.OutputTokens != 24000 {
		t.Fatalf("last event %+v", last)
	}
}
