package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// Under a flood, every request gets exactly one answer: past the in-flight
// limit requests wait their turn, until what the waiting ones hold reaches
// server.max_queued_request_bytes (each counts its size and 8 KiB: 64 KiB
// is room for eight); the ones past that get -32001 at once. A client
// response to a server request still gets through, the ones that waited
// run once a slot frees up, and the slots come back.
func TestOverloadFlood(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, TestHooks: true,
		Config: []string{"server.max_inflight_per_connection=3", "server.max_queued_request_bytes=65536"}})
	c := d.DialWS(WSOptions{})
	c.Initialize("flood", nil)

	// Three requests hold the three slots: one waits for our answer to a
	// server request, two sleep.
	callID := c.Request("test/call", map[string]any{"method": "x/approve", "params": map[string]int{}})
	req := c.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
	sleeps := []json.RawMessage{
		c.Request("test/sleep", map[string]any{"ms": 60000}),
		c.Request("test/sleep", map[string]any{"ms": 60000}),
	}
	waitStarted(d, "test/sleep", len(sleeps))

	const flood = 200
	ids := make([]json.RawMessage, flood)
	for i := range ids {
		ids[i] = c.Request("test/sleep", map[string]any{"ms": 0})
	}
	// The first ones wait; the rest are refused, at once.
	const room = 65536 / (8 << 10)
	waiting := map[string]bool{}
	for _, id := range ids {
		waiting[string(id)] = true
	}
	for range flood - room {
		m := c.Next()
		if !waiting[string(m.ID)] {
			t.Fatalf("unexpected answer %s", m.Raw)
		}
		WantError(t, m, codeOverloaded, "Server overloaded; retry later.")
		if string(m.Error.Data) != `{"retryable":true}` {
			t.Fatalf("data %s", m.Error.Data)
		}
		delete(waiting, string(m.ID))
	}
	for _, id := range ids[:room] {
		if !waiting[string(id)] {
			t.Fatalf("request %s was refused, although the ones before it hold less than the limit", id)
		}
	}
	c.AssertNoMessage()

	// The answer to the server request is not a request: it is routed.
	c.Send(map[string]any{"id": req.ID, "result": map[string]string{"decision": "accept"}})
	if m := c.Response(callID); string(m.Result) != `{"result":{"decision":"accept"}}` {
		t.Fatalf("got %s", m.Raw)
	}
	// Its slot runs the ones that waited.
	for _, id := range ids[:room] {
		if m := c.Response(id); m.Error != nil {
			t.Fatalf("a request that waited: %s", m.Raw)
		}
	}
	// The slot came back.
	if m := c.Call("test/sleep", map[string]any{"ms": 0}); m.Error != nil {
		t.Fatalf("got %s", m.Raw)
	}
	// Nothing was answered twice.
	c.AssertNoMessage()
}

// waitStarted waits until n requests of method have started.
func waitStarted(d *Daemon, method string, n int) {
	seen := map[string]bool{}
	for len(seen) < n {
		d.WaitLog(func(l LogLine) bool {
			if l.Msg != "request started" || l.Str("method") != method || seen[l.Str("request")] {
				return false
			}
			seen[l.Str("request")] = true
			return true
		})
	}
}

// A WebSocket client that stops reading: its deltas are coalesced (all
// text arrives, in fewer messages), then, when authoritative messages
// overflow its queue's memory limit (512 × 64 KiB: 32 MiB), it is
// disconnected with a logged reason. Other clients are unaffected
// throughout.
func TestSlowWebSocketReader(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, TestHooks: true,
		Config: []string{"server.outbound_queue_size=512"}})
	slow := d.DialWS(WSOptions{ReceiveBuffer: 16 << 10})
	slow.Initialize("slow", nil)
	fast := d.DialWS(WSOptions{})
	fast.Initialize("fast", nil)

	// Phase 1: 1000 deltas of 16 KiB for one item (16 MiB) while the
	// client does not read.
	const n = 1000
	base := strings.Repeat("d", 16<<10)
	slow.Pause()
	emitID := slow.Request("test/emit", map[string]any{
		"method":        "item/agentMessage/delta",
		"params":        map[string]string{"threadId": "th", "turnId": "tu", "itemId": "it", "delta": base},
		"count":         n,
		"appendIndexTo": "delta",
	})
	d.WaitLog(LogMsg("coalescing deltas"))
	// Every delta is queued (or merged) before the client reads again.
	d.WaitLog(func(l LogLine) bool { return l.Msg == "request finished" && l.Str("method") == "test/emit" })
	// Meanwhile another client is served.
	WantResult(t, fast.Call("test/emit", map[string]any{"method": "x/ping", "params": map[string]int{}, "broadcast": true}))
	fast.ReadUntil(func(m Message) bool { return m.Method == "x/ping" })

	slow.Resume()
	var text strings.Builder
	messages := 0
	for {
		m := slow.ReadUntil(func(m Message) bool { return m.Method == "item/agentMessage/delta" || string(m.ID) == string(emitID) })
		if m.Method == "" {
			break
		}
		var p struct{ ThreadID, TurnID, ItemID, Delta string }
		if err := json.Unmarshal(m.Params, &p); err != nil || p.ItemID != "it" || p.ThreadID != "th" {
			t.Fatalf("bad delta %.200s", m.Raw)
		}
		text.WriteString(p.Delta)
		messages++
	}
	var want strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&want, "%s%d;", base, i)
	}
	if text.String() != want.String() {
		t.Fatalf("delta text differs: got %d bytes, want %d", text.Len(), want.Len())
	}
	if messages >= n {
		t.Fatalf("%d messages for %d deltas: nothing was coalesced", messages, n)
	}
	t.Logf("%d deltas arrived as %d messages", n, messages)
	slow.ReadUntil(func(m Message) bool { return m.Method == "x/ping" })

	// Phase 2: authoritative notifications of 64 KiB while the client
	// does not read: the queue overflows and the client is dropped.
	dropForNotReading(d, slow)
	slow.Resume()
	if err := slow.WaitClosed(); err == nil {
		t.Fatal("slow client still connected")
	}
	// The fast client did not notice.
	WantResult(t, fast.Call("test/emit", map[string]any{"method": "x/after", "params": map[string]int{}, "broadcast": true}))
	fast.ReadUntil(func(m Message) bool { return m.Method == "x/after" })
	if m := fast.Call("test/sleep", map[string]any{"ms": 0}); m.Error != nil {
		t.Fatalf("fast client: %s", m.Raw)
	}
}

// A client dropped for not reading while a turn runs comes back on a new
// connection and is not left stale (openai/codex#18860): thread/resume
// shows the turn still running and subscribes it again, and it gets the
// rest of the turn, its message whole, and the turn's end.
func TestSlowClientDroppedMidTurnRejoins(t *testing.T) {
	g := mockmodel.NewGate()
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", "the whole answer, word by word", 6), mockmodel.Completed("resp_1", usage())).GateAfter(2, g))
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, ConfigTOML: mockConfig(m, ""), TestHooks: true,
		Config: []string{"server.outbound_queue_size=64"}})
	slow := d.DialWS(WSOptions{ReceiveBuffer: 16 << 10})
	slow.Initialize("slow", nil)
	id := startThread(t, slow, map[string]any{"cwd": t.TempDir()})
	WantResult(t, slow.Call("turn/start", map[string]any{"threadId": id, "input": textInput("go")}))
	<-g.Reached()
	dropForNotReading(d, slow)

	back := d.DialWS(WSOptions{})
	back.Initialize("slow", nil)
	res := unmarshal(t, WantResult(t, back.Call("thread/resume", map[string]any{"threadId": id})))
	turns, _ := path(res, "thread", "turns").([]any)
	if n := len(turns); str(res, "thread", "status", "type") != "active" || n == 0 || str(turns[n-1], "status") != "inProgress" {
		t.Fatalf("resumed mid-turn: %v", path(res, "thread"))
	}
	g.Open()
	msgs := collectUntil(back, isMethod("turn/completed"))
	var deltas, whole string
	for _, msg := range msgs {
		p := unmarshal(t, msg.Params)
		switch {
		case msg.Method == "item/agentMessage/delta":
			deltas += str(p, "delta")
		case msg.Method == "item/completed" && str(p, "item", "id") == "msg_1":
			whole = str(p, "item", "text")
		}
	}
	if done := msgs[len(msgs)-1]; whole != "the whole answer, word by word" || deltas == "" || !strings.HasSuffix(whole, deltas) ||
		str(unmarshal(t, done.Params), "turn", "status") != "completed" {
		t.Fatalf("after rejoining: deltas %q, message %q, %s", deltas, whole, done.Raw)
	}
}

// dropForNotReading stops c reading while 2,000 authoritative messages of
// 64 KiB (test/emit) come for it, and waits until the daemon drops it for
// not reading (its queue overflowed).
func dropForNotReading(d *Daemon, c *Client) {
	c.Pause()
	c.Request("test/emit", map[string]any{
		"method": "item/completed",
		"params": map[string]string{"pad": strings.Repeat("c", 64<<10)},
		"count":  2000,
	})
	d.WaitLog(func(l LogLine) bool {
		return l.Msg == "connection closed" && strings.Contains(l.Str("error"), "not reading fast enough")
	})
}
