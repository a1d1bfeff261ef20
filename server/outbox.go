package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

var (
	// errOutboxFull: the client cannot keep up and the connection may not
	// wait; the caller disconnects it.
	errOutboxFull = errors.New("outbound queue full")
	// errOutboxClosed: the connection is closing; nothing more is sent.
	errOutboxClosed = errors.New("connection closed")
)

// outMsg is one encoded outgoing message. Notifications also keep what
// coalescing needs.
type outMsg struct {
	data []byte
	// Set on notifications only.
	method       string
	pStart, pEnd int
	emittedAtMs  int64
	rule         *coalesceRule
	// merged holds deltas merged into this message; data is rebuilt from
	// it when the writer takes the message.
	merged *coalesced
}

// params returns the notification's params bytes (nil when none).
func (m *outMsg) params() []byte {
	if m.pEnd == 0 {
		return nil
	}
	return m.data[m.pStart:m.pEnd]
}

// outbox is a connection's bounded outbound queue. Many goroutines push;
// exactly one (the connection's writer) takes.
//
// Overflow policy, in order: (1) while the client is behind, a coalescible
// delta that continues the last queued notification (same method and keys)
// is merged into it instead of queued, so order relative to everything
// else is kept; (2) while there is room, a message is queued; (3) when the
// queue is full, a connection that may wait (stdio, in-process) makes the
// pusher wait for room, and any other gets errOutboxFull and is
// disconnected. Nothing is ever dropped silently.
//
// "Behind" starts when the backlog (queued messages plus the batch the
// writer is still writing) reaches half the queue, and lasts until the
// writer finds the queue empty. The hysteresis matters: a client that
// reads slowly lets the writer progress in small steps, and each step
// empties the queue; a threshold on the queue alone would let every step
// queue another run of single deltas.
type outbox struct {
	limit      int
	coalesceAt int
	wait       bool

	ready chan struct{} // 1-buffered: "there is something to take"

	// mu guards the fields that follow.
	mu      sync.Mutex
	q       []outMsg
	inBatch int  // messages the writer took and may still be writing
	behind  bool // see the type's doc
	closed  bool
	space   chan struct{} // closed and replaced when room appears
	waiting int           // pushers waiting for room
	// holds > 0 keeps the writer from taking messages queued at or after
	// position holdFrom (see hold).
	holds    int
	holdFrom int

	// coalesced counts merged notifications; written under mu, read
	// without it.
	coalesced atomic.Uint64
}

func newOutbox(limit int, wait bool) *outbox {
	if limit < 1 {
		limit = 1
	}
	at := limit / 2
	if at < 1 {
		at = 1
	}
	return &outbox{
		limit:      limit,
		coalesceAt: at,
		wait:       wait,
		ready:      make(chan struct{}, 1),
		space:      make(chan struct{}),
	}
}

// push queues m following the overflow policy. It waits only on a waiting
// outbox, and then until ctx ends.
func (o *outbox) push(ctx context.Context, m outMsg) error {
	o.mu.Lock()
	for {
		if o.closed {
			o.mu.Unlock()
			return errOutboxClosed
		}
		n := len(o.q)
		if n+o.inBatch >= o.coalesceAt {
			o.behind = true
		}
		if m.rule != nil && o.behind && n > 0 && !(o.holds > 0 && n-1 < o.holdFrom) && o.mergeLastLocked(m) {
			o.mu.Unlock()
			return nil
		}
		if n < o.limit {
			o.q = append(o.q, m)
			o.mu.Unlock()
			select {
			case o.ready <- struct{}{}:
			default:
			}
			return nil
		}
		if !o.wait {
			o.mu.Unlock()
			return errOutboxFull
		}
		space := o.space
		o.waiting++
		o.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			o.mu.Lock()
			o.waiting--
			o.mu.Unlock()
			return ctx.Err()
		}
		o.mu.Lock()
		o.waiting--
	}
}

// mergeLastLocked merges m into the last queued message when both are
// deltas of the same stream. o.mu must be held.
func (o *outbox) mergeLastLocked(m outMsg) bool {
	last := &o.q[len(o.q)-1]
	if last.method != m.method || last.rule == nil {
		return false
	}
	if last.merged == nil {
		acc, ok := last.rule.start(last.params())
		if !ok {
			return false
		}
		last.merged = acc
	}
	if !last.merged.add(m.params()) {
		return false
	}
	o.coalesced.Add(1)
	return true
}

// finish rebuilds the bytes of a message that absorbed merged deltas.
func (m *outMsg) finish() {
	if m.merged == nil {
		return
	}
	params, err := m.merged.params()
	m.merged = nil
	if err != nil {
		// Members came from our own encoder; this cannot fail.
		panic("server: encoding coalesced notification: " + err.Error())
	}
	data, ps, pe, err := encodeNotification(m.method, rawJSON(params), m.emittedAtMs)
	if err != nil {
		panic("server: encoding coalesced notification: " + err.Error())
	}
	m.data, m.pStart, m.pEnd = data, ps, pe
}

// rawJSON is already-encoded JSON that the encoder copies as is.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// hold keeps the writer from writing what is queued from now on until
// unhold: a response and the notifications that must follow it (thread/start's
// result, then thread/started) reach the client together, so it cannot
// act on the response first. A full queue overrides the hold rather than
// deadlock a pusher that waits for room.
func (o *outbox) hold() {
	o.mu.Lock()
	if o.holds == 0 {
		o.holdFrom = len(o.q)
	}
	o.holds++
	o.mu.Unlock()
}

// unhold ends a hold.
func (o *outbox) unhold() {
	o.mu.Lock()
	o.holds--
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// take waits for messages and returns the queued ones the writer may
// write, reusing buf. It returns false once the outbox is closed and
// empty.
func (o *outbox) take(buf []outMsg) ([]outMsg, bool) {
	for {
		o.mu.Lock()
		n := len(o.q)
		avail := n
		if o.holds > 0 && !o.closed && n < o.limit {
			avail = o.holdFrom
		}
		if avail > 0 {
			out := o.q[:avail:avail]
			clear(buf)
			o.q = append(buf[:0], o.q[avail:]...)
			if o.holds > 0 {
				o.holdFrom = max(o.holdFrom-avail, 0)
			}
			n = avail
			o.inBatch = n
			for i := range out {
				out[i].finish()
			}
			if o.waiting > 0 {
				close(o.space)
				o.space = make(chan struct{})
			}
			o.mu.Unlock()
			return out, true
		}
		if n > 0 {
			// Everything queued is held: wait for unhold.
			o.mu.Unlock()
			<-o.ready
			continue
		}
		// The writer has written everything: the client caught up.
		o.inBatch = 0
		o.behind = false
		if o.closed {
			o.mu.Unlock()
			return nil, false
		}
		o.mu.Unlock()
		<-o.ready
	}
}

// close stops new pushes; what is queued is still taken (drained).
func (o *outbox) close() {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		close(o.space)
		o.space = make(chan struct{})
	}
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// abort stops new pushes and drops what is queued: the connection is gone.
func (o *outbox) abort() {
	o.mu.Lock()
	o.q = nil
	o.mu.Unlock()
	o.close()
}

// coalescedCount reports how many notifications were merged away.
func (o *outbox) coalescedCount() uint64 { return o.coalesced.Load() }
