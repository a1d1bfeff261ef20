package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// These tests run the thread layer on a real engine, over in-memory
// connections, with the built-in demo model on loopback.

type fixture struct {
	t  *testing.T
	s  *rpc.Server
	sv *service
}

func newFixture(t *testing.T, mutate func(*config.Config)) *fixture {
	t.Helper()
	cfg, err := config.Load(config.Options{Home: t.TempDir(), Overrides: []string{`model_provider="demo"`}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(cfg)
	}
	log := zaptest.NewLogger(t)
	s := rpc.New(rpc.Options{Limits: rpc.Limits{
		MaxInflightPerConnection: 128, MaxInflight: 1024, MaxMessageBytes: 16 << 20,
		OutboundQueueSize: cfg.Server.OutboundQueueSize, ShutdownTimeout: 5 * time.Second,
	}, Home: cfg.Home, Logger: log})
	sv, err := newService(s, Options{Config: cfg, Log: log, Version: "test", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sv.register()
	t.Cleanup(func() { s.Shutdown("test over") })
	return &fixture{t: t, s: s, sv: sv}
}

func (f *fixture) client() *rpctest.Client {
	c := rpctest.Connect(f.t, f.s.ServeStream)
	c.Initialize(nil)
	return c
}

// startThread starts a thread in a new temporary directory and returns
// its id.
func (f *fixture) startThread(c *rpctest.Client, params map[string]any) string {
	f.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["cwd"]; !ok {
		params["cwd"] = f.t.TempDir()
	}
	m := c.Call("thread/start", params)
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.Thread.ID == "" {
		f.t.Fatalf("thread/start: %s", m.Raw)
	}
	c.ReadUntil(method("thread/started"))
	return r.Thread.ID
}

func method(name string) func(rpctest.Msg) bool {
	return func(m rpctest.Msg) bool { return m.Method == name }
}

func textInput(text string) []map[string]any {
	return []map[string]any{{"type": "text", "text": text}}
}

// waitFor polls cond until it holds (the unload timer fires on its own).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(rpctest.WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// thread/start loads a thread into the registry; thread/loaded/list shows
// it; a turn runs on it.
func TestRegistryLoadsAndLists(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	id := f.startThread(c, nil)
	if f.sv.threads.get(id) == nil {
		t.Fatal("thread not in the registry")
	}
	m := c.Call("thread/loaded/list", map[string]any{})
	if string(m.Result) != fmt.Sprintf(`{"data":[%q]}`, id) && string(m.Result) != fmt.Sprintf(`{"data":[%q],"nextCursor":null}`, id) {
		t.Fatalf("loaded list %s", m.Raw)
	}
	c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hello")})
	if m := c.ReadUntil(method("turn/completed")); m.Error != nil {
		t.Fatal(m.Raw)
	}
}

// An idle thread without subscribers unloads after the delay: every
// connection is told (notLoaded, then thread/closed), its goroutines end,
// and the registry forgets it.
func TestIdleThreadUnloads(t *testing.T) {
	f := newFixture(t, func(cfg *config.Config) { cfg.Server.ThreadUnloadDelay = 50 * time.Millisecond })
	c, watcher := f.client(), f.client()
	id := f.startThread(c, nil)
	// A turn, so that the thread has a rollout to be loaded from again.
	c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hello")})
	c.ReadUntil(method("turn/completed"))
	c.DropSkipped()
	th := f.sv.threads.get(id)
	if m := c.Call("thread/unsubscribe", map[string]any{"threadId": id}); string(m.Result) != `{"status":"unsubscribed"}` {
		t.Fatalf("unsubscribe: %s", m.Raw)
	}
	for _, cl := range []*rpctest.Client{c, watcher} {
		st := cl.ReadUntil(method("thread/status/changed"))
		if string(st.Params) != fmt.Sprintf(`{"threadId":%q,"status":{"type":"notLoaded"}}`, id) {
			t.Fatalf("status %s", st.Raw)
		}
		cl.ReadUntil(method("thread/closed"))
	}
	if f.sv.threads.get(id) != nil {
		t.Fatal("unloaded thread still in the registry")
	}
	select {
	case <-th.pumpDone:
	default:
		t.Fatal("pump still running")
	}
	select {
	case <-th.deliverDone:
	default:
		t.Fatal("deliverer still running")
	}
	// A later turn loads it again from its rollout.
	if m := c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("again")}); m.Error != nil {
		t.Fatalf("turn on an unloaded thread: %s", m.Raw)
	}
	c.ReadUntil(method("turn/completed"))
}

// A subscribed connection keeps an idle thread loaded for
// observedUnloadFactor times the delay, not forever.
func TestObservedThreadUnloadsLater(t *testing.T) {
	const delay = 20 * time.Millisecond
	f := newFixture(t, func(cfg *config.Config) { cfg.Server.ThreadUnloadDelay = delay })
	c := f.client()
	start := time.Now()
	id := f.startThread(c, nil)
	c.ReadUntil(method("thread/closed"))
	if took := time.Since(start); took < observedUnloadFactor*delay {
		t.Fatalf("a watched thread unloaded after %v, before %v", took, observedUnloadFactor*delay)
	}
	if f.sv.threads.get(id) != nil {
		t.Fatal("still loaded")
	}
}

// Subscribers get the thread's events; an unsubscribed one gets nothing
// more; unsubscribing twice, or from an unknown thread, says so.
func TestSubscribeAndUnsubscribe(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.client(), f.client()
	id := f.startThread(a, nil)
	if m := b.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true}); m.Error != nil {
		t.Fatalf("resume: %s", m.Raw)
	}
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("one")})
	for _, c := range []*rpctest.Client{a, b} {
		c.ReadUntil(method("turn/started"))
		c.ReadUntil(method("turn/completed"))
	}
	if m := b.Call("thread/unsubscribe", map[string]any{"threadId": id}); string(m.Result) != `{"status":"unsubscribed"}` {
		t.Fatalf("unsubscribe: %s", m.Raw)
	}
	if m := b.Call("thread/unsubscribe", map[string]any{"threadId": id}); string(m.Result) != `{"status":"notSubscribed"}` {
		t.Fatalf("second unsubscribe: %s", m.Raw)
	}
	if m := b.Call("thread/unsubscribe", map[string]any{"threadId": "0190e6b1-0000-7000-8000-000000000000"}); string(m.Result) != `{"status":"notLoaded"}` {
		t.Fatalf("unknown thread: %s", m.Raw)
	}
	b.DropSkipped()
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("two")})
	a.ReadUntil(method("turn/completed"))
	b.AssertNoMessage()
}

// A connection that closes is unsubscribed.
func TestClosedConnectionIsUnsubscribed(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.client(), f.client()
	id := f.startThread(a, nil)
	b.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})
	th := f.sv.threads.get(id)
	subs := func() int {
		th.mu.Lock()
		defer th.mu.Unlock()
		return len(th.subs)
	}
	if subs() != 2 {
		t.Fatalf("%d subscribers, want 2", subs())
	}
	b.Close()
	waitFor(t, "the closed connection to be unsubscribed", func() bool { return subs() == 1 })
}

// Closing every thread (the daemon's shutdown) ends their goroutines and
// a running turn; the subscribers see the turn end.
func TestCloseAllEndsThreads(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	ids := []string{f.startThread(c, nil), f.startThread(c, nil)}
	ctx, cancel := context.WithTimeout(context.Background(), rpctest.WaitTimeout)
	defer cancel()
	f.sv.threads.closeAll(ctx)
	for _, id := range ids {
		th := f.sv.threads.get(id)
		for name, ch := range map[string]chan struct{}{"pump": th.pumpDone, "deliverer": th.deliverDone} {
			select {
			case <-ch:
			default:
				t.Fatalf("%s of %s still running", name, id)
			}
		}
	}
}

// A server request reaches every subscriber with that connection's own
// id; the first answer wins, every connection is told it is resolved, and
// a later answer is ignored.
func TestServerRequestFirstAnswerWins(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.client(), f.client()
	dir := t.TempDir()
	id := f.startThread(a, map[string]any{"cwd": dir})
	b.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})
	b.Request("x/ping", nil) // ids on b now differ from a's
	target := filepath.Join(dir, "made")
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("run: touch " + target),
		"approvalPolicy": "untrusted", "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}})
	reqA := a.ReadUntil(method("item/commandExecution/requestApproval"))
	reqB := b.ReadUntil(method("item/commandExecution/requestApproval"))
	if string(reqA.Params) != string(reqB.Params) {
		t.Fatalf("different requests:\n%s\n%s", reqA.Raw, reqB.Raw)
	}
	b.Answer(reqB.ID, map[string]any{"decision": "accept"})
	for _, x := range []struct {
		c  *rpctest.Client
		id json.RawMessage
	}{{a, reqA.ID}, {b, reqB.ID}} {
		m := x.c.ReadUntil(method("serverRequest/resolved"))
		if string(m.Params) != fmt.Sprintf(`{"threadId":%q,"requestId":%s}`, id, x.id) {
			t.Fatalf("resolved %s, want request id %s", m.Raw, x.id)
		}
	}
	a.Answer(reqA.ID, map[string]any{"decision": "decline"}) // too late: ignored
	a.ReadUntil(method("turn/completed"))
	b.ReadUntil(method("turn/completed"))
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the accepted command did not run: %v", err)
	}
}

// A connection that unsubscribes while a request waits is withdrawn from
// it (told it is resolved for it): the request is settled by the others,
// A connection that unsubscribes while an approval waits for it may still
// answer it, as in the reference: its answer is taken, the command runs
// and the turn completes, and every connection the request reached is
// told it is resolved.
func TestUnsubscribedClientMayStillAnswer(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.client(), f.client()
	dir := t.TempDir()
	id := f.startThread(a, map[string]any{"cwd": dir})
	b.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})
	target := filepath.Join(dir, "x")
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("run: touch " + target),
		"approvalPolicy": "untrusted", "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}})
	a.ReadUntil(method("item/commandExecution/requestApproval"))
	reqB := b.ReadUntil(method("item/commandExecution/requestApproval"))
	if m := b.Call("thread/unsubscribe", map[string]any{"threadId": id}); m.Error != nil {
		t.Fatalf("unsubscribe: %s", m.Raw)
	}
	b.Answer(reqB.ID, map[string]any{"decision": "accept"})
	a.ReadUntil(method("serverRequest/resolved"))
	a.ReadUntil(method("turn/completed"))
	if m := b.ReadUntil(method("serverRequest/resolved")); string(m.Params) != fmt.Sprintf(`{"threadId":%q,"requestId":%s}`, id, reqB.ID) {
		t.Fatalf("resolution: %s", m.Raw)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the command approved by the unsubscribed client did not run: %v", err)
	}
}

// A request still waiting is re-sent to a connection that resumes the
// thread, after the resume result.
func TestResumeReplaysPendingRequestAfterResult(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.client(), f.client()
	dir := t.TempDir()
	id := f.startThread(a, map[string]any{"cwd": dir})
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("run: touch " + filepath.Join(dir, "y")),
		"approvalPolicy": "untrusted", "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}})
	reqA := a.ReadUntil(method("item/commandExecution/requestApproval"))
	resume := b.Request("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})
	if m := b.Next(); string(m.ID) != string(resume) {
		t.Fatalf("got %s before the resume result", m.Raw)
	}
	if m := b.Next(); m.Method != "item/commandExecution/requestApproval" || string(m.Params) != string(reqA.Params) {
		t.Fatalf("got %s, want the pending request re-sent", m.Raw)
	}
	a.Answer(reqA.ID, map[string]any{"decision": "decline"})
	b.ReadUntil(method("serverRequest/resolved"))
	b.ReadUntil(method("turn/completed"))
}

// turn/start's result always precedes the turn's events on the
// requesting connection, with the scheduler perturbed; another subscriber
// gets every event too.
func TestTurnStartResultPrecedesItsEvents(t *testing.T) {
	for _, procs := range []int{1, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			f := newFixture(t, nil)
			a, b := f.client(), f.client()
			id := f.startThread(a, nil)
			b.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})
			for i := 0; i < 20; i++ {
				a.DropSkipped()
				req := a.Request("turn/start", map[string]any{"threadId": id, "input": textInput(fmt.Sprint("turn ", i))})
				if m := a.Next(); string(m.ID) != string(req) {
					t.Fatalf("turn %d: got %s before the turn/start result", i, m.Raw)
				}
				if m := a.Next(); m.Method != "thread/status/changed" && m.Method != "turn/started" {
					t.Fatalf("turn %d: got %s right after the result", i, m.Raw)
				}
				a.ReadUntil(method("turn/completed"))
				b.ReadUntil(method("turn/started"))
				b.ReadUntil(method("turn/completed"))
			}
		})
	}
}

// A provider's model client is shared while its settings stay the same,
// and remade when a reloaded configuration changes them (the old client
// stays with the threads that use it).
func TestModelClientFollowsTheProviderSettings(t *testing.T) {
	f := newFixture(t, nil)
	p := model.Provider{ID: "custom", BaseURL: "http://127.0.0.1:1/v1", WireAPI: "responses"}
	c1, _, err := f.sv.client(p)
	if err != nil {
		t.Fatal(err)
	}
	if c2, _, _ := f.sv.client(p); c2 != c1 {
		t.Fatal("the same provider got a second client")
	}
	p.HTTPHeaders = map[string]string{"X-Team": "b"}
	c3, _, _ := f.sv.client(p)
	if c3 == c1 {
		t.Fatal("a provider with new settings kept the old client")
	}
	if c4, _, _ := f.sv.client(p); c4 != c3 {
		t.Fatal("the new settings got a second client")
	}
}

// idleUnloadHeld runs a turn on a new thread, leaves it idle without
// subscribers, and returns once its unload has begun and is held (out of
// the registry, its rollout still open) until release is closed.
func idleUnloadHeld(t *testing.T) (f *fixture, id string, release chan struct{}) {
	t.Helper()
	f = newFixture(t, func(cfg *config.Config) { cfg.Server.ThreadUnloadDelay = 50 * time.Millisecond })
	reached, release := make(chan string, 1), make(chan struct{})
	f.sv.unloadingHook = func(id string) {
		reached <- id
		<-release
	}
	c := f.client()
	id = f.startThread(c, nil)
	c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hello")})
	c.ReadUntil(method("turn/completed"))
	c.Call("thread/unsubscribe", map[string]any{"threadId": id})
	select {
	case got := <-reached:
		if got != id {
			t.Fatalf("unloading %s, want %s", got, id)
		}
	case <-time.After(rpctest.WaitTimeout):
		t.Fatal("the idle thread was not unloaded")
	}
	return f, id, release
}

// A client that comes back to a thread while it is being unloaded (out of
// the registry, its rollout still open) waits for the unload to end, is
// told of it, and then gets the thread loaded again: not the rollout's
// "open recorder" error, and no thread/closed after its answer.
func TestResumeWhileUnloadingWaitsForIt(t *testing.T) {
	f, id, release := idleUnloadHeld(t)
	back := f.client()
	rid := back.Request("thread/resume", map[string]any{"threadId": id})
	back.AssertNoMessage() // the resume waits for the unload
	close(release)
	closed := false
	for {
		m := back.Next()
		if m.Method == "thread/closed" {
			closed = true
		}
		if m.Method == "" && string(m.ID) == string(rid) {
			if m.Error != nil || !closed {
				t.Fatalf("resume: %s (thread/closed before it: %v)", m.Raw, closed)
			}
			break
		}
	}
	if m := back.Call("turn/start", map[string]any{"threadId": id, "input": textInput("again")}); m.Error != nil {
		t.Fatalf("turn on the thread loaded again: %s", m.Raw)
	}
	for m := back.Next(); m.Method != "turn/completed"; m = back.Next() {
		if m.Method == "thread/closed" || m.Method == "thread/status/changed" && strings.Contains(string(m.Params), "notLoaded") {
			t.Fatalf("after the thread was loaded again: %s", m.Raw)
		}
	}
}

// A request that holds a thread (between finding it loaded and starting
// a turn on it or subscribing to it) keeps its unload from starting; once
// an unload has started, no hold is granted and the request waits for it
// instead.
func TestHeldThreadIsNotUnloaded(t *testing.T) {
	f := newFixture(t, func(cfg *config.Config) { cfg.Server.ThreadUnloadDelay = time.Hour })
	c := f.client()
	id := f.startThread(c, nil)
	c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hello")})
	c.ReadUntil(method("turn/completed"))
	th := f.sv.threads.get(id)
	release, ok := th.hold()
	if !ok {
		t.Fatal("no hold on an idle thread")
	}
	th.unloadIfIdle()
	if f.sv.threads.get(id) != th {
		t.Fatal("a held thread was unloaded")
	}
	release()
	th.unloadIfIdle()
	if f.sv.threads.get(id) != nil {
		t.Fatal("the thread was not unloaded once released")
	}
	if _, ok := th.hold(); ok {
		t.Fatal("a hold on a thread being unloaded")
	}
	// A turn on it loads it again.
	if m := c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("again")}); m.Error != nil {
		t.Fatalf("turn on the unloaded thread: %s", m.Raw)
	}
	c.ReadUntil(method("turn/completed"))
}

// An injected item that would be a longer line of the thread's record than
// [server] rollout_max_line_bytes is refused, naming it: once recorded,
// the thread could not be read back. One that fits is injected.
func TestInjectedItemLongerThanARecordLine(t *testing.T) {
	f := newFixture(t, func(cfg *config.Config) { cfg.Server.RolloutMaxLineBytes = 16 << 10 })
	c := f.client()
	id := f.startThread(c, nil)
	item := func(n int) map[string]any {
		return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": strings.Repeat("i", n)}}}
	}
	m := c.Call("thread/inject_items", map[string]any{"threadId": id, "items": []any{item(100), item(14 << 10)}})
	rpctest.WantError(t, m, -32600, "Invalid request: items[1]: it would take up to 18.1 KiB in the thread's record, which holds at most 16 KiB a line ([server] rollout_max_line_bytes)")
	if m := c.Call("thread/inject_items", map[string]any{"threadId": id, "items": []any{item(100), item(8 << 10)}}); m.Error != nil {
		t.Fatalf("an item that fits: %s", m.Raw)
	}
}

// A resume that comes while its thread is being archived waits for the
// archive, then loads it from where it was archived, as it would any
// archived thread: not the rollout's "open recorder" error.
func TestResumeWhileArchivingWaitsForIt(t *testing.T) {
	f := newFixture(t, nil)
	reached, release := make(chan string, 1), make(chan struct{})
	c := f.client()
	id := f.startThread(c, nil)
	c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hello")})
	c.ReadUntil(method("turn/completed"))
	f.sv.unloadingHook = func(id string) {
		reached <- id
		<-release
	}
	archived := c.Request("thread/archive", map[string]any{"threadId": id})
	<-reached
	back := f.client()
	rid := back.Request("thread/resume", map[string]any{"threadId": id})
	back.AssertNoMessage() // the resume waits for the archive
	close(release)
	if m := c.Response(archived); m.Error != nil {
		t.Fatalf("archive: %s", m.Raw)
	}
	m := back.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "" && string(m.ID) == string(rid) })
	var res struct{ Thread struct{ Path string } }
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || !strings.Contains(res.Thread.Path, "/archived_sessions/") {
		t.Fatalf("resume after the archive: %.300s", m.Raw)
	}
}

// The daemon's shutdown waits for a thread in the middle of its idle
// unload, whose rollout is still open, before it closes the store.
func TestShutdownWaitsForAnUnload(t *testing.T) {
	f, _, release := idleUnloadHeld(t)
	done := make(chan struct{})
	go func() {
		f.s.Shutdown("test over")
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("the shutdown ended while a thread was being unloaded")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case <-done:
	case <-time.After(rpctest.WaitTimeout):
		t.Fatal("the shutdown did not end once the unload had")
	}
}

// A message whose text inputs hold more than 2^20 characters in all is
// refused with the reference's -32602 and data, by turn/start and by
// turn/steer (before its expected turn is looked at), and no turn starts;
// characters are counted, not bytes.
func TestInputLongerThanTheCharacterLimit(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	id := f.startThread(c, nil)
	wantTooLong := func(m rpctest.Msg, chars int) {
		t.Helper()
		rpctest.WantError(t, m, protocol.CodeInvalidParams, "Input exceeds the maximum length of 1048576 characters.")
		want := fmt.Sprintf(`{"actual_chars":%d,"input_error_code":"input_too_large","max_chars":1048576}`, chars)
		if string(m.Error.Data) != want {
			t.Errorf("data %s, want %s", m.Error.Data, want)
		}
	}
	half := strings.Repeat("x", 600_000)
	wantTooLong(c.Call("turn/start", map[string]any{"threadId": id, "input": []map[string]any{
		{"type": "text", "text": half}, {"type": "text", "text": half}}}), 1_200_000)
	wantTooLong(c.Call("turn/steer", map[string]any{"threadId": id, "expectedTurnId": "nope", "input": textInput(strings.Repeat("x", 1<<20+1))}), 1<<20+1)
	c.AssertNoMessage() // no turn started
	// 1.2 MB of text, 600,000 characters: under the limit.
	if m := c.Call("turn/start", map[string]any{"threadId": id, "input": textInput(strings.Repeat("é", 600_000))}); m.Error != nil {
		t.Fatalf("600,000 characters refused: %s", m.Raw)
	}
	c.ReadUntil(method("turn/completed"))
}

// Resuming a loaded thread, idle or running, leaves its settings as they
// are, as in the reference: the result has the thread's own, and its next
// turn runs with them.
func TestResumeOfALoadedThreadKeepsItsSettings(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.client(), f.client()
	dir, other := t.TempDir(), t.TempDir()
	id := f.startThread(a, map[string]any{"cwd": dir})
	settings := func(m rpctest.Msg) (cwd, approval string) {
		t.Helper()
		var r struct {
			Cwd            string `json:"cwd"`
			ApprovalPolicy string `json:"approvalPolicy"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
			t.Fatalf("resume: %s", m.Raw)
		}
		return r.Cwd, r.ApprovalPolicy
	}
	override := map[string]any{"threadId": id, "cwd": other, "approvalPolicy": "never", "excludeTurns": true}
	if cwd, ap := settings(b.Call("thread/resume", override)); cwd != dir || ap != "on-request" {
		t.Fatalf("resume of an idle thread: cwd %s, approvalPolicy %s", cwd, ap)
	}
	// Running: waiting on an approval.
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("run: touch " + filepath.Join(dir, "x")),
		"approvalPolicy": "untrusted", "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}})
	req := a.ReadUntil(method("item/commandExecution/requestApproval"))
	if cwd, ap := settings(b.Call("thread/resume", override)); cwd != dir || ap != "untrusted" {
		t.Fatalf("resume of a running thread: cwd %s, approvalPolicy %s", cwd, ap)
	}
	a.Answer(req.ID, map[string]any{"decision": "accept"})
	a.ReadUntil(method("turn/completed"))
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("run: pwd")})
	done := a.ReadUntil(func(m rpctest.Msg) bool {
		return m.Method == "item/completed" && strings.Contains(string(m.Params), `"commandExecution"`)
	})
	if !strings.Contains(string(done.Params), fmt.Sprintf(`"cwd":%q`, dir)) {
		t.Fatalf("the next command ran elsewhere: %s", done.Params)
	}
}

// A thread without subscribers is not unloaded while its turn runs (here
// waiting on an approval), however long that takes; its unload delay
// counts from the turn's end.
func TestRunningTurnKeepsTheThreadLoaded(t *testing.T) {
	const delay = 200 * time.Millisecond
	f := newFixture(t, func(cfg *config.Config) { cfg.Server.ThreadUnloadDelay = delay })
	unloading := make(chan time.Time, 1)
	f.sv.unloadingHook = func(string) { unloading <- time.Now() }
	c := f.client()
	dir := t.TempDir()
	id := f.startThread(c, map[string]any{"cwd": dir})
	c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("run: touch " + filepath.Join(dir, "x")),
		"approvalPolicy": "untrusted", "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}})
	req := c.ReadUntil(method("item/commandExecution/requestApproval"))
	if m := c.Call("thread/unsubscribe", map[string]any{"threadId": id}); string(m.Result) != `{"status":"unsubscribed"}` {
		t.Fatalf("unsubscribe: %s", m.Raw)
	}
	// Many times the delay with no subscriber: the turn still waits.
	select {
	case <-unloading:
		t.Fatal("the thread was unloaded while its turn waited on an approval")
	case <-time.After(8 * delay):
	}
	th := f.sv.threads.get(id)
	if th == nil {
		t.Fatal("the thread left the registry while its turn waited on an approval")
	}
	answered := time.Now()
	c.Answer(req.ID, map[string]any{"decision": "accept"})
	select {
	case at := <-unloading:
		if waited := at.Sub(answered); waited < delay {
			t.Fatalf("unloaded %v after the approval, before the delay (%v) from the turn's end", waited, delay)
		}
	case <-time.After(rpctest.WaitTimeout):
		t.Fatal("the thread was not unloaded after its turn ended")
	}
	c.ReadUntil(method("thread/closed"))
	if _, err := os.Stat(filepath.Join(dir, "x")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
}

// A resume of a loaded thread with a path that is not its own file is
// refused, as the reference refuses it; its own path is accepted.
func TestResumeOfALoadedThreadWithAStalePath(t *testing.T) {
	f := newFixture(t, nil)
	c := rpctest.Connect(t, f.s.ServeStream)
	c.Initialize(map[string]any{"experimentalApi": true}) // path is experimental
	paths := map[string]string{}
	var ids []string
	for range 2 {
		id := f.startThread(c, nil)
		c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hello")})
		c.ReadUntil(method("turn/completed"))
		var r struct{ Thread struct{ Path string } }
		if m := c.Call("thread/read", map[string]any{"threadId": id}); m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.Thread.Path == "" {
			t.Fatalf("read: %s", m.Raw)
		}
		ids, paths[id] = append(ids, id), r.Thread.Path
	}
	a, b := ids[0], ids[1]
	rpctest.WantError(t, c.Call("thread/resume", map[string]any{"threadId": a, "path": paths[b]}), protocol.CodeInvalidRequest,
		fmt.Sprintf("cannot resume running thread %s with stale path: requested `%s`, active `%s`", a, paths[b], paths[a]))
	if m := c.Call("thread/resume", map[string]any{"threadId": a, "path": paths[a], "excludeTurns": true}); m.Error != nil {
		t.Fatalf("resume with its own path: %s", m.Raw)
	}
}
