package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

func usage() mockmodel.Usage { return mockmodel.Usage{Input: 10, Output: 5} }

// A text turn over stdio: the reference's order, the rollout on disk, and
// the thread readable back.
func TestTextTurnAndRead(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "Hello from the mock."), mockmodel.Completed("resp_1", usage())))
	work := t.TempDir()
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": work})))
	id := str(res, "thread", "id")
	if str(res, "model") != "mock-model" || str(res, "modelProvider") != "mock" || str(res, "cwd") != work || path(res, "thread", "path") == nil {
		t.Fatalf("thread/start result %v", res)
	}
	started := c.Next()
	if started.Method != "thread/started" {
		t.Fatalf("after the result: %s", started.Raw)
	}
	threadPath := str(res, "thread", "path")
	if _, err := os.Stat(threadPath); err == nil {
		t.Fatal("rollout file exists before the first turn")
	}
	msgs := runTurn(t, c, id, "hi")
	got := slices.Compact(methods(msgs))
	want := []string{"response", "thread/status/changed", "turn/started", "item/started", "item/completed", "item/started",
		"item/agentMessage/delta", "item/completed", "thread/tokenUsage/updated", "account/rateLimits/updated", "thread/status/changed", "turn/completed"}
	if !slices.Equal(got, want) {
		t.Fatalf("turn methods\n got %v\nwant %v", got, want)
	}
	done := unmarshal(t, msgs[len(msgs)-1].Params)
	if str(done, "turn", "status") != "completed" || str(done, "turn", "itemsView") != "summary" || str(done, "turn", "items", 0, "text") != "Hello from the mock." {
		t.Fatalf("turn/completed %v", done)
	}
	// The turn ended: its rollout is on disk.
	mustContain(t, readFile(t, threadPath), "Hello from the mock.")
	if got := m.Requests()[0].LastUserText(); got != "hi" {
		t.Fatalf("model got %q", got)
	}

	// Read back: the loaded thread with its turns, full.
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	turns, _ := path(read, "thread", "turns").([]any)
	if len(turns) != 1 || str(turns[0], "status") != "completed" || str(turns[0], "itemsView") != "full" || len(path(turns[0], "items").([]any)) != 2 {
		t.Fatalf("thread/read turns %v", turns)
	}
	if str(read, "thread", "preview") != "hi" {
		t.Fatalf("preview %q", str(read, "thread", "preview"))
	}
	list := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{})))
	if str(list, "data", 0, "id") != id {
		t.Fatalf("thread/list %v", list)
	}
	tl := unmarshal(t, WantResult(t, c.Call("thread/turns/list", map[string]any{"threadId": id})))
	if str(tl, "data", 0, "itemsView") != "summary" {
		t.Fatalf("thread/turns/list %v", tl)
	}
	il := unmarshal(t, WantResult(t, c.Call("thread/items/list", map[string]any{"threadId": id})))
	items, _ := path(il, "data").([]any)
	if len(items) != 2 || str(items[0], "item", "type") != "userMessage" || str(items[1], "item", "type") != "agentMessage" {
		t.Fatalf("thread/items/list %v", il)
	}
	loaded := unmarshal(t, WantResult(t, c.Call("thread/loaded/list", map[string]any{})))
	if str(loaded, "data", 0) != id {
		t.Fatalf("loaded %v", loaded)
	}
}

// Restart the daemon: the thread is listed, resumes with its turns, and
// the model gets the whole history on the next turn.
func TestResumeAfterRestart(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "first answer"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "second answer"), mockmodel.Completed("resp_2", usage())),
	)
	home, work := shortTempDir(t), t.TempDir()
	cfg := mockConfig(m, "")
	d := Start(t, Options{Home: home, ConfigTOML: cfg})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	runTurn(t, c, id, "first question")
	_, c2 := restarted(t, d, Options{})
	list := unmarshal(t, WantResult(t, c2.Call("thread/list", map[string]any{})))
	if str(list, "data", 0, "id") != id || str(list, "data", 0, "status", "type") != "notLoaded" {
		t.Fatalf("list after restart %v", list)
	}
	c2.Request("thread/resume", map[string]any{"threadId": id})
	msgs := collectUntil(c2, func(m Message) bool { return m.Method == "" })
	if got := methods(msgs); !slices.Equal(got, []string{"deprecationNotice", "thread/status/changed", "response"}) {
		t.Fatalf("resume order %v", got)
	}
	res := unmarshal(t, msgs[len(msgs)-1].Result)
	turns, _ := path(res, "thread", "turns").([]any)
	if len(turns) != 1 || str(turns[0], "items", 1, "text") != "first answer" || str(res, "thread", "status", "type") != "idle" {
		t.Fatalf("resumed thread %v", res)
	}
	c2.ReadUntil(isMethod("thread/tokenUsage/updated"))
	runTurn(t, c2, id, "second question")
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	users := reqs[1].MessageTexts("user")
	if !slices.Contains(users, "first question") || users[len(users)-1] != "second question" || !slices.Contains(reqs[1].MessageTexts("assistant"), "first answer") {
		t.Fatalf("history after resume: users %q assistants %q", users, reqs[1].MessageTexts("assistant"))
	}
	// Resuming by excludeTurns on a loaded thread: no turns, no notice.
	r2 := unmarshal(t, WantResult(t, c2.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})))
	if n := len(path(r2, "thread", "turns").([]any)); n != 0 {
		t.Fatalf("excludeTurns gave %d turns", n)
	}
	WantError(t, c2.Call("thread/resume", map[string]any{"threadId": "01a229d7-3c54-7a24-9c8f-4f1416788822"}), codeInvalidRequest, "no rollout found for thread id 01a229d7-3c54-7a24-9c8f-4f1416788822")
}

// kill -9 in the middle of a turn: after a restart the completed turn is
// intact, the cut one is interrupted, and the model history is exact.
func TestCrashMidTurnThenResume(t *testing.T) {
	m := mockmodel.New(t, mockmodel.AllowUnused())
	gate := mockmodel.NewGate()
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "done one"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.TextN("msg_2", "never finished because of the crash", 4), mockmodel.Completed("resp_2", usage())).GateAfter(3, gate),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "after the crash"), mockmodel.Completed("resp_3", usage())),
	)
	home, work := shortTempDir(t), t.TempDir()
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	runTurn(t, c, id, "one")
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("two")})
	c.ReadUntil(isMethod("item/agentMessage/delta"))
	<-gate.Reached()
	_ = d.Cmd.Process.Signal(syscall.SIGKILL)
	d.Wait()

	d2 := Start(t, Options{Home: home})
	c2 := d2.Stdio()
	c2.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c2.Call("thread/resume", map[string]any{"threadId": id})))
	turns, _ := path(res, "thread", "turns").([]any)
	if len(turns) != 2 || str(turns[0], "status") != "completed" || str(turns[1], "status") != "interrupted" {
		t.Fatalf("turns after crash: %v", turns)
	}
	if str(turns[0], "items", 1, "text") != "done one" || str(turns[1], "items", 0, "content", 0, "text") != "two" {
		t.Fatalf("turn contents after crash: %v", turns)
	}
	runTurn(t, c2, id, "three")
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	users := last.MessageTexts("user")
	if !slices.Contains(users, "one") || !slices.Contains(users, "two") || users[len(users)-1] != "three" {
		t.Fatalf("users after crash %q", users)
	}
	if as := last.MessageTexts("assistant"); !slices.Equal(as, []string{"done one"}) {
		t.Fatalf("assistant history after crash %q", as)
	}
	gate.Open()
}

// A torn last line (a crash mid-write) does not lose the thread.
func TestTornLineRecovery(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "kept"), mockmodel.Completed("resp_1", usage())))
	home := shortTempDir(t)
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	msgs := runTurn(t, c, id, "q")
	_ = msgs
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id})))
	p := str(read, "thread", "path")
	d.CloseStdin()
	d.Wait()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"timestamp":"2026-11-29T00:00:00.000Z","type":"event_msg","payload":{"type":"turnSta`)
	f.Close()
	d2 := Start(t, Options{Home: home})
	c2 := d2.Stdio()
	c2.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c2.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	if str(res, "thread", "turns", 0, "items", 1, "text") != "kept" {
		t.Fatalf("thread after a torn line: %v", res)
	}
}

// A second connection joins a running turn with a pending approval: the
// request is re-sent to it, its answer wins, and both see the end.
func TestJoinRunningTurnWithPendingApproval(t *testing.T) {
	m := mockmodel.New(t)
	work := t.TempDir()
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "touch approved.txt"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "made it"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "untrusted"
sandbox_mode = "danger-full-access"`), Listen: []string{"ws://127.0.0.1:0"}})
	c1 := d.DialWS(WSOptions{})
	c1.Initialize("first", nil)
	id := startThread(t, c1, map[string]any{"cwd": work})
	c1.Request("turn/start", map[string]any{"threadId": id, "input": textInput("make a file")})
	req1 := c1.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
	if req1.Method != "item/commandExecution/requestApproval" || string(req1.ID) != "0" {
		t.Fatalf("first request %s", req1.Raw)
	}

	c2 := d.DialWS(WSOptions{})
	c2.Initialize("second", nil)
	c2.Request("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})
	c2.ReadUntil(func(m Message) bool { return m.Method == "" })
	req2 := c2.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
	if req2.Method != req1.Method || str(unmarshal(t, req2.Params), "itemId") != "call_1" || string(req2.ID) != "0" {
		t.Fatalf("re-sent request %s", req2.Raw)
	}
	c2.Send(map[string]any{"id": json.RawMessage(req2.ID), "result": map[string]any{"decision": "accept"}})
	for _, c := range []*Client{c1, c2} {
		msgs := collectUntil(c, isMethod("turn/completed"))
		i := slices.IndexFunc(msgs, isMethod("serverRequest/resolved"))
		if i < 0 || str(unmarshal(t, msgs[i].Params), "threadId") != id || str(unmarshal(t, msgs[i].Params), "requestId") != "" {
			t.Fatalf("no serverRequest/resolved: %v", methods(msgs))
		}
		if done := msgs[len(msgs)-1]; str(unmarshal(t, done.Params), "turn", "status") != "completed" {
			t.Fatalf("turn/completed %s", done.Raw)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "approved.txt")); err != nil {
		t.Fatalf("command did not run: %v", err)
	}
	// The first connection's late answer is ignored.
	c1.Send(map[string]any{"id": 0, "result": map[string]any{"decision": "decline"}})
	c1.AssertNoMessage()
}

// Archive, unarchive, rename, delete and their errors, with the
// notifications.
func TestThreadLifecycle(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hello"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "q")

	WantResult(t, c.Call("thread/name/set", map[string]any{"threadId": id, "name": "my thread"}))
	upd := unmarshal(t, c.ReadUntil(isMethod("thread/name/updated")).Params)
	if str(upd, "threadName") != "my thread" {
		t.Fatalf("name/updated %v", upd)
	}
	if n := str(unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id}))), "thread", "name"); n != "my thread" {
		t.Fatalf("name %q", n)
	}

	c.Request("thread/archive", map[string]any{"threadId": id})
	msgs := collectUntil(c, isMethod("thread/archived"))
	if got := methods(msgs); !slices.Equal(got, []string{"thread/status/changed", "response", "thread/archived"}) {
		t.Fatalf("archive order %v", got)
	}
	if list := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{}))); len(path(list, "data").([]any)) != 0 {
		t.Fatalf("archived thread still listed: %v", list)
	}
	arch := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{"archived": true})))
	if str(arch, "data", 0, "id") != id || !strings.Contains(str(arch, "data", 0, "path"), "archived_sessions") {
		t.Fatalf("archived list %v", arch)
	}
	un := unmarshal(t, WantResult(t, c.Call("thread/unarchive", map[string]any{"threadId": id})))
	if str(un, "thread", "status", "type") != "notLoaded" || str(un, "thread", "name") != "my thread" {
		t.Fatalf("unarchive %v", un)
	}
	c.ReadUntil(isMethod("thread/unarchived"))
	WantResult(t, c.Call("thread/delete", map[string]any{"threadId": id}))
	c.ReadUntil(isMethod("thread/deleted"))
	WantError(t, c.Call("thread/read", map[string]any{"threadId": id}), codeInvalidRequest, "thread not loaded: "+id)
	WantError(t, c.Call("thread/archive", map[string]any{"threadId": id}), codeInvalidRequest, "no rollout found for thread id "+id)
	un2 := unmarshal(t, WantResult(t, c.Call("thread/unsubscribe", map[string]any{"threadId": id})))
	if str(un2, "status") != "notLoaded" {
		t.Fatalf("unsubscribe %v", un2)
	}
}

// Threads without a rollout, as the reference answers for them: one before
// its first turn cannot be forked but is archived (its rollout written
// then), unarchived and deleted; an ephemeral one can be neither forked,
// archived nor deleted. An ephemeral fork must exclude the turns.
func TestThreadsWithoutARollout(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hello"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	noRollout := func(id string) string { return "no rollout found for thread id " + id }

	fresh := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	WantError(t, c.Call("thread/fork", map[string]any{"threadId": fresh}), codeInvalidRequest, noRollout(fresh))
	WantError(t, c.Call("thread/fork", map[string]any{"threadId": fresh, "ephemeral": true}), codeInvalidRequest, noRollout(fresh))
	c.Request("thread/archive", map[string]any{"threadId": fresh})
	if got := methods(collectUntil(c, isMethod("thread/archived"))); !slices.Equal(got, []string{"thread/status/changed", "response", "thread/archived"}) {
		t.Fatalf("archive order %v", got)
	}
	un := unmarshal(t, WantResult(t, c.Call("thread/unarchive", map[string]any{"threadId": fresh})))
	if str(un, "thread", "id") != fresh || str(un, "thread", "status", "type") != "notLoaded" {
		t.Fatalf("unarchive %v", un)
	}
	c.ReadUntil(isMethod("thread/unarchived"))
	WantResult(t, c.Call("thread/delete", map[string]any{"threadId": fresh}))
	c.ReadUntil(isMethod("thread/deleted"))

	eph := startThread(t, c, map[string]any{"cwd": t.TempDir(), "ephemeral": true})
	WantError(t, c.Call("thread/fork", map[string]any{"threadId": eph}), codeInvalidRequest, noRollout(eph))
	WantError(t, c.Call("thread/archive", map[string]any{"threadId": eph}), codeInvalidRequest, noRollout(eph))
	WantError(t, c.Call("thread/delete", map[string]any{"threadId": eph}), codeInvalidRequest, "thread is not persisted and cannot be deleted: "+eph)

	src := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, src, "q")
	WantError(t, c.Call("thread/fork", map[string]any{"threadId": src, "ephemeral": true}), codeInvalidRequest,
		"ephemeral paginated thread/fork requires `excludeTurns: true`")
	unknown := "00000000-0000-7000-8000-000000000000"
	WantError(t, c.Call("thread/fork", map[string]any{"threadId": unknown, "ephemeral": true}), codeInvalidRequest, noRollout(unknown))
	fork := unmarshal(t, WantResult(t, c.Call("thread/fork", map[string]any{"threadId": src, "ephemeral": true, "excludeTurns": true})))
	if path(fork, "thread", "path") != nil || path(fork, "thread", "ephemeral") != true || str(fork, "thread", "forkedFromId") != src {
		t.Fatalf("ephemeral fork %v", fork)
	}
}

// Fork copies the history into a new thread.
func TestFork(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "original"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "in the fork"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	src := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, src, "remember 42")
	c.Request("thread/fork", map[string]any{"threadId": src})
	msgs := collectUntil(c, isMethod("thread/started"))
	if got := methods(msgs); !slices.Equal(got, []string{"deprecationNotice", "response", "thread/tokenUsage/updated", "thread/started"}) {
		t.Fatalf("fork order %v", got)
	}
	res := unmarshal(t, msgs[1].Result)
	fid := str(res, "thread", "id")
	if fid == src || str(res, "thread", "forkedFromId") != src || len(path(res, "thread", "turns").([]any)) != 1 {
		t.Fatalf("fork result %v", res)
	}
	runTurn(t, c, fid, "what number?")
	users := m.Requests()[1].MessageTexts("user")
	if !slices.Contains(users, "remember 42") {
		t.Fatalf("fork lost the history: %q", users)
	}
}

// A thread nobody subscribes to is unloaded after the delay.
func TestUnloadAfterIdle(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, Config: []string{"server.thread_unload_delay_secs=1"}})
	c1 := d.DialWS(WSOptions{})
	c1.Initialize("one", nil)
	id := startThread(t, c1, map[string]any{"cwd": t.TempDir()})
	c2 := d.DialWS(WSOptions{})
	c2.Initialize("observer", nil)
	un := unmarshal(t, WantResult(t, c1.Call("thread/unsubscribe", map[string]any{"threadId": id})))
	if str(un, "status") != "unsubscribed" {
		t.Fatalf("unsubscribe %v", un)
	}
	again := unmarshal(t, WantResult(t, c1.Call("thread/unsubscribe", map[string]any{"threadId": id})))
	if str(again, "status") != "notSubscribed" {
		t.Fatalf("second unsubscribe %v", again)
	}
	st := c2.ReadUntil(isMethod("thread/status/changed"))
	if str(unmarshal(t, st.Params), "status", "type") != "notLoaded" {
		t.Fatalf("status %s", st.Raw)
	}
	closed := c2.Next()
	if closed.Method != "thread/closed" {
		t.Fatalf("after notLoaded: %s", closed.Raw)
	}
	if loaded := unmarshal(t, WantResult(t, c2.Call("thread/loaded/list", map[string]any{}))); len(path(loaded, "data").([]any)) != 0 {
		t.Fatalf("still loaded: %v", loaded)
	}
}

// A turn on a thread that was unloaded loads it again: a client that kept
// a thread open while it was unloaded carries on.
func TestTurnStartLoadsStoredThread(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "first"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "second"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, ""), Config: []string{"server.thread_unload_delay_secs=1"}})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "one")
	WantResult(t, c.Call("thread/unsubscribe", map[string]any{"threadId": id}))
	c.ReadUntil(isMethod("thread/closed"))
	msgs := runTurn(t, c, id, "two")
	if done := unmarshal(t, msgs[len(msgs)-1].Params); str(done, "turn", "status") != "completed" {
		t.Fatalf("turn after reload: %v", done)
	}
	if users := m.Requests()[1].MessageTexts("user"); !slices.Contains(users, "one") {
		t.Fatalf("history lost on reload: %q", users)
	}
	WantError(t, c.Call("turn/start", map[string]any{"threadId": "01a229d7-3c54-7a24-9c8f-4f1416788822", "input": textInput("x")}),
		codeInvalidRequest, "thread not found: 01a229d7-3c54-7a24-9c8f-4f1416788822")
}

// With persist_on_start, a thread with no turn can be resumed after a
// restart.
func TestPersistOnStart(t *testing.T) {
	home := shortTempDir(t)
	d := Start(t, Options{Home: home})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir(), "config": map[string]any{"persist_on_start": true}})
	plain := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	d.CloseStdin()
	d.Wait()
	d2 := Start(t, Options{Home: home})
	c2 := d2.Stdio()
	c2.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c2.Call("thread/resume", map[string]any{"threadId": id})))
	if str(res, "thread", "id") != id {
		t.Fatalf("resume %v", res)
	}
	WantError(t, c2.Call("thread/resume", map[string]any{"threadId": plain}), codeInvalidRequest, "no rollout found for thread id "+plain)
}

// SIGTERM lets a running turn finish before the daemon exits.
func TestShutdownLetsTurnFinish(t *testing.T) {
	m := mockmodel.New(t)
	gate := mockmodel.NewGate()
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", "a slow but complete answer", 4), mockmodel.Completed("resp_1", usage())).GateAfter(3, gate))
	d := Start(t, Options{ConfigTOML: mockConfig(m, ""), Listen: []string{"ws://127.0.0.1:0"}})
	c := d.DialWS(WSOptions{})
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("go")})
	<-gate.Reached()
	d.Signal(syscall.SIGTERM)
	d.WaitLog(LogMsg("shutting down"))
	gate.Open()
	done := c.ReadUntil(isMethod("turn/completed"))
	if str(unmarshal(t, done.Params), "turn", "status") != "completed" {
		t.Fatalf("turn during shutdown: %s", done.Raw)
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// A turn/start's W3C trace context reaches the model provider.
func TestTraceContextReachesProvider(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "traced"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	c.Send(map[string]any{"id": 77, "method": "turn/start", "trace": map[string]any{"traceparent": tp, "tracestate": "k=v"},
		"params": map[string]any{"threadId": id, "input": textInput("go")}})
	c.ReadUntil(isMethod("turn/completed"))
	h := m.Requests()[0].Header
	if h.Get("traceparent") != tp || h.Get("tracestate") != "k=v" {
		t.Fatalf("provider headers %v", h)
	}
}

// Raw events go only to experimental connections on threads started with
// experimentalRawEvents, which needs the capability.
func TestRawEventsOptIn(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "raw"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, ""), Listen: []string{"ws://127.0.0.1:0"}})
	plain := d.DialWS(WSOptions{})
	plain.Initialize("plain", nil)
	WantError(t, plain.Call("thread/start", map[string]any{"experimentalRawEvents": true}), codeInvalidRequest,
		"thread/start.experimentalRawEvents requires experimentalApi capability")
	exp := d.DialWS(WSOptions{})
	exp.Initialize("exp", map[string]any{"experimentalApi": true})
	id := startThread(t, exp, map[string]any{"cwd": t.TempDir(), "experimentalRawEvents": true})
	WantResult(t, plain.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true}))
	msgs := runTurn(t, exp, id, "go")
	raws := 0
	for _, msg := range msgs {
		if msg.Method == "rawResponseItem/completed" {
			raws++
		}
	}
	if raws < 3 || !slices.Contains(methods(msgs), "rawResponse/completed") {
		t.Fatalf("experimental client got %d raw items: %v", raws, methods(msgs))
	}
	for _, msg := range collectUntil(plain, isMethod("turn/completed")) {
		if strings.HasPrefix(msg.Method, "raw") {
			t.Fatalf("non-experimental client got %s", msg.Method)
		}
	}
}

// turn/start's responsesapiClientMetadata reaches the model as the
// reference sends it: flattened into the JSON of
// client_metadata["x-codex-turn-metadata"] and the x-codex-turn-metadata
// header, next to the session, thread and turn ids (which it cannot
// replace), and not as top-level client_metadata keys.
func TestClientMetadataReachesTheModel(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "done"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	res := unmarshal(t, WantResult(t, c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hello"),
		"responsesapiClientMetadata": map[string]any{"fiber_run_id": "fiber-start-123", "origin": "gaas", "thread_id": "not-mine"}})))
	turnID := str(res, "turn", "id")
	c.ReadUntil(isMethod("turn/completed"))
	req := m.Requests()[0]
	top, _ := req.JSON["client_metadata"].(map[string]any)
	if top["thread_id"] != id || top["session_id"] != id || top["turn_id"] != turnID || top["fiber_run_id"] != nil {
		t.Fatalf("client_metadata %v", top)
	}
	body, _ := top["x-codex-turn-metadata"].(string)
	if header := req.Header.Get("x-codex-turn-metadata"); header != body {
		t.Fatalf("x-codex-turn-metadata header %q, body %q", header, body)
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(body), &meta); err != nil {
		t.Fatalf("x-codex-turn-metadata %q: %v", body, err)
	}
	if meta["fiber_run_id"] != "fiber-start-123" || meta["origin"] != "gaas" || meta["turn_id"] != turnID || meta["thread_id"] != id || meta["session_id"] != id {
		t.Fatalf("turn metadata %v", meta)
	}
}
