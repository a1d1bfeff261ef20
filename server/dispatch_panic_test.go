package server

import (
	"context"
	"testing"
)

// A panic after the result was queued must neither answer the request a
// second time nor leave the connection's outbox held.
func TestPanicAfterResultAnswersOnceAndReleasesHold(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/boom", func(ctx context.Context, c *Conn, params any) (any, error) {
		c.AfterResponse(ctx, func() { panic("after-response bug") })
		return map[string]string{"ok": "yes"}, nil
	})
	s.Handle("x/ping", func(ctx context.Context, c *Conn, params any) (any, error) {
		return map[string]string{"pong": "1"}, nil
	})
	c := connect(t, s)
	c.initialize(nil)
	id := c.request("x/boom", nil)
	if m := c.next(); string(m.ID) != string(id) || m.Result == nil {
		t.Fatalf("got %s, want the result", m.raw)
	}
	ping := c.request("x/ping", nil)
	m := c.next()
	if string(m.ID) == string(id) {
		t.Fatalf("request %s answered twice: %s", id, m.raw)
	}
	if string(m.ID) != string(ping) {
		t.Fatalf("got %s, want the ping result", m.raw)
	}
}
