package threads

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
	"github.com/agentd-dev/agentd/server/transport"
)

// A request is on its way to a slow connection B (stdio, queue full)
// when connection A answers it. B must still get serverRequest/resolved:
// the request reached its wire, and the resolution is queued behind it.
func TestResolvedReachesAConnectionSentToWhileAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, conns := grabEngine(2)
		cls, cs := grabClients(t, s, conns, 1)
		a, ca := cls[0], cs[0]
		// B reads only when the test says so.
		bEnd, cb := pipeConn(t, s, conns)
		defer bEnd.Close()

		th, req := bareThread(t, ca, cb)
		sent := sendWhileFull(t, th, req, cb) // sent to A; waiting for room on B
		m := a.ReadUntil(method("item/tool/call"))
		a.Answer(m.ID, map[string]any{"contentItems": []any{}, "success": true})
		synctest.Wait() // the answer is taken: the request waits no more
		th.mu.Lock()
		waiting := th.proj.Waiting(req)
		th.mu.Unlock()
		if waiting {
			t.Fatal("A's answer was not taken")
		}
		// B catches up; the request reaches it; the deliverer then
		// delivers the resolution queued meanwhile.
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				m, err := bEnd.Read(context.Background())
				if err != nil {
					return
				}
				got = append(got, string(m))
				if strings.Contains(string(m), "serverRequest/resolved") {
					return
				}
			}
		}()
		<-sent
		th.resolved(req)
		select {
		case <-done:
		case <-time.After(rpctest.WaitTimeout):
		}
		all := strings.Join(got, "\n")
		if !strings.Contains(all, `"method":"item/tool/call"`) {
			t.Fatalf("B did not get the request:\n%s", all)
		}
		if !strings.Contains(all, "serverRequest/resolved") {
			t.Fatalf("B got the request but never serverRequest/resolved:\n%s", all)
		}
	})
}

// sendWhileFull fills the queue of c (a stdio-like connection, queue of
// two messages, whose client does not read: the pipe holds one, the writer
// one, the queue two of 64 KiB, as much as it may hold; the fifth waits),
// then sends req to th's subscribers as the deliverer does, and returns
// once the send waits for room on c; the channel closes when it is done.
// Call it in a synctest bubble.
func sendWhileFull(t *testing.T, th *thread, req *projection.Pending, c *rpc.Conn) <-chan struct{} {
	t.Helper()
	go func() {
		for i := 0; i < 5; i++ {
			c.Notify("x/filler", map[string]string{"pad": strings.Repeat("f", 64<<10)})
		}
	}()
	synctest.Wait()
	sent := make(chan struct{})
	go func() {
		th.sendRequest(req, th.subs, nil)
		close(sent)
	}()
	synctest.Wait()
	select {
	case <-sent:
		t.Fatal("the request did not wait for the full queue")
	default:
	}
	return sent
}

// A connection that unsubscribes while a request is being sent to it (its
// queue full) gets the request, may still answer it (its answer is
// taken), and then gets serverRequest/resolved.
func TestAConnectionThatLeftWhileSentMayAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, conns := grabEngine(2)
		bEnd, cb := pipeConn(t, s, conns)
		defer bEnd.Close()
		th, req := bareThread(t, cb)
		sent := sendWhileFull(t, th, req, cb)
		th.unsubscribe(cb)
		// A fake hour (synctest): B reads until the request comes.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		read := func(what string) rpctest.Msg {
			t.Helper()
			for {
				b, err := bEnd.Read(ctx)
				if err != nil {
					t.Fatalf("B waited for %s: %v", what, err)
				}
				if m := rpctest.Parse(t, b); m.Method == what {
					return m
				}
			}
		}
		m := read("item/tool/call")
		<-sent
		answer, _ := json.Marshal(map[string]any{"id": m.ID, "result": map[string]any{"contentItems": []any{}, "success": true}})
		if err := bEnd.Write(ctx, answer); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the answer is taken: the request waits no more
		th.mu.Lock()
		waiting := th.proj.Waiting(req)
		th.mu.Unlock()
		if waiting {
			t.Fatal("the answer of a connection that left while the request was sent was not taken")
		}
		th.resolved(req) // as the deliverer does
		if m := read("serverRequest/resolved"); !strings.Contains(string(m.Params), `"threadId":"th"`) {
			t.Fatalf("resolution %s", m.Raw)
		}
	})
}

// pipeConn connects a client to s over a pipe of one message (a stdio
// client that reads only when the test does), initialized, and returns
// its end and the server side of its connection.
func pipeConn(t *testing.T, s *rpc.Server, conns <-chan *rpc.Conn) (transport.Stream, *rpc.Conn) {
	t.Helper()
	srvEnd, bEnd := transport.Pipe(1)
	go s.ServeStream(srvEnd)
	for _, m := range []string{`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"b","version":"1"}}}`, `{"id":2,"method":"x/grab"}`} {
		if err := bEnd.Write(context.Background(), []byte(m)); err != nil {
			t.Fatal(err)
		}
		if _, err := bEnd.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return bEnd, <-conns
}

// bareThread is a thread of subs, with no pump or deliverer (the test
// plays the deliverer), waiting on one dynamic tool call request.
func bareThread(t *testing.T, subs ...*rpc.Conn) (*thread, *projection.Pending) {
	t.Helper()
	sess, err := core.NewSession(core.Config{ThreadID: "th", Cwd: t.TempDir(),
		Client: model.NewClient(model.Provider{ID: "none", BaseURL: "http://127.0.0.1:1"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Shutdown(context.Background()) })
	th := &thread{id: "th", sess: sess, log: zap.NewNop(), wake: make(chan struct{}, 1),
		proj: projection.NewThread("th", protocol.StatusIdle()), subs: subs,
		hooks: map[*rpc.Conn]func(){}, subGen: map[*rpc.Conn]uint64{},
		turnRunning: true, // as the projected turn: no unload timer
		delivering:  true} // the test plays the deliverer: none is started
	th.room = sync.NewCond(&th.mu)
	th.proj.Apply(core.Event{TurnID: "turn", Msg: core.TurnStarted{}})
	for _, o := range th.proj.Apply(core.Event{TurnID: "turn", Msg: core.DynamicToolCallRequest{CallID: "c1", Tool: "t", Arguments: json.RawMessage(`{}`)}}) {
		if o.Request != nil {
			return th, o.Request
		}
	}
	t.Fatal("no request projected")
	return nil, nil
}

// grabEngine is an engine with a method that hands the test the server
// side of each connection that calls it.
func grabEngine(queue int) (*rpc.Server, <-chan *rpc.Conn) {
	s := rpc.New(rpc.Options{Limits: rpc.Limits{MaxInflightPerConnection: 8, MaxInflight: 64,
		MaxMessageBytes: 1 << 20, OutboundQueueSize: queue, ShutdownTimeout: time.Second}})
	conns := make(chan *rpc.Conn, 4)
	rpc.Handle(s, "x/grab", func(_ context.Context, r *rpc.Request, _ *json.RawMessage) (any, error) {
		conns <- r.Conn()
		return nil, nil
	})
	return s, conns
}

// grabClients connects n clients to s and returns them with the server
// side of their connections.
func grabClients(t *testing.T, s *rpc.Server, conns <-chan *rpc.Conn, n int) ([]*rpctest.Client, []*rpc.Conn) {
	var cls []*rpctest.Client
	var cs []*rpc.Conn
	for i := 0; i < n; i++ {
		c := rpctest.Connect(t, s.ServeStream)
		c.Initialize(nil)
		c.Call("x/grab", nil)
		cls, cs = append(cls, c), append(cs, <-conns)
	}
	return cls, cs
}

// A request queued while a connection was subscribed, and delivered after
// it unsubscribed, is not sent to it.
func TestRequestNotSentToAConnectionThatLeft(t *testing.T) {
	s, conns := grabEngine(64)
	cls, cs := grabClients(t, s, conns, 2)
	th, req := bareThread(t, cs...)
	queuedFor := th.subs
	th.unsubscribe(cs[1])
	th.sendRequest(req, queuedFor, nil) // the delivery queued before
	cls[0].ReadUntil(method("item/tool/call"))
	cls[1].AssertNoMessage()
}

// A tentative subscription (turn/start's, before the core accepts the
// turn) is undone when the turn is refused, but not when another request
// of the same client subscribed it meanwhile, nor when it was subscribed
// before.
func TestTentativeSubscriptionUndo(t *testing.T) {
	s, conns := grabEngine(64)
	_, cs := grabClients(t, s, conns, 1)
	c := cs[0]
	th, _ := bareThread(t)
	subscribed := func() bool {
		th.mu.Lock()
		defer th.mu.Unlock()
		return slices.Contains(th.subs, c)
	}
	undo := th.subscribeTentatively(c)
	undo()
	if subscribed() {
		t.Fatal("a refused turn left its client subscribed")
	}
	undo = th.subscribeTentatively(c)
	th.subscribe(c, true) // a resume of the same client, meanwhile
	undo()
	if !subscribed() {
		t.Fatal("a refused turn undid another request's subscription")
	}
	th.subscribeTentatively(c)() // subscribed before: nothing to undo
	if !subscribed() {
		t.Fatal("a refused turn unsubscribed a client subscribed before it")
	}
}

// A second shutdown (the unload timer racing thread/archive) returns only
// once the first has finished: here the first waits for a subscriber that
// does not read.
func TestSecondShutdownWaitsForTheFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, conns := grabEngine(2)
		bEnd, cb := pipeConn(t, s, conns)
		sess, err := core.NewSession(core.Config{ThreadID: "th", Cwd: t.TempDir(),
			Client: model.NewClient(model.Provider{ID: "none", BaseURL: "http://127.0.0.1:1"})})
		if err != nil {
			t.Fatal(err)
		}
		cfg := config.Default(t.TempDir())
		sv := &service{live: config.Fixed(cfg), log: zap.NewNop()}
		th := newThread(sv, loadSpec{id: "th", settings: threadSettings{cfg: cfg}, status: protocol.StatusIdle()}, sess)
		th.subscribe(cb, false)
		go func() { // B stops reading: its queue fills (2 × 64 KiB)
			for i := 0; i < 5; i++ {
				cb.Notify("x/filler", map[string]string{"pad": strings.Repeat("x", 64<<10)})
			}
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		go th.shutdown(ctx, projection.Output{Method: "x/last"})
		synctest.Wait() // the first shutdown waits for B
		second := make(chan struct{})
		go func() {
			th.shutdown(ctx)
			close(second)
		}()
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("the second shutdown returned while the first was still delivering")
		default:
		}
		// B reads again: both shutdowns end.
		go func() {
			for {
				if _, err := bEnd.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		<-second
		select {
		case <-th.stopped:
		default:
			t.Fatal("the second shutdown returned before the first had finished")
		}
		bEnd.Close()
	})
}

// A connection that closes while a request waits for it leaves the
// request's route (the thread keeps no reference to it); the other
// connection still answers it.
func TestClosedConnectionLeavesTheRoute(t *testing.T) {
	s, conns := grabEngine(64)
	cls, cs := grabClients(t, s, conns, 2)
	th, req := bareThread(t)
	th.subscribe(cs[0], false)
	th.subscribe(cs[1], false)
	th.sendRequest(req, th.subs, nil)
	m := cls[0].ReadUntil(method("item/tool/call"))
	cls[1].ReadUntil(method("item/tool/call"))
	routed := func(c *rpc.Conn) bool {
		th.mu.Lock()
		defer th.mu.Unlock()
		_, ok := routeOf(req).callOn(c)
		return ok
	}
	if !routed(cs[1]) {
		t.Fatal("the request was not routed to the second connection")
	}
	cls[1].Close()
	for deadline := time.Now().Add(rpctest.WaitTimeout); routed(cs[1]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection is still in the request's route")
		}
	}
	cls[0].Answer(m.ID, map[string]any{"contentItems": []any{}, "success": true})
	for deadline := time.Now().Add(rpctest.WaitTimeout); ; time.Sleep(10 * time.Millisecond) {
		th.mu.Lock()
		waiting := th.proj.Waiting(req)
		th.mu.Unlock()
		if !waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the remaining connection's answer was not taken")
		}
	}
}
