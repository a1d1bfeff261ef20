package threads

import (
	"context"
	"encoding/json"
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
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
	"github.com/agentd-dev/agentd/server/transport"
)

// A request is on its way to a slow connection B (stdio, queue full)
// when connection A answers it. B must still get serverRequest/resolved:
// the request reached its wire, and the resolution is queued behind it.
func TestResolvedReachesAConnectionSentToWhileAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := rpc.New(rpc.Options{Limits: rpc.Limits{MaxInflightPerConnection: 8, MaxInflight: 64,
			MaxMessageBytes: 1 << 20, OutboundQueueSize: 2, ShutdownTimeout: time.Second}})
		conns := make(chan *rpc.Conn, 2)
		rpc.Handle(s, "x/grab", func(_ context.Context, r *rpc.Request, _ *json.RawMessage) (any, error) {
			conns <- r.Conn()
			return nil, nil
		})
		a := rpctest.Connect(t, s.ServeStream)
		a.Initialize(nil)
		a.Call("x/grab", nil)
		ca := <-conns
		// B reads only when the test says so.
		srvEnd, bEnd := transport.Pipe(1)
		go s.ServeStream(srvEnd)
		defer bEnd.Close()
		bRead := func() string {
			m, err := bEnd.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return string(m)
		}
		bWrite := func(m string) {
			if err := bEnd.Write(context.Background(), []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		bWrite(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"b","version":"1"}}}`)
		bRead()
		bWrite(`{"id":2,"method":"x/grab"}`)
		bRead()
		cb := <-conns

		th, req := bareThread(t, ca, cb)
		// Fill B's queue: the pipe holds one, the writer one, the queue
		// two; the fifth waits.
		go func() {
			for i := 0; i < 5; i++ {
				cb.Notify("x/filler", nil)
			}
		}()
		synctest.Wait()
		sent := make(chan struct{})
		go func() {
			th.sendRequest(req, th.subs, nil) // as the deliverer does
			close(sent)
		}()
		synctest.Wait() // sent to A; waiting for room on B
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
		turnRunning: true} // as the projected turn: no unload timer
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

// A request queued while a connection was subscribed, and delivered after
// it unsubscribed, is not sent to it.
func TestRequestNotSentToAConnectionThatLeft(t *testing.T) {
	s := rpc.New(rpc.Options{Limits: rpc.Limits{MaxInflightPerConnection: 8, MaxInflight: 64,
		MaxMessageBytes: 1 << 20, OutboundQueueSize: 64, ShutdownTimeout: time.Second}})
	conns := make(chan *rpc.Conn, 2)
	rpc.Handle(s, "x/grab", func(_ context.Context, r *rpc.Request, _ *json.RawMessage) (any, error) {
		conns <- r.Conn()
		return nil, nil
	})
	a, b := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	a.Initialize(nil)
	b.Initialize(nil)
	a.Call("x/grab", nil)
	b.Call("x/grab", nil)
	ca, cb := <-conns, <-conns
	th, req := bareThread(t, ca, cb)
	queuedFor := th.subs
	th.unsubscribe(cb)
	th.sendRequest(req, queuedFor, nil) // the delivery queued before
	a.ReadUntil(method("item/tool/call"))
	b.AssertNoMessage()
}
