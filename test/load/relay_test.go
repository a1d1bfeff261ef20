package main

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The relay streams the mock's turn to every connection: each client reads
// every stamped delta once, in order, between the turn's and the item's
// start and end, and the item's text is the deltas joined.
// testRelay serves a relay of an in-process mock model, and connects subs
// clients to it.
func testRelay(t *testing.T, ctx context.Context, subs int) (*relay, *relayProc, []*client) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mock := mockmodel.Serve(l, t.Errorf, mockmodel.DropRequests(), mockmodel.Respond((&responder{}).respond))
	t.Cleanup(mock.Close)
	rl := &relay{model: mock.URL(), http: mock.HTTPClient()}
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)
	cs, _, err := openMany(subs, func(i int) (*client, error) {
		return dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", fmt.Sprintf("r%d", i), clientOpts{})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(cs) })
	return rl, &relayProc{&child{url: srv.URL}}, cs
}

func TestRelayFansOutEveryDeltaWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const subs, n = 5, 40
	_, p, cs := testRelay(t, ctx, subs)
	for turn := 1; turn <= 2; turn++ {
		res, err := p.run(ctx, cs, n, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.delays) != subs*n {
			t.Errorf("turn %d: %d delays, want %d", turn, len(res.delays), subs*n)
		}
	}
	for _, c := range cs {
		c.checkMu.Lock()
		c.check.Finish()
		if errs := c.check.Errors(); len(errs) > 0 || c.bad != nil {
			t.Errorf("%s: %q %v", c.name, errs, c.bad)
		}
		if items, turns := c.check.Count(relayThread, "agentMessage"); items != 2 || turns != 2 {
			t.Errorf("%s: %d items in %d turns, want 2 in 2", c.name, items, turns)
		}
		if c.deltas.Load() != 2*n {
			t.Errorf("%s: %d deltas, want %d", c.name, c.deltas.Load(), 2*n)
		}
		c.checkMu.Unlock()
	}
}

// A client that goes away holds no turn: the relay drops its connection
// when a write fails, and the others get everything.
func TestRelayDropsAClientThatLeft(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rl, p, cs := testRelay(t, ctx, 3)
	cs[0].close()
	<-cs[0].done
	const n = 200
	res, err := p.run(ctx, cs[1:], n, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.delays) != 2*n {
		t.Errorf("%d delays, want %d", len(res.delays), 2*n)
	}
	rl.mu.Lock()
	left := len(rl.conns)
	rl.mu.Unlock()
	if left != 2 {
		t.Errorf("the relay keeps %d connections, want 2", left)
	}
}
