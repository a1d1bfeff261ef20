package rpc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func note(t *testing.T, method string, params any) outMsg {
	t.Helper()
	m, err := newNotification(method, params, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func delta(t *testing.T, item, text string) outMsg {
	return note(t, "item/agentMessage/delta", map[string]string{"threadId": "th", "turnId": "tu", "itemId": item, "delta": text})
}

func response(id int) outMsg {
	data, _ := encodeResponse(json.RawMessage(fmt.Sprint(id)), nil)
	return outMsg{data: data}
}

// noWriter is the start of an outbox whose writer is the test itself: it
// calls take.
func noWriter() {}

func drainAll(o *outbox) []outMsg {
	var all []outMsg
	o.close()
	for {
		b, ok := o.take(nil)
		if !ok {
			return all
		}
		all = append(all, b...)
	}
}

func TestOutboxCoalescesOnlyWhenBehindAndOnlyTheTail(t *testing.T) {
	o := newOutbox(4, 1<<30, false, noWriter) // coalescing starts at 4 queued
	for i := 0; i < 3; i++ {
		if err := o.push(context.Background(), delta(t, "a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Below the threshold: queued as they are.
	if err := o.push(context.Background(), delta(t, "a", "3")); err != nil {
		t.Fatal(err)
	}
	// At the threshold: merged into the last one.
	for i := 4; i < 10; i++ {
		if err := o.push(context.Background(), delta(t, "a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// An authoritative message ends the run; a delta after it is not
	// merged across it.
	if err := o.push(context.Background(), response(1)); err != nil {
		t.Fatal(err)
	}
	if err := o.push(context.Background(), delta(t, "a", "10")); err != nil {
		t.Fatal(err)
	}
	// A delta of another item is not merged either.
	if err := o.push(context.Background(), delta(t, "b", "x")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range drainAll(o) {
		var p struct{ ItemID, Delta string }
		if m.method == "" {
			got = append(got, "response")
			continue
		}
		if err := json.Unmarshal(m.params(), &p); err != nil {
			t.Fatal(err)
		}
		var whole map[string]json.RawMessage
		if err := json.Unmarshal(m.data, &whole); err != nil || string(whole["emittedAtMs"]) != "1000" || string(whole["method"]) != `"item/agentMessage/delta"` {
			t.Fatalf("bad message %s", m.data)
		}
		got = append(got, p.ItemID+":"+p.Delta)
	}
	want := "a:0 a:1 a:2 a:3456789 response a:10 b:x"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

// A client on a slow link: the socket's buffer holds the backlog, so the
// queue stays short, but messages wait behind a batch the writer has been
// writing for lagBehind: the client is behind, and its deltas merge.
func TestOutboxBehindWhenTheWriterLags(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOutbox(1024, 1<<30, false, noWriter)
		push := func(m outMsg) {
			t.Helper()
			if err := o.push(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
		queued := func() []string {
			var got []string
			for _, m := range o.q {
				var p struct{ Delta string }
				if err := json.Unmarshal(m.params(), &p); err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Delta)
			}
			return got
		}
		push(delta(t, "a", "first"))
		if b, ok := o.take(nil); !ok || len(b) != 1 {
			t.Fatalf("batch %d", len(b))
		}
		// The writer writes its batch quickly: nothing merges.
		for i := range lagCheckAt + 2 {
			push(delta(t, "a", fmt.Sprint(i)))
		}
		if got := queued(); len(got) != lagCheckAt+2 {
			t.Fatalf("merged before any lag: %q", got)
		}
		// The writer has been on its batch for lagBehind: what comes now
		// merges into the last queued delta.
		time.Sleep(lagBehind)
		push(delta(t, "a", "x"))
		push(delta(t, "a", "y"))
		if n := o.coalescedCount(); n != 2 {
			t.Fatalf("%d merged after the lag, want 2", n)
		}
		var got []string
		for _, m := range drainAll(o) {
			var p struct{ Delta string }
			if err := json.Unmarshal(m.params(), &p); err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Delta)
		}
		if len(got) != lagCheckAt+2 || got[len(got)-1] != fmt.Sprint(lagCheckAt+1)+"xy" {
			t.Fatalf("after the lag: %q", got)
		}
	})
}

// Once behind, a client stays behind until the writer drained everything:
// a writer that progresses in small steps does not reset coalescing.
func TestOutboxBehindUntilCaughtUp(t *testing.T) {
	o := newOutbox(2, 1<<30, false, noWriter) // behind from 2 messages of backlog
	push := func(m outMsg) {
		t.Helper()
		if err := o.push(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	push(delta(t, "a", "0"))
	push(delta(t, "a", "1"))
	push(delta(t, "a", "2")) // backlog 2: behind, merged into "1"
	batch, _ := o.take(nil)  // the writer takes both and is slow to write them
	if len(batch) != 2 {
		t.Fatalf("batch %d", len(batch))
	}
	push(delta(t, "a", "3")) // nothing queued to merge into
	push(delta(t, "a", "4")) // merged: still behind although the queue was emptied
	batch, _ = o.take(batch)
	if len(batch) != 1 || !strings.Contains(string(batch[0].params()), `"delta":"34"`) {
		t.Fatalf("batch %d %s", len(batch), batch[0].data)
	}
	// The writer finds the queue empty: caught up; deltas queue singly.
	if _, ok := o.take(batch); ok {
		t.Fatal("took more than was queued")
	}
	push(delta(t, "a", "5"))
	if b, _ := o.take(nil); len(b) != 1 {
		t.Errorf("after catching up: %d", len(b))
	}
	push(delta(t, "a", "6"))
	if all := drainAll(o); len(all) != 1 || !strings.Contains(string(all[0].params()), `"delta":"6"`) {
		t.Fatalf("got %d", len(all))
	}
}

// The queue is full once it holds its memory limit: a socket client is
// disconnected, a stdio sender waits.
func TestOutboxFullDisconnectsOrWaits(t *testing.T) {
	o := newOutbox(1024, 2*(len(response(0).data)+outMsgOverhead), false, noWriter) // two responses
	for i := 0; i < 2; i++ {
		if err := o.push(context.Background(), response(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.push(context.Background(), response(3)); !errors.Is(err, errOutboxFull) {
		t.Fatalf("err %v, want errOutboxFull", err)
	}
	// Deltas that cannot merge with the tail also overflow.
	if err := o.push(context.Background(), delta(t, "a", "x")); !errors.Is(err, errOutboxFull) {
		t.Fatalf("err %v, want errOutboxFull", err)
	}

	synctest.Test(t, func(t *testing.T) {
		o := newOutbox(1024, 1, true, noWriter) // one message
		if err := o.push(context.Background(), response(1)); err != nil {
			t.Fatal(err)
		}
		pushed := make(chan error, 1)
		go func() { pushed <- o.push(context.Background(), response(2)) }()
		synctest.Wait()
		select {
		case err := <-pushed:
			t.Fatalf("push did not wait on a full waiting outbox: %v", err)
		default:
		}
		batch, ok := o.take(nil)
		if !ok || len(batch) != 1 {
			t.Fatalf("take: %v %d", ok, len(batch))
		}
		synctest.Wait()
		if err := <-pushed; err != nil {
			t.Fatalf("push after room: %v", err)
		}

		// A waiting push ends with its context.
		ctx, cancel := context.WithCancel(context.Background())
		go func() { pushed <- o.push(ctx, response(3)) }()
		synctest.Wait()
		cancel()
		if err := <-pushed; !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		// And with the outbox.
		go func() { pushed <- o.push(context.Background(), response(4)) }()
		synctest.Wait()
		o.abort()
		if err := <-pushed; !errors.Is(err, errOutboxClosed) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestOutboxCloseDrainsThenEnds(t *testing.T) {
	o := newOutbox(4, 1<<30, false, noWriter)
	_ = o.push(context.Background(), response(1))
	o.close()
	if err := o.push(context.Background(), response(2)); !errors.Is(err, errOutboxClosed) {
		t.Fatalf("push after close: %v", err)
	}
	if b, ok := o.take(nil); !ok || len(b) != 1 {
		t.Fatalf("queued message lost on close")
	}
	if _, ok := o.take(nil); ok {
		t.Fatalf("take after drain should end")
	}
}

func TestCoalesceRules(t *testing.T) {
	merge := func(method string, a, b any) (string, bool) {
		t.Helper()
		r := coalesceRuleFor(method)
		if r == nil {
			t.Fatalf("%s is not coalescible", method)
		}
		pa, _ := json.Marshal(a)
		pb, _ := json.Marshal(b)
		acc, ok := r.start(pa)
		if !ok {
			t.Fatalf("cannot start from %s", pa)
		}
		if !acc.add(pb) {
			return "", false
		}
		out, err := acc.params()
		if err != nil {
			t.Fatal(err)
		}
		return string(out), true
	}
	item := func(extra map[string]any) map[string]any {
		m := map[string]any{"threadId": "t", "turnId": "u", "itemId": "i"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	if got, ok := merge("item/agentMessage/delta", item(map[string]any{"delta": "He"}), item(map[string]any{"delta": "llo <&>"})); !ok ||
		got != `{"delta":"Hello <&>","itemId":"i","threadId":"t","turnId":"u"}` {
		t.Errorf("agentMessage: %s %v", got, ok)
	}
	if _, ok := merge("item/reasoning/summaryTextDelta", item(map[string]any{"delta": "a", "summaryIndex": 0}), item(map[string]any{"delta": "b", "summaryIndex": 1})); ok {
		t.Errorf("different summary parts merged")
	}
	if _, ok := merge("item/reasoning/textDelta", item(map[string]any{"delta": "a", "contentIndex": 2}), item(map[string]any{"delta": "b", "contentIndex": 2})); !ok {
		t.Errorf("same content part not merged")
	}
	if _, ok := merge("item/commandExecution/outputDelta", item(map[string]any{"delta": "a"}), map[string]any{"threadId": "t", "turnId": "u", "itemId": "other", "delta": "b"}); ok {
		t.Errorf("different items merged")
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	got, ok := merge("command/exec/outputDelta",
		map[string]any{"processId": "p", "stream": "stdout", "deltaBase64": b64("a"), "capReached": false},
		map[string]any{"processId": "p", "stream": "stdout", "deltaBase64": b64("bc"), "capReached": true})
	if !ok || got != `{"capReached":true,"deltaBase64":"`+b64("abc")+`","processId":"p","stream":"stdout"}` {
		t.Errorf("exec: %s %v", got, ok)
	}
	if _, ok := merge("command/exec/outputDelta",
		map[string]any{"processId": "p", "stream": "stdout", "deltaBase64": b64("a")},
		map[string]any{"processId": "p", "stream": "stderr", "deltaBase64": b64("b")}); ok {
		t.Errorf("stdout and stderr merged")
	}
	got, ok = merge("item/fileChange/patchUpdated", item(map[string]any{"changes": []int{1}}), item(map[string]any{"changes": []int{1, 2}}))
	if !ok || !strings.Contains(got, `"changes":[1,2]`) {
		t.Errorf("patchUpdated: %s %v", got, ok)
	}
	if got, ok := merge("some/new/delta", item(map[string]any{"delta": "x"}), item(map[string]any{"delta": "y"})); !ok || !strings.Contains(got, `"delta":"xy"`) {
		t.Errorf("generic delta: %s %v", got, ok)
	}
	for _, m := range []string{"item/started", "item/completed", "turn/completed", "serverRequest/resolved", "thread/tokenUsage/updated"} {
		if coalesceRuleFor(m) != nil {
			t.Errorf("%s must not be coalescible", m)
		}
	}
	big := strings.Repeat("x", maxCoalescedText/2+1)
	if _, ok := merge("item/agentMessage/delta", item(map[string]any{"delta": big}), item(map[string]any{"delta": big})); ok {
		t.Errorf("merged past the size cap")
	}
}

// A slot keeps the writer at the response's place: what was queued
// before it goes out, what was queued after waits, and fill lets
// everything out in order, the slot's messages first.
func TestOutboxSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		o := newOutbox(8, 1<<30, true, noWriter)
		o.push(ctx, response(1))
		s, err := o.reserve(ctx)
		if err != nil {
			t.Fatal(err)
		}
		o.push(ctx, note(t, "turn/started", map[string]string{"x": "y"}))
		got, _ := o.take(nil)
		if len(got) != 1 || string(got[0].data) != string(response(1).data) {
			t.Fatalf("took %d messages, want only the one before the slot", len(got))
		}
		if taken, ok := o.take(nil); ok {
			t.Fatalf("writer passed an unfilled slot: took %d messages", len(taken))
		}
		o.fill(s, []outMsg{response(2), note(t, "thread/started", nil)})
		taken, _ := o.take(nil)
		want := []string{string(response(2).data), "thread/started", "turn/started"}
		if len(taken) != len(want) {
			t.Fatalf("took %d messages, want %d", len(taken), len(want))
		}
		for i, m := range taken {
			if got := nameOf(m); got != want[i] {
				t.Fatalf("message %d is %s, want %s", i, got, want[i])
			}
		}
	})
}

func nameOf(m outMsg) string {
	if m.method != "" {
		return m.method
	}
	return string(m.data)
}

// The load harness's "256 turn/starts pipelined on one connection", made
// deterministic. Each pipelined request reserves its response's place;
// the turns they start queue their lifecycle events and the interleaved
// deltas of many items behind those places (a delta of one item never
// continues the last queued message, which is another item's, so nothing
// merges into the tail); then the places fill and the writer, which takes
// whatever it can as soon as it comes back (a client reading at full
// speed), gets thousands of messages at once, and the turns go on queueing
// while it writes them. Every message arrives, in order, every item's text
// whole.
func TestOutboxEngineBacklogNeverOverflowsAReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const requests, items, rounds = 64, 40, 5
		o := newOutbox(8, 1<<30, false, noWriter)
		var want []string           // authoritative messages, in order
		sent := map[string]string{} // item → its text
		push := func(m outMsg, what string) {
			t.Helper()
			if err := o.push(ctx, m); err != nil {
				t.Fatalf("%s: %v (a reading client was given up)", what, err)
			}
		}
		started := func(i int) {
			push(note(t, "item/started", map[string]int{"i": i}), "item/started")
			want = append(want, fmt.Sprintf("started %d", i))
		}
		deltas := func(round int) {
			for i := 0; i < items; i++ {
				text := fmt.Sprintf("<%d.%d>", i, round)
				sent[fmt.Sprint(i)] += text
				push(delta(t, fmt.Sprint(i), text), "delta")
			}
		}
		var got []outMsg
		take := func() {
			b, _ := o.take(nil)
			got = append(got, b...)
		}

		slots := make([]*slot, requests)
		for i := range slots {
			s, err := o.reserve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			slots[i] = s
			started(i)
		}
		for r := 0; r < rounds-2; r++ {
			deltas(r)
		}
		for i, s := range slots {
			o.fill(s, []outMsg{response(i)})
			want = append(want, string(response(i).data))
		}
		take() // everything at once; the writer is busy writing it
		deltas(rounds - 2)
		started(requests)
		take() // back for more
		deltas(rounds - 1)
		take()

		take()

		// Order and content: authoritative messages in the order queued,
		// responses before what was queued behind their places, each
		// item's text whole.
		var auth []string
		text := map[string]string{}
		for _, m := range got {
			switch m.method {
			case "":
				auth = append(auth, string(m.data))
			case "item/started":
				var p struct{ I int }
				json.Unmarshal(m.params(), &p)
				auth = append(auth, fmt.Sprintf("started %d", p.I))
			default:
				var p struct{ ItemID, Delta string }
				json.Unmarshal(m.params(), &p)
				text[p.ItemID] += p.Delta
			}
		}
		wantOrder := append(interleave(want, requests), want[2*requests:]...)
		if strings.Join(auth, "|") != strings.Join(wantOrder, "|") {
			t.Fatalf("authoritative messages:\n got %v\nwant %v", auth, wantOrder)
		}
		for item, s := range sent {
			if text[item] != s {
				t.Fatalf("item %s: text %q, want %q", item, text[item], s)
			}
		}
	})
}

// interleave orders the first 2n entries of want as the queue holds them:
// the reserved places (filled with the responses, want[n:2n]) came before
// the item/started each request queued after reserving (want[:n]).
func interleave(want []string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, want[n+i], want[i])
	}
	return out
}

// A client that stops reading is bounded by the memory limit, behind an
// unfilled place (a handler that takes long) as anywhere else. A waiting
// outbox (stdio) makes the pusher wait there instead.
func TestOutboxBoundedByMemory(t *testing.T) {
	for _, wait := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			const maxBytes = 4096
			o := newOutbox(4, maxBytes, wait, noWriter)
			s, _ := o.reserve(ctx)
			// Fill the queue to its memory limit behind the place:
			// items that cannot merge.
			// free makes room for the push that waits at the limit.
			fillUp := func(tag string, free func()) error {
				for i := 0; ; i++ {
					o.mu.Lock()
					full := o.bytes >= maxBytes
					o.mu.Unlock()
					if full {
						break
					}
					if err := o.push(ctx, delta(t, fmt.Sprintf("%s%d", tag, i), "x")); err != nil {
						return fmt.Errorf("push %d under the memory limit: %w", i, err)
					}
				}
				pushed := make(chan error, 1)
				go func() { pushed <- o.push(ctx, delta(t, tag+"-over", "x")) }()
				synctest.Wait()
				if !wait {
					if err := <-pushed; !errors.Is(err, errOutboxFull) {
						return fmt.Errorf("socket: push at the memory limit: %v, want errOutboxFull", err)
					}
					return nil
				}
				select {
				case err := <-pushed:
					return fmt.Errorf("stdio: push at the memory limit returned %v, want it to wait", err)
				default:
				}
				free()
				if err := <-pushed; err != nil {
					return err
				}
				return nil
			}
			filled := false
			release := func() {
				if !filled {
					o.fill(s, []outMsg{response(1)})
					filled = true
				}
				o.take(nil)
			}
			if err := fillUp("behind", release); err != nil {
				t.Fatal(err)
			}
			// The writer takes it all, then the client stops reading.
			if !filled {
				release()
			}
			if err := fillUp("after", func() { o.take(nil) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// While behind, a delta joins the last queued delta of its own stream
// across deltas of other streams (concurrent turns interleave theirs),
// never across an authoritative message, and never into an older delta of
// its stream past a newer one.
func TestOutboxMergesInterleavedStreams(t *testing.T) {
	o := newOutbox(1024, 1<<30, false, noWriter)
	push := func(m outMsg) {
		t.Helper()
		if err := o.push(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	o.mu.Lock()
	o.behind = true
	o.mu.Unlock()
	const streams, rounds = 100, 20
	for r := range rounds {
		for s := range streams {
			push(delta(t, fmt.Sprint("item", s), fmt.Sprint(r, ",")))
		}
	}
	push(response(1))
	push(delta(t, "item0", "after"))
	all := drainAll(o)
	if len(all) != streams+2 {
		t.Fatalf("%d messages, want %d (one per stream, the response, the delta after it)", len(all), streams+2)
	}
	var want strings.Builder
	for r := range rounds {
		fmt.Fprint(&want, r, ",")
	}
	for i, m := range all[:streams] {
		var p struct{ ItemID, Delta string }
		if err := json.Unmarshal(m.params(), &p); err != nil {
			t.Fatal(err)
		}
		if p.ItemID != fmt.Sprint("item", i) || p.Delta != want.String() {
			t.Fatalf("message %d: %s %q", i, p.ItemID, p.Delta)
		}
	}
	if all[streams].method != "" || nameOf(all[streams+1]) == "" {
		t.Fatalf("the response and the delta after it: %s %s", all[streams].data, all[streams+1].data)
	}
}

// A delta whose stream's last delta is full is queued on its own: it is
// never merged into an older delta of its stream, past the full one.
func TestOutboxNeverMergesPastAFullDeltaOfItsStream(t *testing.T) {
	o := newOutbox(1024, 1<<30, false, noWriter)
	o.mu.Lock()
	o.behind = true
	o.mu.Unlock()
	for _, m := range []outMsg{delta(t, "a", "start"), delta(t, "a", strings.Repeat("x", maxCoalescedText)), delta(t, "b", "b"), delta(t, "a", "end")} {
		if err := o.push(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, m := range drainAll(o) {
		var p struct{ ItemID, Delta string }
		if err := json.Unmarshal(m.params(), &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.ItemID+":"+p.Delta[:min(len(p.Delta), 5)])
	}
	if want := "a:start a:xxxxx b:b a:end"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

// A writer runs only while the connection has output: the outbox starts
// one when a message it can take is queued and none runs (never a second
// one); the writer waits for more, and stops after a whole tick of the
// idle timer without any, or once the closed outbox was written out
// (drained). An unfilled slot at the head holds it until it is filled.
func TestOutboxStartsAWriterOnlyWhenNeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var starts, running atomic.Int32
		got := make(chan []outMsg) // a batch is written when the test receives it
		var o *outbox
		o = newOutbox(8, 1<<30, false, func() {
			starts.Add(1)
			running.Add(1)
			go func() {
				defer running.Add(-1)
				var b []outMsg
				for {
					var ok bool
					if b, ok = o.take(b); !ok {
						if !o.park() {
							return
						}
						continue
					}
					got <- slices.Clone(b)
				}
			}()
		})
		want := func(n, r int32, when string) {
			t.Helper()
			synctest.Wait()
			if starts.Load() != n || running.Load() != r {
				t.Fatalf("%s: %d writers started, %d running, want %d and %d", when, starts.Load(), running.Load(), n, r)
			}
		}
		recv := func(n int) { // n messages, in one batch or more
			t.Helper()
			for n > 0 {
				n -= len(<-got)
			}
			if n < 0 {
				t.Fatal("wrote more messages than were queued")
			}
		}
		want(0, 0, "new")
		o.push(ctx, response(1))
		o.push(ctx, response(2))
		recv(2)
		want(1, 1, "two messages: one writer, waiting for more")
		o.push(ctx, response(3))
		recv(1)
		want(1, 1, "a message for the waiting writer")
		o.tick() // it wrote since the last tick
		want(1, 1, "busy")
		o.tick()                 // a whole tick idle: asked to stop,
		o.push(ctx, response(7)) // and a message comes as it stops:
		recv(1)                  // written all the same, by it or by a new one
		synctest.Wait()          // (and its writer waiting again)
		o.tick()
		o.tick()
		want(starts.Load(), 0, "idle") // now it stops
		starts.Store(1)
		s, _ := o.reserve(ctx)
		o.push(ctx, response(4))
		want(1, 0, "an unfilled slot heads the queue")
		o.fill(s, []outMsg{response(5)})
		recv(2)
		want(2, 1, "the slot filled")
		o.push(ctx, response(6))
		o.close()
		select {
		case <-o.drained():
			t.Fatal("drained with a message queued")
		default:
		}
		recv(1)
		<-o.drained()
		want(2, 0, "closed and written out")
	})
}

// A client that reads at full speed while its writer is starved of CPU
// (the writer takes nothing until the end) is not given up, however many
// messages queue: 128 turns started at once send ten authoritative
// messages each (the old bound was 1,024 messages) and deltas,
// interleaved. Only the memory limit (64 KiB per message of the queue
// size, as the daemon sets it) bounds the queue. Everything arrives, in
// order, every item's text whole.
func TestOutboxStarvedWriterNeverOverflowsAReader(t *testing.T) {
	const queueSize, turns, deltas = 1024, 128, 50
	o := newOutbox(queueSize/2, queueSize*outboxBytesPerMessage, false, noWriter)
	var want []string
	sent := map[string]string{}
	push := func(m outMsg, what string) {
		t.Helper()
		if err := o.push(context.Background(), m); err != nil {
			t.Fatalf("%s: %v (a reading client was given up)", what, err)
		}
		if m.method != "item/agentMessage/delta" {
			want = append(want, string(m.data))
		}
	}
	event := func(method string, turn, n int) outMsg {
		return note(t, method, map[string]any{"threadId": fmt.Sprint("th", turn), "turnId": "tu", "n": n, "pad": strings.Repeat("p", 200)})
	}
	for i := range turns {
		push(event("turn/started", i, 0), "turn/started")
		push(event("item/started", i, 0), "item/started")
	}
	for r := range deltas {
		for i := range turns {
			text := fmt.Sprintf("<%d.%d>", i, r)
			sent[fmt.Sprint(i)] += text
			push(delta(t, fmt.Sprint(i), text), "delta")
		}
	}
	for i := range turns {
		push(event("item/completed", i, 0), "item/completed")
		for n := 1; n <= 6; n++ {
			push(event("thread/tokenUsage/updated", i, n), "token usage")
		}
		push(event("turn/completed", i, 0), "turn/completed")
	}
	if len(want) <= queueSize {
		t.Fatalf("%d authoritative messages: not past the old bound", len(want))
	}
	var auth []string
	text := map[string]string{}
	for _, m := range drainAll(o) {
		if m.method != "item/agentMessage/delta" {
			auth = append(auth, string(m.data))
			continue
		}
		var p struct{ ItemID, Delta string }
		if err := json.Unmarshal(m.params(), &p); err != nil {
			t.Fatal(err)
		}
		text[p.ItemID] += p.Delta
	}
	if !slices.Equal(auth, want) {
		t.Fatalf("authoritative messages: got %d, want %d, or out of order", len(auth), len(want))
	}
	for item, s := range sent {
		if text[item] != s {
			t.Fatalf("item %s: text of %d bytes, want %d", item, len(text[item]), len(s))
		}
	}
}
