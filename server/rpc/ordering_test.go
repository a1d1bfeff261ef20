package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// The guarantee of ResponseFirst, as the thread layer uses it: a handler
// starts something that sends events on its connection from another
// goroutine (the thread's deliverer), and the client must never see an
// event before the response. The handler here returns only after the
// other goroutine has queued its event, so without ResponseFirst the event
// would always come first. Run with the scheduler perturbed: one P, many
// Ps, a tiny queue on a connection that waits when full (the queue fills
// behind the unfilled slot), and -race in make race.
func TestResponseFirstOrdersOtherGoroutinesEvents(t *testing.T) {
	for _, procs := range []int{1, 8} {
		for _, queue := range []int{2, 1024} {
			t.Run(fmt.Sprintf("GOMAXPROCS=%d/queue=%d", procs, queue), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				responseFirstRounds(t, queue, 200)
			})
		}
	}
}

func responseFirstRounds(t *testing.T, queue, rounds int) {
	s := newTestServer(t, func(o *Options) { o.Limits.OutboundQueueSize = queue })
	Handle(s, "x/start", func(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
		r.ResponseFirst()
		c := r.Conn()
		queued := make(chan struct{})
		go func() {
			// The events the request caused, sent as a thread sends
			// them; the last one is queued before the handler returns.
			for i := 0; i < 3; i++ {
				c.Notify("x/event", map[string]int{"i": i})
			}
			close(queued)
		}()
		if queue > 3 {
			<-queued
		} else {
			// A queue this small is full behind the slot: the sender
			// waits for the response to go out, so the handler must
			// not wait for it.
			runtime.Gosched()
		}
		r.Then("x/started", nil)
		return "ok", nil
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	for i := 0; i < rounds; i++ {
		id := c.Request("x/start", nil)
		if m := c.Next(); string(m.ID) != string(id) {
			t.Fatalf("round %d: got %s before the response", i, m.Raw)
		}
		if m := c.Next(); m.Method != "x/started" {
			t.Fatalf("round %d: got %s, want the Then notification right after the response", i, m.Raw)
		}
		for k := 0; k < 3; k++ {
			if m := c.Next(); m.Method != "x/event" || string(m.Params) != fmt.Sprintf(`{"i":%d}`, k) {
				t.Fatalf("round %d: got %s, want event %d", i, m.Raw, k)
			}
		}
	}
}
