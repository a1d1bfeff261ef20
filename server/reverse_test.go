package server

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
)

// askHandler makes a server request and returns the client's answer.
func askHandler(ctx context.Context, c *Conn, params any) (any, error) {
	res, err := c.Call(ctx, "item/tool/requestUserInput", map[string]string{"q": "?"})
	if err != nil {
		return nil, err
	}
	return map[string]json.RawMessage{"answer": res}, nil
}

func TestCallRoundTripIDsPerConnection(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/ask", askHandler)
	for _, c := range []*testClient{connect(t, s), connect(t, s)} {
		c.initialize(nil)
		for want := 0; want < 3; want++ {
			id := c.request("x/ask", nil)
			req := c.readUntil(func(m msg) bool { return m.Method == "item/tool/requestUserInput" })
			if string(req.ID) != jsonInt(want) {
				t.Fatalf("server request id %s, want %d", req.ID, want)
			}
			if _, ok := req.fields["emittedAtMs"]; ok {
				t.Fatalf("server request carries emittedAtMs: %s", req.raw)
			}
			if string(req.Params) != `{"q":"?"}` {
				t.Fatalf("params %s", req.Params)
			}
			c.send(map[string]any{"id": req.ID, "result": map[string]int{"n": want}})
			if m := c.response(id); string(m.Result) != `{"answer":{"n":`+jsonInt(want)+`}}` {
				t.Fatalf("got %s", m.raw)
			}
		}
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCallErrorReplyIsProtocolError(t *testing.T) {
	s := newTestServer(t, nil)
	got := make(chan error, 1)
	s.Handle("x/ask", func(ctx context.Context, c *Conn, params any) (any, error) {
		_, err := c.Call(ctx, "x/q", nil)
		got <- err
		return nil, nil
	})
	c := connect(t, s)
	c.initialize(nil)
	c.request("x/ask", nil)
	req := c.readUntil(func(m msg) bool { return m.Method == "x/q" })
	if _, ok := req.fields["params"]; ok {
		t.Fatalf("nil params should be omitted: %s", req.raw)
	}
	c.sendRaw(`{"id":` + string(req.ID) + `,"error":{"code":-32000,"message":"user said no","data":{"x":1}}}`)
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
	s.Handle("x/ask", func(ctx context.Context, c *Conn, params any) (any, error) {
		conn = c
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			for c.PendingCalls() == 0 {
				runtime.Gosched()
			}
			cancel()
		}()
		_, err := c.Call(cctx, "x/q", nil)
		got <- err
		return "ended", nil
	})
	c := connect(t, s)
	c.initialize(nil)
	id := c.request("x/ask", nil)
	req := c.readUntil(func(m msg) bool { return m.Method == "x/q" })
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	c.response(id)
	if conn.PendingCalls() != 0 {
		t.Fatalf("pending table not cleaned")
	}
	c.send(map[string]any{"id": req.ID, "result": map[string]int{}})
	c.assertNoMessage()
}

func TestCallEndsWhenConnectionCloses(t *testing.T) {
	s := newTestServer(t, nil)
	got := make(chan error, 1)
	asked := make(chan struct{})
	s.Handle("x/ask", func(ctx context.Context, c *Conn, params any) (any, error) {
		close(asked)
		_, err := c.Call(context.Background(), "x/q", nil)
		got <- err
		return nil, nil
	})
	c := connect(t, s)
	c.initialize(nil)
	c.request("x/ask", nil)
	<-asked
	c.readUntil(func(m msg) bool { return m.Method == "x/q" })
	_ = c.st.Close()
	if err := <-got; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("err %v", err)
	}
}

// The in-flight limit bounds requests, never responses: a handler that
// waits for the client's answer holds the only slot, further requests are
// refused, and the answer still gets through.
func TestResponsesPassWhileRequestsAreRefused(t *testing.T) {
	s := newTestServer(t, func(cfg *config.Config) { cfg.Server.MaxInflightPerConnection = 1 })
	s.Handle("x/ask", askHandler)
	c := connect(t, s)
	c.initialize(nil)
	id := c.request("x/ask", nil)
	req := c.readUntil(func(m msg) bool { return m.Method == "item/tool/requestUserInput" })
	for i := 0; i < 10; i++ {
		wantError(t, c.call("x/ask", nil), protocol.CodeOverloaded, "Server overloaded; retry later.")
	}
	c.send(map[string]any{"id": req.ID, "result": "yes"})
	if m := c.response(id); string(m.Result) != `{"answer":"yes"}` {
		t.Fatalf("got %s", m.raw)
	}
}
