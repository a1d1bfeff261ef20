package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// askHandler makes a server request and returns the client's answer.
func askHandler(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
	call, err := r.Conn().Request("item/tool/requestUserInput", map[string]string{"q": "?"})
	if err != nil {
		return nil, err
	}
	res, err := call.Wait(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]json.RawMessage{"answer": res}, nil
}

func TestCallRoundTripIDsPerConnection(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/ask", askHandler)
	for _, c := range []*rpctest.Client{rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)} {
		c.Initialize(nil)
		for want := 0; want < 3; want++ {
			id := c.Request("x/ask", nil)
			req := c.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "item/tool/requestUserInput" })
			if string(req.ID) != jsonInt(want) {
				t.Fatalf("server request id %s, want %d", req.ID, want)
			}
			if _, ok := req.Fields["emittedAtMs"]; ok {
				t.Fatalf("server request carries emittedAtMs: %s", req.Raw)
			}
			if string(req.Params) != `{"q":"?"}` {
				t.Fatalf("params %s", req.Params)
			}
			c.Send(map[string]any{"id": req.ID, "result": map[string]int{"n": want}})
			if m := c.Response(id); string(m.Result) != `{"answer":{"n":`+jsonInt(want)+`}}` {
				t.Fatalf("got %s", m.Raw)
			}
		}
	}
}

func TestCallErrorReplyIsProtocolError(t *testing.T) {
	s := newTestServer(t, nil)
	got := make(chan error, 1)
	Handle(s, "x/ask", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		call, err := r.Conn().Request("x/q", nil)
		if err == nil {
			_, err = call.Wait(ctx)
		}
		got <- err
		return nil, nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	c.Request("x/ask", nil)
	req := c.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "x/q" })
	if _, ok := req.Fields["params"]; ok {
		t.Fatalf("nil params should be omitted: %s", req.Raw)
	}
	c.SendRaw(`{"id":` + string(req.ID) + `,"error":{"code":-32000,"message":"user said no","data":{"x":1}}}`)
	err := <-got
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != -32000 || perr.Message != "user said no" || string(perr.Data) != `{"x":1}` {
		t.Fatalf("err %v", err)
	}
}

func TestCallCancelledThenLateAnswerIgnored(t *testing.T) {
	s := newTestServer(t, nil)
	got := make(chan error, 1)
	var conn *Conn
	Handle(s, "x/ask", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		conn = r.Conn()
		call, err := conn.Request("x/q", nil)
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = call.Wait(cctx)
		got <- err
		return "ended", nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	id := c.Request("x/ask", nil)
	req := c.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "x/q" })
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	c.Response(id)
	if conn.PendingCalls() != 0 {
		t.Fatalf("pending table not cleaned")
	}
	c.Send(map[string]any{"id": req.ID, "result": map[string]int{}})
	c.AssertNoMessage()
}

func TestCallEndsWhenConnectionCloses(t *testing.T) {
	s := newTestServer(t, nil)
	got := make(chan error, 1)
	asked := make(chan struct{})
	Handle(s, "x/ask", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		call, err := r.Conn().Request("x/q", nil)
		close(asked)
		if err == nil {
			_, err = call.Wait(context.Background())
		}
		got <- err
		return nil, nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	c.Request("x/ask", nil)
	<-asked
	c.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "x/q" })
	c.Close()
	if err := <-got; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("err %v", err)
	}
}

// The in-flight limit bounds requests, never responses: a handler that
// waits for the client's answer holds the only slot, further requests are
// refused, and the answer still gets through.
func TestResponsesPassWhileRequestsAreRefused(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Limits.MaxInflightPerConnection = 1
		o.Limits.MaxQueuedRequestBytes = 0
	})
	Handle(s, "x/ask", askHandler)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	id := c.Request("x/ask", nil)
	req := c.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "item/tool/requestUserInput" })
	for i := 0; i < 10; i++ {
		rpctest.WantError(t, c.Call("x/ask", nil), protocol.CodeOverloaded, "Server overloaded; retry later.")
	}
	c.Send(map[string]any{"id": req.ID, "result": "yes"})
	if m := c.Response(id); string(m.Result) != `{"answer":"yes"}` {
		t.Fatalf("got %s", m.Raw)
	}
}

// Cancel ends a call at once, and its late answer is ignored; Result says
// why a call ended.
func TestCallCancelAndResult(t *testing.T) {
	s := newTestServer(t, nil)
	calls := make(chan *Call, 2)
	Handle(s, "x/ask", func(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
		for _, m := range []string{"x/a", "x/b"} {
			call, err := r.Conn().Request(m, nil)
			if err != nil {
				return nil, err
			}
			calls <- call
		}
		return nil, nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	c.Call("x/ask", nil)
	a, b := <-calls, <-calls
	if _, err := a.Result(); err == nil {
		t.Fatal("Result of a pending call has no error")
	}
	a.Cancel()
	<-a.Done()
	if _, err := a.Result(); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled call: %v", err)
	}
	reqA := c.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "x/a" })
	reqB := c.ReadUntil(func(m rpctest.Msg) bool { return m.Method == "x/b" })
	c.Answer(reqA.ID, "late")
	c.Answer(reqB.ID, "yes")
	<-b.Done()
	if res, err := b.Result(); err != nil || string(res) != `"yes"` {
		t.Fatalf("answered call: %s %v", res, err)
	}
	if res, err := a.Result(); !errors.Is(err, ErrCancelled) || res != nil {
		t.Fatalf("late answer changed a cancelled call: %s %v", res, err)
	}
	if n := a.Conn().PendingCalls(); n != 0 {
		t.Fatalf("%d calls still pending", n)
	}
}
