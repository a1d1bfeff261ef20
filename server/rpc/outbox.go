package rpc

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

// outMsg is one encoded outgoing message, or a response slot.
// Notifications also keep what coalescing needs.
type outMsg struct {
	data []byte
	// Set on notifications only.
	method       string
	pStart, pEnd int
	emittedAtMs  int64
	// merged holds deltas merged into this message; data is rebuilt from
	// it when the writer takes the message.
	merged *coalesced
	// slot, when set, makes this entry the place of a response that is not
	// made yet (see Request.ResponseFirst): the writer stops here until it
	// is filled, then writes what it was filled with.
	slot *slot
}

// slot is a response's reserved place in the queue. Its fields are
// guarded by the outbox's mu.
type slot struct {
	filled bool
	msgs   []outMsg
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
//
// A response slot (reserve) holds the place of a response that its handler
// has not made yet. The writer takes messages up to the first unfilled
// slot and waits there; fill puts the response (and what follows it) in
// the slot's place and wakes the writer. No timer is involved: the engine
// fills every slot it reserves, because every request is answered
// exactly once (at the latest when the connection is given up at
// shutdown). Messages queued behind an unfilled slot do not count against
// the limit until the writer has taken them: it cannot take them before,
// however fast the client reads, so neither disconnecting nor waiting
// would help. Deltas among them are merged as for a client that is
// behind, so they are bounded by the authoritative messages the
// connection is sent while one handler waits for the core.
type outbox struct {
	limit      int
	coalesceAt int
	wait       bool

	ready chan struct{} // 1-buffered: "there may be something to take"

	// mu guards the fields that follow.
	mu      sync.Mutex
	q       []outMsg
	inBatch int  // messages the writer took and may still be writing
	behind  bool // see the type's doc
	closed  bool
	space   chan struct{} // closed and replaced when room appears
	waiting int           // pushers waiting for room
	// unfilled counts the unfilled slots in q; stuck counts the messages
	// queued after the first of them, and released those that were stuck
	// when a slot was filled and the writer has not taken yet. Neither
	// counts against limit.
	unfilled, stuck, released int

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
	return o.pushAll(ctx, []outMsg{m})
}

// pushAll queues msgs together, in order, with nothing in between: the
// room it waits for is room for one message; the rest may overshoot the
// limit by their number (a response and the few notifications that must
// follow it).
func (o *outbox) pushAll(ctx context.Context, msgs []outMsg) error {
	if len(msgs) == 0 {
		return nil
	}
	o.mu.Lock()
	for {
		if o.closed {
			o.mu.Unlock()
			return errOutboxClosed
		}
		n := len(o.q) - o.stuck - o.released
		if n+o.inBatch >= o.coalesceAt {
			o.behind = true
		}
		if len(msgs) == 1 && o.mergeLocked(msgs[0]) {
			o.mu.Unlock()
			return nil
		}
		if n < o.limit || o.unfilled > 0 {
			if o.unfilled > 0 {
				o.stuck += len(msgs)
			}
			for _, m := range msgs {
				if m.slot != nil {
					o.unfilled++
				}
			}
			o.q = append(o.q, msgs...)
			o.mu.Unlock()
			o.wake()
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

// reserve queues a slot for a response to come (see the type's doc).
// Like push, it may wait for room.
func (o *outbox) reserve(ctx context.Context) (*slot, error) {
	s := &slot{}
	if err := o.push(ctx, outMsg{slot: s}); err != nil {
		return nil, err
	}
	return s, nil
}

// fill puts msgs in s's place and lets the writer go on. It never waits:
// the slot already holds its place in the queue.
func (o *outbox) fill(s *slot, msgs []outMsg) {
	o.mu.Lock()
	s.filled, s.msgs = true, msgs
	stuck := o.stuck
	o.recountLocked()
	o.released += stuck - o.stuck
	o.mu.Unlock()
	o.wake()
}

// recountLocked recounts the unfilled slots and the messages stuck behind
// the first of them. It runs when a slot is filled (rare), so the scan
// stays off the path of ordinary messages. o.mu must be held.
func (o *outbox) recountLocked() {
	o.unfilled, o.stuck = 0, 0
	for _, m := range o.q {
		if o.unfilled > 0 {
			o.stuck++
		}
		if m.slot != nil && !m.slot.filled {
			o.unfilled++
		}
	}
}

func (o *outbox) wake() {
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// mergeLocked merges m into the last queued message when both are deltas
// of the same stream and the client is behind. o.mu must be held.
func (o *outbox) mergeLocked(m outMsg) bool {
	// Only while behind (or stuck behind a response not made yet), so
	// that a client that keeps up gets every delta as it was sent (and
	// the rules are not even looked up).
	if !(o.behind || o.stuck > 0) || len(o.q) == 0 || m.method == "" {
		return false
	}
	last := &o.q[len(o.q)-1]
	if last.method != m.method {
		return false
	}
	rule := coalesceRuleFor(m.method)
	if rule == nil {
		return false
	}
	if last.merged == nil {
		acc, ok := rule.start(last.params())
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
		panic("rpc: encoding coalesced notification: " + err.Error())
	}
	data, ps, pe, err := encodeNotification(m.method, rawJSON(params), m.emittedAtMs)
	if err != nil {
		panic("rpc: encoding coalesced notification: " + err.Error())
	}
	m.data, m.pStart, m.pEnd = data, ps, pe
}

// rawJSON is already-encoded JSON that the encoder copies as is.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// take waits for messages and returns the ones the writer may write now
// (everything before the first unfilled slot, filled slots replaced by
// their messages), reusing buf. It returns false once the outbox is
// closed and empty.
func (o *outbox) take(buf []outMsg) ([]outMsg, bool) {
	for {
		o.mu.Lock()
		avail := 0
		for avail < len(o.q) && (o.q[avail].slot == nil || o.q[avail].slot.filled) {
			avail++
		}
		if avail > 0 {
			clear(buf)
			out := buf[:0]
			for _, m := range o.q[:avail] {
				if m.slot != nil {
					out = append(out, m.slot.msgs...)
					continue
				}
				m.finish()
				out = append(out, m)
			}
			rest := len(o.q) - avail
			copy(o.q, o.q[avail:])
			clear(o.q[rest:])
			o.q = o.q[:rest]
			o.released = max(o.released-avail, 0)
			o.inBatch = len(out)
			if o.waiting > 0 {
				close(o.space)
				o.space = make(chan struct{})
			}
			o.mu.Unlock()
			return out, true
		}
		if len(o.q) > 0 {
			// A response not made yet heads the queue: wait for fill.
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
	o.wake()
}

// abort stops new pushes and drops what is queued: the connection is gone.
func (o *outbox) abort() {
	o.mu.Lock()
	o.q = nil
	o.unfilled, o.stuck, o.released = 0, 0, 0
	o.mu.Unlock()
	o.close()
}

// coalescedCount reports how many notifications were merged away.
func (o *outbox) coalescedCount() uint64 { return o.coalesced.Load() }

// depth is the number of messages queued and not yet taken by the writer.
func (o *outbox) depth() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.q)
}
