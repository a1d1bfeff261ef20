package rpc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
	"github.com/agentd-dev/agentd/server/transport"
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

// socketStream is a stream that may not wait when its queue is full.
type socketStream struct{ transport.Stream }

func (s socketStream) Info() transport.Info {
	i := s.Stream.Info()
	i.WaitWhenFull = false
	return i
}

// On a socket whose queue is full, ResponseFirst cannot reserve the
// response's place: the client is disconnected, as any other message
// would disconnect it, rather than letting later events overtake the
// response.
func TestResponseFirstOnAFullSocketQueueDisconnects(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.Limits.OutboundQueueSize = 2 }) // 128 KiB
	srv, cli := transport.Pipe(1)
	defer cli.Close()
	c := newConn(s, 1, socketStream{srv})
	c.out.start = func() {} // no writer runs: the queue stays full
	c.sess.Store(&session{optOut: map[string]struct{}{}})
	c.Notify("a", map[string]string{"pad": strings.Repeat("x", 2*outboxBytesPerMessage)})
	r := &Request{conn: c, id: json.RawMessage("7"), method: "turn/start"}
	r.ResponseFirst()
	select {
	case <-c.Done():
	default:
		t.Fatal("a socket client whose queue is full was not disconnected")
	}
	if r.slot != nil {
		t.Fatal("a slot was reserved in a full socket queue")
	}
}

// Handlers still running at the shutdown deadline have their requests
// answered for them (every request is answered), so that what is queued
// behind a reserved response is still written; their own answers, later,
// are not sent.
func TestShutdownAnswersResponsesStillReserved(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.Limits.ShutdownTimeout = 50 * time.Millisecond })
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 2)
	Handle(s, "x/stuck", func(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
		r.ResponseFirst()
		r.Conn().Notify("x/behind", nil)
		started <- struct{}{}
		<-release
		return "too late", nil
	})
	Handle(s, "x/slow", func(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
		started <- struct{}{}
		<-release
		return "too late", nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	slow := c.Request("x/slow", nil)
	<-started
	stuck := c.Request("x/stuck", nil)
	<-started
	go s.Shutdown("test")
	// Every request is answered, once; what waited behind the reserved
	// place follows that answer.
	answers := map[string]bool{}
	var behindAfterStuck bool
	for len(answers) < 2 || !behindAfterStuck {
		m := c.Next()
		switch {
		case m.Method == "x/behind":
			behindAfterStuck = answers[string(stuck)]
			if !behindAfterStuck {
				t.Fatalf("got %s before the answer it was queued behind", m.Raw)
			}
		case string(m.ID) == string(stuck) || string(m.ID) == string(slow):
			if answers[string(m.ID)] {
				t.Fatalf("answered twice: %s", m.Raw)
			}
			rpctest.WantError(t, m, protocol.CodeInternalError, "the server is shutting down")
			answers[string(m.ID)] = true
		default:
			t.Fatalf("unexpected %s", m.Raw)
		}
	}
}

// A handler that returns no result (a nil pointer) answers {}.
func TestNilResultIsEmptyObject(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "thread/archive", func(context.Context, *Request, *protocol.ThreadIDParams) (*protocol.Empty, error) {
		return nil, nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	if m := c.Call("thread/archive", map[string]any{"threadId": "x"}); string(m.Result) != "{}" {
		t.Fatalf("got %s", m.Raw)
	}
}
