package rpc

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// A handler that panics after reserving its response's place still
// answers, once, and the connection goes on: the slot is filled with the
// internal error, so the writer is not stuck behind it.
func TestPanicAfterResponseFirstAnswersOnceAndUnblocks(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/boom", func(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
		r.ResponseFirst()
		r.Then("x/after", nil)
		r.Conn().Notify("x/queued", nil)
		panic("handler bug")
	})
	Handle(s, "x/ping", func(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
		return map[string]string{"pong": "1"}, nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	id := c.Request("x/boom", nil)
	m := c.Next()
	if string(m.ID) != string(id) {
		t.Fatalf("got %s, want the answer to x/boom first", m.Raw)
	}
	rpctest.WantError(t, m, -32603, "internal error in x/boom")
	if m := c.Next(); m.Method != "x/queued" {
		t.Fatalf("got %s, want the notification queued behind the answer (and no Then after an error)", m.Raw)
	}
	ping := c.Request("x/ping", nil)
	if m := c.Next(); string(m.ID) != string(ping) {
		t.Fatalf("got %s, want the ping result", m.Raw)
	}
}
