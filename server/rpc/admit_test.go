package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// slowHandler registers method, whose handlers count themselves in
// started and wait for release; each answers its params' name.
func slowHandler(s *Server, method string, started *atomic.Int32, release <-chan struct{}) {
	Handle(s, method, func(ctx context.Context, _ *Request, p *struct{ Name string }) (any, error) {
		started.Add(1)
		<-release
		return p.Name, nil
	})
}

// waitStarted waits until n handlers have started.
func waitStarted(t *testing.T, started *atomic.Int32, n int32) {
	t.Helper()
	for started.Load() < n {
		time.Sleep(time.Millisecond)
	}
}

// 256 slow requests pipelined on one connection (turn/starts of 256
// threads, each ordered by its thread) all run and are all answered with
// their results: the first 128 (the in-flight limit) run at once, the
// others wait for their turn instead of being refused.
func TestPipelinedBurstAllRun(t *testing.T) {
	s := newTestServer(t, nil) // the daemon's limits: 128 in flight per connection
	var started atomic.Int32
	release := make(chan struct{})
	slowHandler(s, "x/slow", &started, release)
	Order(s, ByThread, "x/slow")
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	const burst = 256
	ids := map[string]string{}
	for i := range burst {
		name := fmt.Sprint("t", i)
		ids[string(c.Request("x/slow", map[string]string{"Name": name, "threadId": name}))] = name
	}
	waitStarted(t, &started, int32(testLimits.MaxInflightPerConnection))
	c.AssertNoMessage() // the others wait; none is refused
	if n := started.Load(); n != int32(testLimits.MaxInflightPerConnection) {
		t.Fatalf("%d handlers run at once, want %d", n, testLimits.MaxInflightPerConnection)
	}
	close(release)
	for range burst {
		m := c.Next()
		name, ok := ids[string(m.ID)]
		if !ok || m.Error != nil || string(m.Result) != `"`+name+`"` {
			t.Fatalf("answer %s, want a result", m.Raw)
		}
		delete(ids, string(m.ID))
	}
	c.AssertNoMessage()
}

// A flood past what waiting requests may hold (MaxQueuedRequestBytes, each
// counting its size and queuedRequestOverhead) is answered -32001 at once,
// request by request; every request gets exactly one answer, the ones that
// waited their results once slots free up, and the connection goes on.
func TestRequestFloodPastTheMemoryLimit(t *testing.T) {
	const limit = 1 << 20
	s := newTestServer(t, func(o *Options) {
		o.Limits.MaxInflightPerConnection = 2
		o.Limits.MaxQueuedRequestBytes = limit
	})
	var started atomic.Int32
	release := make(chan struct{})
	slowHandler(s, "x/slow", &started, release)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	running := []json.RawMessage{c.Request("x/slow", map[string]string{"Name": "a"}), c.Request("x/slow", map[string]string{"Name": "b"})}
	waitStarted(t, &started, 2)

	pad := strings.Repeat("p", 32<<10)
	params := map[string]string{"Name": "flood", "pad": pad}
	raw, _ := json.Marshal(map[string]any{"id": 1000, "method": "x/slow", "params": params})
	cost := len(raw) + queuedRequestOverhead
	fit := (limit + cost - 1) / cost // the last one that fits takes it past the limit
	const flood = 100
	ids := make([]json.RawMessage, flood)
	for i := range ids {
		ids[i] = c.Request("x/slow", params)
	}
	refused := map[string]bool{}
	for i := fit; i < flood; i++ {
		m := c.Response(ids[i])
		rpctest.WantError(t, m, protocol.CodeOverloaded, "Server overloaded; retry later.")
		if string(m.Error.Data) != `{"retryable":true}` {
			t.Fatalf("data %s", m.Error.Data)
		}
		refused[string(ids[i])] = true
	}
	c.AssertNoMessage() // the first fit wait
	close(release)
	for _, id := range append(running, ids[:fit]...) {
		if m := c.Response(id); m.Error != nil {
			t.Fatalf("a request that waited: %s", m.Raw)
		}
	}
	c.AssertNoMessage() // nothing was answered twice
	// What waited no longer counts: the slots and the room came back.
	if m := c.Call("x/slow", params); m.Error != nil {
		t.Fatalf("after the flood: %s", m.Raw)
	}
	if q := queuedBytes(s); q != 0 {
		t.Fatalf("waiting requests hold %d bytes, want 0", q)
	}
}

// queuedBytes is what the waiting requests of s's only connection hold,
// once they settled (a request answered while it waited, cancelled,
// stops counting when its goroutine next runs).
func queuedBytes(s *Server) int {
	c := s.Conns()[0]
	for deadline := time.Now().Add(rpctest.WaitTimeout); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		q := c.queued
		c.mu.Unlock()
		if q == 0 || time.Now().After(deadline) {
			return q
		}
	}
}

// A request waiting for an in-flight slot is answered at once when
// cancelled, and its handler never runs; the connection's waiting requests
// then hold nothing.
func TestCancelRequestWaitingForASlot(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.Limits.MaxInflightPerConnection = 1 })
	var started atomic.Int32
	release := make(chan struct{})
	slowHandler(s, "x/slow", &started, release)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	first := c.Request("x/slow", map[string]string{"Name": "first"})
	waitStarted(t, &started, 1)
	waiting := c.Request("x/slow", map[string]string{"Name": "waiting"})
	cancel(c, waiting)
	rpctest.WantError(t, c.Response(waiting), protocol.CodeRequestCancelled, "Request cancelled before it started")
	close(release)
	if m := c.Response(first); string(m.Result) != `"first"` {
		t.Fatalf("got %s", m.Raw)
	}
	if m := c.Call("x/slow", map[string]string{"Name": "next"}); string(m.Result) != `"next"` {
		t.Fatalf("got %s", m.Raw)
	}
	if n := started.Load(); n != 2 {
		t.Fatalf("%d handlers ran, want 2 (the cancelled one must not)", n)
	}
	if q := queuedBytes(s); q != 0 {
		t.Fatalf("waiting requests hold %d bytes, want 0", q)
	}
}
