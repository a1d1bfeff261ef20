package core

import (
	"context"
	"errors"
	"sync"
)

// ErrStreamClosed is returned by EventStream.Next after the last event of a
// session that shut down has been read.
var ErrStreamClosed = errors.New("core: event stream closed")

// EventStream is the outbound river of a session: an unbounded FIFO of
// events. Put never blocks and never drops, so the core is never held up by
// a slow reader; in exchange the queue accounts for what it holds (Len,
// Bytes) so the owner can watch its memory. It has a single reader.
type EventStream struct {
	mu sync.Mutex
	// buf holds events from head onwards; it is compacted as it drains.
	buf    []Event
	head   int
	bytes  int64
	closed bool
	// ready has one token when events (or the close) are waiting.
	ready chan struct{}
}

func newEventStream() *EventStream {
	return &EventStream{ready: make(chan struct{}, 1)}
}

// put appends ev. It never blocks.
func (q *EventStream) put(ev Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.buf = append(q.buf, ev)
	q.bytes += approxSize(ev.Msg)
	q.mu.Unlock()
	q.signal()
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
	q.mu.Unlock()
	q.signal()
}

// Next returns the next event, waiting for one until ctx is done.
func (q *EventStream) Next(ctx context.Context) (Event, error) {
	for {
		q.mu.Lock()
		if q.head < len(q.buf) {
			ev := q.buf[q.head]
			q.buf[q.head] = Event{}
			q.head++
			q.bytes -= approxSize(ev.Msg)
			if q.head == len(q.buf) {
				q.buf = q.buf[:0]
				q.head = 0
			} else if q.head > 1024 && q.head*2 > len(q.buf) {
				n := copy(q.buf, q.buf[q.head:])
				clear(q.buf[n:])
				q.buf = q.buf[:n]
				q.head = 0
			}
			more := q.head < len(q.buf)
			q.mu.Unlock()
			if more {
				q.signal()
			}
			return ev, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			q.signal()
			return Event{}, ErrStreamClosed
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Len returns the number of queued events.
func (q *EventStream) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf) - q.head
}

// Bytes returns an estimate of the memory held by queued events.
func (q *EventStream) Bytes() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

// approxSize estimates the payload bytes an event holds, for accounting.
func approxSize(m EventMsg) int64 {
	const base = 64
	switch m := m.(type) {
	case AgentMessageDelta:
		return base + int64(len(m.Delta))
	case ReasoningSummaryDelta:
		return base + int64(len(m.Delta))
	case ReasoningRawDelta:
		return base + int64(len(m.Delta))
	case ExecCommandOutputDelta:
		return base + int64(len(m.Chunk))
	case RawResponseItem:
		return base + int64(len(m.Item.Raw()))
	case AgentMessage:
		return base + int64(len(m.Message))
	}
	return base
}
