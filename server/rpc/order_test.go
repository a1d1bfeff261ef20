package rpc

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// Requests with the same ordering key run one after the other, in the
// order they arrived; requests with another key (or none) do not wait for
// them.
func TestOrderedRequests(t *testing.T) {
	s := newTestServer(t, nil)
	var mu sync.Mutex
	gates := map[string]chan struct{}{}
	gate := func(name string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if gates[name] == nil {
			gates[name] = make(chan struct{})
		}
		return gates[name]
	}
	started := make(chan string, 16)
	type params struct {
		Key  string `json:"key"`
		Name string `json:"name"`
		Wait bool   `json:"wait"`
	}
	Handle(s, "x/step", func(ctx context.Context, _ *Request, p *params) (any, error) {
		started <- p.Name
		if p.Wait {
			<-gate(p.Name)
		}
		return p.Name, nil
	})
	Order(s, func(raw json.RawMessage) string {
		var p params
		_ = json.Unmarshal(raw, &p)
		return p.Key
	}, "x/step")
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)

	a := c.Request("x/step", params{Key: "k", Name: "a", Wait: true})
	if got := <-started; got != "a" {
		t.Fatalf("started %s", got)
	}
	b := c.Request("x/step", params{Key: "k", Name: "b"})
	other := c.Request("x/step", params{Key: "other", Name: "other"})
	none := c.Request("x/step", params{Name: "none"})
	// The other key and the unkeyed request run while a holds k.
	for _, want := range []json.RawMessage{other, none} {
		if m := c.Response(want); m.Error != nil {
			t.Fatalf("%s: %s", want, m.Raw)
		}
	}
	select {
	case name := <-started:
		if name == "b" {
			t.Fatal("b started before a ended")
		}
	default:
	}
	for len(started) > 0 {
		if n := <-started; n == "b" {
			t.Fatal("b started before a ended")
		}
	}
	close(gate("a"))
	if m := c.Next(); string(m.ID) != string(a) {
		t.Fatalf("first answer %s, want a's", m.Raw)
	}
	if m := c.Next(); string(m.ID) != string(b) {
		t.Fatalf("second answer %s, want b's", m.Raw)
	}
}

// A request waiting its turn at the shutdown deadline is answered, like
// the one running.
func TestOrderedRequestWaitingAtShutdownIsAnswered(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.Limits.ShutdownTimeout = 50 * time.Millisecond })
	block := make(chan struct{})
	defer close(block)
	running := make(chan struct{}, 2)
	Handle(s, "x/block", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) {
		running <- struct{}{}
		<-block
		return nil, nil
	})
	Handle(s, "x/ping", func(ctx context.Context, _ *Request, _ *json.RawMessage) (any, error) { return nil, nil })
	Order(s, Fixed("one"), "x/block")
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	first := c.Request("x/block", nil)
	<-running
	second := c.Request("x/block", nil)
	// The read loop handles messages in order: once the ping is answered,
	// the second request waits in its line.
	if m := c.Call("x/ping", nil); m.Error != nil {
		t.Fatal(string(m.Raw))
	}
	go s.Shutdown("test")
	for _, id := range []json.RawMessage{first, second} {
		rpctest.WantError(t, c.Response(id), -32603, "the server is shutting down")
	}
}
