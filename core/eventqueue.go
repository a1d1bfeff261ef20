package core

import (
	"context"
	"errors"
	"sync"
)

// ErrStreamClosed is returned by EventStream.Next after the last event of a
// session that shut down has been read.
var ErrStreamClosed = errors.New("core: event stream closed")

// coalesceBacklog is the backlog at which the stream starts to merge
// deltas. A reader that keeps up never sees a merge; one that stops (its
// client stopped reading) leaves a backlog that grows with the
// authoritative events only, not with the deltas.
const coalesceBacklog = 1024

// maxMergedDelta caps the text (or bytes) one merged delta carries, so
// that it never becomes a message too large for a client.
const maxMergedDelta = 1 << 20

// mergeReach bounds how far back from the tail a delta looks for the one
// it continues (a few streams may interleave: parallel commands).
const mergeReach = 64

// EventStream is the outbound river of a session: a FIFO of events with a
// single reader. Put never blocks and never drops, so the core is never
// held up by a slow reader. It stays bounded by what matters: while the
// reader is behind (coalesceBacklog events queued), a volatile delta that
// continues a queued delta of the same stream (an item's text or output,
// a reasoning part), with only deltas of other items queued after it, is
// merged into it (text appended; a patch preview replaced), as the
// connection queues do. Items, turn events and everything else are
// authoritative: never merged, dropped or reordered. Merged deltas leave
// gaps in Seq.
type EventStream struct {
	mu sync.Mutex
	// buf holds events from head onwards; it is compacted as it drains.
	buf    []queuedEvent
	head   int
	closed bool
	// ready has one token when events (or the close) are waiting.
	ready chan struct{}
	// start, for a driven stream (Drive), starts a reader; reading says
	// one is active (it reads until TryNext finds nothing).
	start   func()
	reading bool
}

// queuedEvent is an event in the stream; acc holds the text of deltas
// merged into it, until it is read.
type queuedEvent struct {
	ev  Event
	acc []byte
}

func newEventStream() *EventStream {
	return &EventStream{ready: make(chan struct{}, 1)}
}

// put appends ev, or merges it into the delta it continues. It never
// blocks.
func (q *EventStream) put(ev Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if len(q.buf)-q.head < coalesceBacklog || !q.mergeLocked(ev.Msg) {
		q.buf = append(q.buf, queuedEvent{ev: ev})
	}
	start := q.startLocked()
	q.mu.Unlock()
	if start != nil {
		start()
		return
	}
	q.signal()
}

// startLocked returns the function that starts a reader of a driven
// stream when none is active, and marks one active; nil otherwise.
func (q *EventStream) startLocked() func() {
	if q.start == nil || q.reading {
		return nil
	}
	q.reading = true
	return q.start
}

// Drive makes the stream start its reader on demand instead of having
// one wait: start is called (never with the stream's lock held, and never
// while a reader it started is active) when an event or the close is
// waiting and no reader is active. The reader reads with TryNext until it
// reports nothing, which ends its turn as the active reader. Call Drive
// once, before any read; it calls start at once if events are waiting.
// An idle session then holds no goroutine for its events.
func (q *EventStream) Drive(start func()) {
	q.mu.Lock()
	q.start = start
	var now func()
	if q.head < len(q.buf) || q.closed {
		now = q.startLocked()
	}
	q.mu.Unlock()
	if now != nil {
		now()
	}
}

// deltaKey identifies the stream a volatile delta belongs to: an item (id)
// and, for reasoning, the part (idx).
type deltaKey struct {
	kind uint8
	id   string
	idx  int
}

const (
	keyMessage uint8 = iota + 1
	keySummary
	keyReasoning
	keyOutput
	keyPatch
	keyPlan
)

// deltaKeyOf returns the stream of a volatile delta; false for an
// authoritative event.
func deltaKeyOf(m EventMsg) (deltaKey, bool) {
	switch m := m.(type) {
	case AgentMessageDelta:
		return deltaKey{kind: keyMessage, id: m.ItemID}, true
	case PlanDelta:
		return deltaKey{kind: keyPlan, id: m.ItemID}, true
	case ReasoningSummaryDelta:
		return deltaKey{kind: keySummary, id: m.ItemID, idx: m.SummaryIndex}, true
	case ReasoningRawDelta:
		return deltaKey{kind: keyReasoning, id: m.ItemID, idx: m.ContentIndex}, true
	case ExecCommandOutputDelta:
		// stdout and stderr are one stream for the client (the item's
		// output, in the order it came): merged in that order.
		return deltaKey{kind: keyOutput, id: m.CallID}, true
	case PatchPreview:
		return deltaKey{kind: keyPatch, id: m.CallID}, true
	}
	return deltaKey{}, false
}

// deltaBytes returns a delta's text or bytes (nil for a patch preview,
// whose newer state replaces the older).
func deltaBytes(m EventMsg) []byte {
	switch m := m.(type) {
	case AgentMessageDelta:
		return []byte(m.Delta)
	case PlanDelta:
		return []byte(m.Delta)
	case ReasoningSummaryDelta:
		return []byte(m.Delta)
	case ReasoningRawDelta:
		return []byte(m.Delta)
	case ExecCommandOutputDelta:
		return m.Chunk
	}
	return nil
}

// mergeLocked merges m into the queued delta of the same stream, if only
// deltas of other items were queued after that one and the merged text
// stays under maxMergedDelta. q.mu must be held.
func (q *EventStream) mergeLocked(m EventMsg) bool {
	key, ok := deltaKeyOf(m)
	if !ok {
		return false
	}
	for i := len(q.buf) - 1; i >= q.head && i >= len(q.buf)-mergeReach; i-- {
		qe := &q.buf[i]
		k, ok := deltaKeyOf(qe.ev.Msg)
		if !ok {
			return false // an authoritative event: nothing may pass it
		}
		if k.id != key.id {
			continue // another item's delta: passing it reorders nothing it relates to
		}
		if k != key {
			return false // another part of the same item
		}
		if key.kind == keyPatch {
			qe.ev.Msg = m
			return true
		}
		add := deltaBytes(m)
		if qe.acc == nil {
			qe.acc = append([]byte(nil), deltaBytes(qe.ev.Msg)...)
		}
		if len(qe.acc)+len(add) > maxMergedDelta {
			return false
		}
		qe.acc = append(qe.acc, add...)
		return true
	}
	return false
}

// withText returns the delta m carrying text instead of its own.
func withText(m EventMsg, text []byte) EventMsg {
	switch m := m.(type) {
	case AgentMessageDelta:
		m.Delta = string(text)
		return m
	case PlanDelta:
		m.Delta = string(text)
		return m
	case ReasoningSummaryDelta:
		m.Delta = string(text)
		return m
	case ReasoningRawDelta:
		m.Delta = string(text)
		return m
	case ExecCommandOutputDelta:
		m.Chunk = text
		return m
	}
	return m
}

func (q *EventStream) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// close marks the end of the stream: Next returns the events already queued,
// then ErrStreamClosed.
func (q *EventStream) close() {
	q.mu.Lock()
	q.closed = true
	start := q.startLocked()
	q.mu.Unlock()
	if start != nil {
		start()
		return
	}
	q.signal()
}

// Next returns the next event, waiting for one until ctx is done. On a
// driven stream (Drive), the active reader may call it to wait rather
// than end its turn (it stays the active reader).
func (q *EventStream) Next(ctx context.Context) (Event, error) {
	for {
		q.mu.Lock()
		ev, ok, err := q.nextLocked()
		q.mu.Unlock()
		if ok || err != nil {
			return ev, err
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// TryNext returns the next event without waiting: ok is false when none
// is waiting, and err is ErrStreamClosed once the last event of a closed
// stream was read. For a driven stream (Drive), a false ok ends the
// reader's turn: the next event starts a reader again, and the stream
// gives back its array meanwhile.
func (q *EventStream) TryNext() (ev Event, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ev, ok, err = q.nextLocked()
	if !ok && err == nil {
		q.reading = false
		q.buf = nil // the reader goes: the array is given back until the next burst
	}
	return ev, ok, err
}

// nextLocked takes the next event; ok is false when none is waiting, and
// err is ErrStreamClosed after the last one of a closed stream. q.mu must
// be held.
func (q *EventStream) nextLocked() (Event, bool, error) {
	if q.head == len(q.buf) {
		if q.closed {
			q.signal()
			return Event{}, false, ErrStreamClosed
		}
		return Event{}, false, nil
	}
	qe := q.buf[q.head]
	q.buf[q.head] = queuedEvent{}
	q.head++
	if q.head == len(q.buf) {
		q.buf = q.buf[:0]
		q.head = 0
	} else if q.head > 1024 && q.head*2 > len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf = q.buf[:n]
		q.head = 0
	}
	if q.head < len(q.buf) {
		q.signal()
	}
	ev := qe.ev
	if qe.acc != nil {
		ev.Msg = withText(ev.Msg, qe.acc)
	}
	return ev, true, nil
}
