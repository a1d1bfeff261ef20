package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func drainStream(t *testing.T, q *EventStream) []Event {
	t.Helper()
	q.close()
	var out []Event
	for {
		ev, err := q.Next(context.Background())
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

// A reader that keeps up sees every delta as it was emitted.
func TestEventStreamKeepsDeltasForAReaderThatKeepsUp(t *testing.T) {
	q := newEventStream()
	for i := 0; i < coalesceBacklog-1; i++ {
		q.put(Event{Seq: uint64(i + 1), Msg: AgentMessageDelta{ItemID: "m", Delta: "x"}})
	}
	if got := drainStream(t, q); len(got) != coalesceBacklog-1 {
		t.Fatalf("%d events, want every delta", len(got))
	}
}

// A reader that has stopped costs a bounded stream: deltas of each stream
// (interleaved, as parallel commands print) merge into the last queued
// one of their stream; authoritative events are kept, in order, and no
// delta moves across one.
func TestEventStreamMergesDeltasBehindAStalledReader(t *testing.T) {
	q := newEventStream()
	seq := uint64(0)
	put := func(m EventMsg) {
		seq++
		q.put(Event{Seq: seq, Msg: m})
	}
	// The backlog that makes the reader "behind".
	for i := 0; i < coalesceBacklog; i++ {
		put(Warning{Message: fmt.Sprint(i)})
	}
	var wantA, wantB, wantMsg strings.Builder
	for round := 0; round < 3; round++ {
		put(ItemStarted{Item: AgentMessageItem{ID: fmt.Sprint("msg", round)}})
		for i := 0; i < 10000; i++ {
			a, b := fmt.Sprintf("a%d;", i), fmt.Sprintf("b%d;", i)
			put(ExecCommandOutputDelta{CallID: "A", Stream: Stdout, Chunk: []byte(a)})
			put(ExecCommandOutputDelta{CallID: "B", Stream: Stdout, Chunk: []byte(b)})
			put(AgentMessageDelta{ItemID: fmt.Sprint("msg", round), Delta: "t"})
			put(PatchPreview{CallID: "P", Changes: []FileChange{{Path: fmt.Sprint(i)}}})
			wantA.WriteString(a)
			wantB.WriteString(b)
			wantMsg.WriteString("t")
		}
	}
	got := drainStream(t, q)
	// Per round: the item, then one merged delta of each stream.
	if want := coalesceBacklog + 3*5; len(got) != want {
		t.Fatalf("%d events queued, want %d: deltas were not merged", len(got), want)
	}
	var a, b, msg strings.Builder
	for i, ev := range got[coalesceBacklog:] {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if i%5 != 0 {
				t.Fatalf("item started at %d: a delta moved across it", i)
			}
		case ExecCommandOutputDelta:
			if m.CallID == "A" {
				a.Write(m.Chunk)
			} else {
				b.Write(m.Chunk)
			}
		case AgentMessageDelta:
			msg.WriteString(m.Delta)
		case PatchPreview:
			if m.Changes[0].Path != "9999" {
				t.Fatalf("patch preview %s, want the newest", m.Changes[0].Path)
			}
		default:
			t.Fatalf("unexpected %T", m)
		}
	}
	if a.String() != wantA.String() || b.String() != wantB.String() || msg.String() != wantMsg.String() {
		t.Fatal("merged deltas lost or reordered text")
	}
	for i, ev := range got[:coalesceBacklog] {
		if w, ok := ev.Msg.(Warning); !ok || w.Message != fmt.Sprint(i) {
			t.Fatalf("event %d is %+v", i, ev.Msg)
		}
	}
}

// A merged delta never grows past maxMergedDelta: a new one starts.
func TestEventStreamMergedDeltaIsCapped(t *testing.T) {
	q := newEventStream()
	for i := 0; i < coalesceBacklog; i++ {
		q.put(Event{Msg: Warning{}})
	}
	chunk := strings.Repeat("x", 64<<10)
	n := 2 * maxMergedDelta / len(chunk)
	for i := 0; i < n; i++ {
		q.put(Event{Msg: AgentMessageDelta{ItemID: "m", Delta: chunk}})
	}
	got := drainStream(t, q)[coalesceBacklog:]
	if len(got) != 2 {
		t.Fatalf("%d merged deltas, want 2", len(got))
	}
	for _, ev := range got {
		if l := len(ev.Msg.(AgentMessageDelta).Delta); l > maxMergedDelta {
			t.Fatalf("merged delta of %d bytes", l)
		}
	}
}

// A command's stdout and stderr are one stream for the client: merged in
// the order they came, never one past the other. A reasoning part never
// merges past another part of the same item.
func TestEventStreamKeepsTheOrderWithinAnItem(t *testing.T) {
	q := newEventStream()
	for i := 0; i < coalesceBacklog; i++ {
		q.put(Event{Msg: Warning{}})
	}
	for _, m := range []EventMsg{
		ExecCommandOutputDelta{CallID: "c", Stream: Stdout, Chunk: []byte("out1 ")},
		ExecCommandOutputDelta{CallID: "c", Stream: Stderr, Chunk: []byte("err1 ")},
		ExecCommandOutputDelta{CallID: "c", Stream: Stdout, Chunk: []byte("out2")},
		ReasoningSummaryDelta{ItemID: "r", SummaryIndex: 0, Delta: "a"},
		ReasoningSummaryDelta{ItemID: "r", SummaryIndex: 1, Delta: "b"},
		ReasoningSummaryDelta{ItemID: "r", SummaryIndex: 0, Delta: "c"},
	} {
		q.put(Event{Msg: m})
	}
	got := drainStream(t, q)[coalesceBacklog:]
	if len(got) != 4 {
		t.Fatalf("%d events, want the output merged into one and three summary deltas", len(got))
	}
	if out := string(got[0].Msg.(ExecCommandOutputDelta).Chunk); out != "out1 err1 out2" {
		t.Fatalf("output %q, want it in the order it came", out)
	}
	var summary []string
	for _, ev := range got[1:] {
		m := ev.Msg.(ReasoningSummaryDelta)
		summary = append(summary, fmt.Sprint(m.SummaryIndex, m.Delta))
	}
	if strings.Join(summary, ",") != "0a,1b,0c" {
		t.Fatalf("summary deltas %v: one moved past another part of its item", summary)
	}
}

// A driven stream starts its reader when an event or the close is waiting
// and none is active, never while one is; the reader's turn ends when
// TryNext finds nothing. A drained burst's array is given back.
func TestEventStreamDrivenReader(t *testing.T) {
	q := newEventStream()
	starts := 0
	q.put(Event{Seq: 1, Msg: Warning{Message: "before Drive"}})
	q.Drive(func() { starts++ })
	if starts != 1 {
		t.Fatalf("Drive with an event waiting started %d readers", starts)
	}
	q.put(Event{Seq: 2, Msg: Warning{Message: "while reading"}})
	if starts != 1 {
		t.Fatal("a reader was started while one was active")
	}
	next := func(want uint64) {
		t.Helper()
		ev, ok, err := q.TryNext()
		if !ok || err != nil || ev.Seq != want {
			t.Fatalf("TryNext: %v %v %v, want event %d", ev.Seq, ok, err, want)
		}
	}
	empty := func() {
		t.Helper()
		if _, ok, err := q.TryNext(); ok || err != nil {
			t.Fatalf("TryNext on an empty stream: %v %v", ok, err)
		}
	}
	next(1)
	next(2)
	empty()
	if starts != 1 {
		t.Fatalf("%d readers started", starts)
	}
	for i := range 48 {
		q.put(Event{Seq: uint64(3 + i), Msg: Warning{Message: "burst"}})
	}
	if starts != 2 {
		t.Fatalf("an event after the reader's turn ended started %d readers in all, want 2", starts)
	}
	for i := range 48 {
		next(uint64(3 + i))
	}
	empty()
	if q.buf != nil {
		t.Fatalf("the drained stream keeps an array of %d", cap(q.buf))
	}
	q.close()
	if starts != 3 {
		t.Fatal("the close did not start a reader")
	}
	if _, ok, err := q.TryNext(); ok || err != ErrStreamClosed {
		t.Fatalf("TryNext after the close: %v %v", ok, err)
	}
}
