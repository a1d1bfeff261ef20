package test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// thread/revert, thread/inject_items, thread/compact/start and
// thread/shellCommand, with what the model sees afterwards.
func TestThreadHistoryOperations(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one done"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "two done"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "three done"), mockmodel.Completed("resp_3", usage())),
		mockmodel.Reply("resp_4", mockmodel.Text("msg_4", "a short summary"), mockmodel.Completed("resp_4", usage())),
		mockmodel.Reply("resp_5", mockmodel.Text("msg_5", "four done"), mockmodel.Completed("resp_5", usage())),
	)
	work := t.TempDir()
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	first := runTurn(t, c, id, "one")
	runTurn(t, c, id, "two")
	_ = first
	turns := unmarshal(t, WantResult(t, c.Call("thread/turns/list", map[string]any{"threadId": id, "sortDirection": "asc"})))
	second := str(turns, "data", 1, "id")

	// Revert drops the second turn from the model's context and the view.
	rev := unmarshal(t, WantResult(t, c.Call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": second})))
	if n := len(path(rev, "thread", "turns").([]any)); n != 1 {
		t.Fatalf("turns after revert: %d", n)
	}
	WantError(t, c.Call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": "nope"}), codeInvalidRequest, "turn not found: nope")

	// Injected items reach the next request.
	WantResult(t, c.Call("thread/inject_items", map[string]any{"threadId": id, "items": []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "injected note"}}},
	}}))
	WantError(t, c.Call("thread/inject_items", map[string]any{"threadId": id, "items": []any{map[string]any{"role": "user"}}}), codeInvalidRequest, "")
	runTurn(t, c, id, "three")
	users := m.Requests()[2].MessageTexts("user")
	if slices.Contains(users, "two") || !slices.Contains(users, "one") || !slices.Contains(users, "injected note") {
		t.Fatalf("users after revert and inject: %q", users)
	}

	// Compaction is a turn with a contextCompaction item.
	c.Request("thread/compact/start", map[string]any{"threadId": id})
	msgs := collectUntil(c, isMethod("turn/completed"))
	var types []string
	for _, msg := range msgs {
		if msg.Method == "item/completed" {
			types = append(types, str(unmarshal(t, msg.Params), "item", "type"))
		}
	}
	if !slices.Equal(types, []string{"contextCompaction"}) {
		t.Fatalf("compaction items %v", types)
	}
	if tools := m.Requests()[3].ToolNames(); len(tools) != 0 {
		t.Fatalf("compaction request offered tools %v", tools)
	}

	// A shell command of the user's, as its own turn; its output is in the
	// model's next request.
	c.Request("thread/shellCommand", map[string]any{"threadId": id, "command": "echo from-the-user"})
	msgs = collectUntil(c, isMethod("turn/completed"))
	var item map[string]any
	for _, msg := range msgs {
		if msg.Method == "item/completed" {
			item = unmarshal(t, msg.Params)
		}
	}
	if str(item, "item", "source") != "userShell" || !strings.Contains(str(item, "item", "aggregatedOutput"), "from-the-user") {
		t.Fatalf("shell item %v", item)
	}
	runTurn(t, c, id, "four")
	last := m.Requests()[4]
	all := strings.Join(last.MessageTexts("user"), "\n")
	if !strings.Contains(all, "a short summary") || !strings.Contains(all, "from-the-user") || strings.Contains(all, "three done") {
		t.Fatalf("after compaction and shell: %q", all)
	}
	WantError(t, c.Call("thread/shellCommand", map[string]any{"threadId": id, "command": ""}), codeInvalidRequest, "command must not be empty")
}

// Items injected before a thread's first turn reach the model after the
// initial context (developer instructions, environment) and before the
// prompt, as in the reference; after a restart and thread/resume the
// model gets the same history, with the thread read back as one turn.
func TestInjectItemsBeforeFirstTurn(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one done"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "two done"), mockmodel.Completed("resp_2", usage())),
	)
	home, work := shortTempDir(t), t.TempDir()
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	WantResult(t, c.Call("thread/inject_items", map[string]any{"threadId": id, "items": []any{
		map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "injected context"}}},
	}}))
	runTurn(t, c, id, "the prompt")
	shape := func(r mockmodel.Request) []string {
		var out []string
		for _, it := range r.Input() {
			text := ""
			for _, p := range it["content"].([]any) {
				text += p.(map[string]any)["text"].(string)
			}
			switch {
			case strings.Contains(text, "<environment_context>"):
				text = "environment"
			case it["role"] == "developer":
				text = "instructions"
			}
			out = append(out, it["role"].(string)+":"+text)
		}
		return out
	}
	first := shape(m.Requests()[0])
	want := []string{"developer:instructions", "user:environment", "assistant:injected context", "user:the prompt"}
	if !slices.Equal(first, want) {
		t.Fatalf("first request input %q, want %q", first, want)
	}
	_, c2 := restarted(t, d, Options{})
	res := unmarshal(t, WantResult(t, c2.Call("thread/resume", map[string]any{"threadId": id})))
	if n := len(path(res, "thread", "turns").([]any)); n != 1 {
		t.Fatalf("resumed thread has %d turns: %v", n, res)
	}
	runTurn(t, c2, id, "again")
	second := shape(m.Requests()[1])
	if len(second) < len(first)+1 || !slices.Equal(second[:len(first)], first) || second[len(first)] != "assistant:one done" {
		t.Fatalf("request after resume %q, want it to start with %q and the answer", second, first)
	}
}

// thread/turns/list and thread/items/list page with cursors both ways.
func TestTurnsAndItemsPaging(t *testing.T) {
	m := mockmodel.New(t)
	for i := 0; i < 5; i++ {
		m.Enqueue(mockmodel.Reply("r", mockmodel.Text("msg", "answer"), mockmodel.Completed("r", usage())))
	}
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	for _, q := range []string{"q1", "q2", "q3", "q4", "q5"} {
		runTurn(t, c, id, q)
	}
	var got []string
	var cursor any
	for {
		p := map[string]any{"threadId": id, "limit": 2, "sortDirection": "asc"}
		if cursor != nil {
			p["cursor"] = cursor
		}
		res := unmarshal(t, WantResult(t, c.Call("thread/turns/list", p)))
		for _, turn := range path(res, "data").([]any) {
			got = append(got, str(turn, "items", 0, "content", 0, "text"))
		}
		if cursor = path(res, "nextCursor"); cursor == nil {
			break
		}
	}
	if !slices.Equal(got, []string{"q1", "q2", "q3", "q4", "q5"}) {
		t.Fatalf("turns pages %v", got)
	}
	desc := unmarshal(t, WantResult(t, c.Call("thread/turns/list", map[string]any{"threadId": id, "limit": 1, "itemsView": "notLoaded"})))
	if str(desc, "data", 0, "itemsView") != "notLoaded" || len(path(desc, "data", 0, "items").([]any)) != 0 {
		t.Fatalf("newest turn %v", desc)
	}
	items := unmarshal(t, WantResult(t, c.Call("thread/items/list", map[string]any{"threadId": id, "limit": 3})))
	next := path(items, "nextCursor")
	if len(path(items, "data").([]any)) != 3 || next == nil {
		t.Fatalf("items page %v", items)
	}
	more := unmarshal(t, WantResult(t, c.Call("thread/items/list", map[string]any{"threadId": id, "limit": 3, "cursor": next})))
	if str(more, "data", 0, "item", "type") != "agentMessage" || path(more, "backwardsCursor") == nil {
		t.Fatalf("second items page %v", more)
	}
	WantError(t, c.Call("thread/turns/list", map[string]any{"threadId": id, "cursor": "bogus"}), codeInvalidRequest, "invalid cursor: bogus")
}
