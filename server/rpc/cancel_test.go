package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// cancel sends $/cancelRequest for id.
func cancel(c *rpctest.Client, id json.RawMessage) {
	c.Send(map[string]any{"method": CancelMethod, "params": map[string]any{"id": id}})
}

// A running handler's context is cancelled by $/cancelRequest, and only
// its own: a handler that stops with a bare context error is answered
// -32800 "Request cancelled"; one that says what it did keeps its message;
// the other requests in flight go on.
func TestCancelRunningRequest(t *testing.T) {
	s := newTestServer(t, nil)
	started := make(chan string, 4)
	Handle(s, "x/wait", func(ctx context.Context, _ *Request, p *struct{ Name string }) (any, error) {
		started <- p.Name
		<-ctx.Done()
		if p.Name == "counted" && Cancelled(ctx) {
			return nil, CancelledError("x/wait stopped after 3 steps")
		}
		return nil, ctx.Err()
	})
	release := make(chan struct{})
	Handle(s, "x/other", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) {
		started <- "other"
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	Cancellable(s, "x/wait", "x/other")
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)

	plain := c.Request("x/wait", map[string]string{"Name": "plain"})
	counted := c.Request("x/wait", map[string]string{"Name": "counted"})
	other := c.Request("x/other", nil)
	for range 3 {
		<-started
	}
	cancel(c, plain)
	rpctest.WantError(t, c.Response(plain), protocol.CodeRequestCancelled, "Request cancelled")
	cancel(c, counted)
	rpctest.WantError(t, c.Response(counted), protocol.CodeRequestCancelled, "x/wait stopped after 3 steps")
	close(release)
	if m := c.Response(other); m.Error != nil || string(m.Result) != `"done"` {
		t.Fatalf("the other request: %s", m.Raw)
	}
	c.AssertNoMessage()
}

// A request waiting its turn behind another with the same ordering key is
// answered at once when cancelled, and its handler never runs; the one
// running and the one behind it are answered as usual, in order.
func TestCancelWaitingOrderedRequest(t *testing.T) {
	s := newTestServer(t, nil)
	gate := make(chan struct{})
	var ran atomic.Int32
	Handle(s, "x/step", func(ctx context.Context, _ *Request, p *struct{ Name string }) (any, error) {
		ran.Add(1)
		if p.Name == "first" {
			<-gate
		}
		return p.Name, nil
	})
	Order(s, Fixed("line"), "x/step")
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)

	first := c.Request("x/step", map[string]string{"Name": "first"})
	waiting := c.Request("x/step", map[string]string{"Name": "waiting"})
	last := c.Request("x/step", map[string]string{"Name": "last"})
	cancel(c, waiting)
	// Answered while the first still holds the line.
	m := c.Next()
	if string(m.ID) != string(waiting) {
		t.Fatalf("first answer %s, want the cancelled request's", m.Raw)
	}
	rpctest.WantError(t, m, protocol.CodeRequestCancelled, "Request cancelled before it started")
	close(gate)
	for _, want := range []json.RawMessage{first, last} {
		if m := c.Next(); string(m.ID) != string(want) || m.Error != nil {
			t.Fatalf("answer %s, want the result of %s", m.Raw, want)
		}
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("%d handlers ran, want 2 (the cancelled one must not)", n)
	}
	c.AssertNoMessage()
}

// Cancelling an id that is unknown, finished, of the other JSON type
// (the string "3" is not the integer 3), or malformed does nothing, nor
// does cancelling a running request of a method that is not Cancellable;
// a handler that finishes despite the cancellation answers its result.
func TestCancelIgnored(t *testing.T) {
	s := newTestServer(t, nil)
	gate := make(chan struct{})
	cancelled := make(chan bool, 1)
	Handle(s, "x/stubborn", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) {
		<-gate
		cancelled <- Cancelled(ctx)
		return "finished anyway", nil
	})
	Handle(s, "x/ping", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) { return "pong", nil })
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)

	done := c.Call("x/ping", nil)
	if done.Error != nil {
		t.Fatal(string(done.Raw))
	}
	stubborn := c.Request("x/stubborn", nil) // id 3
	cancel(c, done.ID)
	cancel(c, json.RawMessage(`999`))
	cancel(c, json.RawMessage(`"3"`))
	c.SendRaw(`{"method":"$/cancelRequest","params":{"id":1.5}}`)
	c.SendRaw(`{"method":"$/cancelRequest"}`)
	c.SendRaw(`{"method":"$/cancelRequest","params":"3"}`)
	// The read loop handles messages in order: once this is answered,
	// the notifications above were handled.
	if m := c.Call("x/ping", nil); m.Error != nil {
		t.Fatal(string(m.Raw))
	}
	close(gate)
	if <-cancelled {
		t.Fatal("the request was cancelled by an id that is not its own")
	}
	if m := c.Response(stubborn); string(m.Result) != `"finished anyway"` {
		t.Fatalf("stubborn: %s", m.Raw)
	}

	// A running request of a method that is not Cancellable goes on.
	firmGate, firmRunning := make(chan struct{}), make(chan struct{})
	Handle(s, "x/firm", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) {
		close(firmRunning)
		<-firmGate
		return fmt.Sprintf("cancelled: %v", ctx.Err() != nil), nil
	})
	firm := c.Request("x/firm", nil)
	<-firmRunning
	cancel(c, firm)
	if m := c.Call("x/ping", nil); m.Error != nil {
		t.Fatal(string(m.Raw))
	}
	close(firmGate)
	if m := c.Response(firm); string(m.Result) != `"cancelled: false"` {
		t.Fatalf("firm: %s", m.Raw)
	}

	// Cancelled for real, it still answers its result.
	running := make(chan struct{})
	Cancellable(s, "x/stubborn2")
	Handle(s, "x/stubborn2", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) {
		close(running)
		<-ctx.Done()
		return fmt.Sprintf("finished anyway: %v", Cancelled(ctx)), nil
	})
	id := c.Request("x/stubborn2", nil)
	<-running
	cancel(c, id)
	if m := c.Response(id); string(m.Result) != `"finished anyway: true"` {
		t.Fatalf("stubborn2: %s", m.Raw)
	}
	c.AssertNoMessage()
}

// Every request gets exactly one answer however its cancellation races
// with its start: requests in one line, each cancelled right after it was
// sent.
func TestCancelRaceOneAnswerEach(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/step", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) {
		return "ran", nil
	})
	Order(s, Fixed("line"), "x/step")
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	const n = 200
	answers := map[string]int{}
	for range n {
		cancel(c, c.Request("x/step", nil))
	}
	for range n {
		m := c.Next()
		if m.Error != nil && m.Error.Code != protocol.CodeRequestCancelled {
			t.Fatalf("unexpected answer %s", m.Raw)
		}
		answers[string(m.ID)]++
	}
	for id, k := range answers {
		if k != 1 {
			t.Fatalf("request %s answered %d times", id, k)
		}
	}
	if len(answers) != n {
		t.Fatalf("%d requests answered, want %d", len(answers), n)
	}
	c.AssertNoMessage()
}

// A shutdown stops the running handlers of Cancellable methods as soon as
// it begins (context.Cause is ErrShuttingDown): one that says what it did
// is answered with that, one that stops with a bare context error is
// answered -32603 "the server is shutting down". The handlers of other
// methods are waited for and answer their results; then Shutdown returns.
// The deadline (30 s) is far: the cancellable answers come while Shutdown
// still waits for the other handler, which is released only after them.
func TestShutdownStopsCancellableHandlers(t *testing.T) {
	s := newTestServer(t, nil)
	started := make(chan string, 3)
	Handle(s, "x/walk", func(ctx context.Context, _ *Request, p *struct{ Name string }) (any, error) {
		started <- p.Name
		<-ctx.Done()
		if p.Name == "counted" && ShuttingDown(ctx) {
			return nil, protocol.Errorf(protocol.CodeInternalError, "x/walk stopped after 3 steps: %v", context.Cause(ctx))
		}
		return nil, ctx.Err()
	})
	release := make(chan struct{})
	Handle(s, "x/other", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) {
		started <- "other"
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	Cancellable(s, "x/walk")
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)

	counted := c.Request("x/walk", map[string]string{"Name": "counted"})
	plain := c.Request("x/walk", map[string]string{"Name": "plain"})
	other := c.Request("x/other", nil)
	for range 3 {
		<-started
	}
	done := make(chan struct{})
	go func() {
		s.Shutdown("test")
		close(done)
	}()
	rpctest.WantError(t, c.Response(counted), protocol.CodeInternalError, "x/walk stopped after 3 steps: the server is shutting down")
	rpctest.WantError(t, c.Response(plain), protocol.CodeInternalError, "the server is shutting down")
	close(release)
	if m := c.Response(other); m.Error != nil || string(m.Result) != `"done"` {
		t.Fatalf("the other request: %s", m.Raw)
	}
	<-done
}
