package rpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// errOutboxFull: the client cannot keep up and the connection may not
	// wait; the caller disconnects it.
	errOutboxFull = errors.New("outbound queue full")
	// errOutboxClosed: the connection is closing; nothing more is sent.
	errOutboxClosed = errors.New("connection closed")
)

// outboxBytesPerMessage sets a connection's memory limit from its queue
// size (server.outbound_queue_size: 64 MiB at the default 1,024): far
// above what a client that reads keeps queued, even while the writer
// cannot keep up with what the engine queues (256 pipelined turns of 200
// deltas: about 13 MB if nothing merged), and low enough that a connection
// that stopped reading cannot take the daemon's memory. A single message
// larger than the rest of the limit is still queued: the limit is checked
// before a message is added.
const outboxBytesPerMessage = 64 << 10

// outMsgOverhead is what a queued entry counts on top of its bytes: the
// entry itself, so that many small messages count what they hold.
const outMsgOverhead = 96

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
	// size is what the entry holds in bytes (its data, merged text and,
	// for a filled slot, its messages, each with outMsgOverhead), for the
	// memory limit.
	size int
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
// one writer at a time takes. The writer runs only while the connection
// has output: the outbox starts one (start) when a message it can take is
// queued and none runs; the writer waits (park) when there is nothing to
// take, and stops once it has waited a whole tick of the server's idle
// timer (tick), so that an idle connection holds no writer goroutine while
// a busy one does not start one per message.
//
// Overflow policy, in order: (1) while the client is behind, a coalescible
// delta is merged into the last queued delta of its stream (same method
// and keys) when only other streams' deltas follow it (mergeLocked), so
// order relative to everything authoritative is kept; (2) while the queue
// holds less than maxBytes, a message is queued; (3) when it holds that
// much, a connection that may wait (stdio, in-process) makes the pusher
// wait for room, and any other gets errOutboxFull and is disconnected.
// Nothing is ever dropped silently.
//
// The bound is one of memory, not of messages: a client that reads at
// full speed may still be far behind what the engine queues, when the
// writer is starved of CPU, or holds back behind a response not made yet
// (below) and then writes everything at once (256 pipelined turn/starts:
// thousands of messages, most of them authoritative, which cannot merge).
// That is no reason to give the client up; a client that stops reading
// is given up once the queue holds maxBytes.
//
// "Behind" starts when the backlog (queued messages plus the batch the
// writer is still writing) reaches coalesceAt messages (half of the queue
// size), or when messages wait behind a batch the writer has been writing
// for lagBehind (a slow link: the socket's buffer holds the backlog, and
// the queue never gets long), and lasts until the writer finds the queue
// empty. The hysteresis
// matters: a client that reads slowly lets the writer progress in small
// steps, and each step empties the queue; a threshold on the queue alone
// would let every step queue another run of single deltas.
//
// A response slot (reserve) holds the place of a response that its handler
// has not made yet. The writer takes messages up to the first unfilled
// slot and stops there; fill puts the response (and what follows it) in
// the slot's place and starts a writer. No timer is involved: the engine
// fills every slot it reserves, because every request is answered
// exactly once (at the latest when the connection is given up at
// shutdown).
type outbox struct {
	coalesceAt int
	maxBytes   int
	wait       bool
	// start starts a writer, which calls take until it returns false.
	start func()

	// mu guards the fields that follow.
	mu      sync.Mutex
	q       []outMsg
	writing bool // a writer runs: start was called, park has not returned false since
	// parked: the writer waits in park for ready; busy: it took something
	// since the last tick; retire: tick asks the parked writer to stop.
	parked, busy, retire bool
	ready                chan struct{} // 1-buffered; made when the writer first parks
	// done is closed once the outbox is closed, empty and no writer runs
	// (made on demand: drained).
	done     chan struct{}
	doneShut bool
	inBatch  int // messages the writer took and may still be writing
	// batchAt is when the writer took the batch it may still be writing
	// (zero when none).
	batchAt time.Time
	behind  bool // see the type's doc
	closed  bool
	space   chan struct{} // closed and replaced when room appears
	waiting int           // pushers waiting for room
	// bytes is the sum of the sizes of q's entries.
	bytes int

	// coalesced counts merged notifications; written under mu, read
	// without it.
	coalesced atomic.Uint64
}

// newOutbox returns an outbox of maxBytes bytes that coalesces from a
// backlog of coalesceAt messages (see the type's doc); wait makes a full
// outbox make pushers wait. start starts a writer (see the type's doc).
func newOutbox(coalesceAt, maxBytes int, wait bool, start func()) *outbox {
	if maxBytes < 1 {
		maxBytes = 1
	}
	if coalesceAt < 1 {
		coalesceAt = 1
	}
	return &outbox{
		coalesceAt: coalesceAt,
		maxBytes:   maxBytes,
		wait:       wait,
		start:      start,
		space:      make(chan struct{}),
	}
}

// push queues m following the overflow policy. It waits only on a waiting
// outbox, and then until ctx ends.
func (o *outbox) push(ctx context.Context, m outMsg) error {
	return o.pushAll(ctx, []outMsg{m})
}

// pushAll queues msgs together, in order, with nothing in between (a
// response and the few notifications that must follow it): the room it
// waits for is the queue holding less than its limit; they may take it
// past it.
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
		if len(o.q)+o.inBatch >= o.coalesceAt || o.laggingLocked() {
			o.behind = true
		}
		if len(msgs) == 1 && o.behind && o.mergeLocked(msgs[0]) {
			o.mu.Unlock()
			return nil
		}
		if o.bytes < o.maxBytes {
			o.appendLocked(msgs)
			start := o.needWriterLocked()
			o.mu.Unlock()
			if start {
				o.start()
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

// lagBehind is how long a writer may be writing one batch, with messages
// waiting behind it, before its client counts as behind: far longer than
// a client that reads takes to take a batch, short beside the seconds a
// slow link's socket buffer holds.
const lagBehind = 250 * time.Millisecond

// lagCheckAt is how many messages must wait behind the writer's batch
// before its age is looked at (the clock is read only then).
const lagCheckAt = 8

// laggingLocked reports whether the writer has been writing its batch for
// lagBehind with lagCheckAt messages or more waiting. o.mu must be held.
func (o *outbox) laggingLocked() bool {
	return !o.behind && o.inBatch > 0 && len(o.q) >= lagCheckAt && !o.batchAt.IsZero() && time.Since(o.batchAt) >= lagBehind
}

// appendLocked queues msgs. o.mu must be held.
func (o *outbox) appendLocked(msgs []outMsg) {
	for _, m := range msgs {
		m.size = len(m.data) + outMsgOverhead
		o.bytes += m.size
		o.q = append(o.q, m)
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
	// The slot is gone from q when the connection was aborted.
	for i := range o.q {
		if o.q[i].slot == s {
			for _, m := range msgs {
				o.q[i].size += len(m.data) + outMsgOverhead
				o.bytes += len(m.data) + outMsgOverhead
			}
			break
		}
	}
	start := o.needWriterLocked()
	o.mu.Unlock()
	if start {
		o.start()
	}
}

// needWriterLocked reports whether a writer must be started, because q
// starts with something to take and no writer runs; it then counts the
// writer as running. A parked writer is woken instead. o.mu must be held.
func (o *outbox) needWriterLocked() bool {
	if !o.takeableLocked() {
		return false
	}
	if o.writing {
		o.wakeLocked()
		return false
	}
	o.writing = true
	return true
}

// takeableLocked reports whether q starts with something to take. o.mu
// must be held.
func (o *outbox) takeableLocked() bool {
	return len(o.q) > 0 && (o.q[0].slot == nil || o.q[0].slot.filled)
}

// wakeLocked wakes a parked writer. o.mu must be held.
func (o *outbox) wakeLocked() {
	if o.parked {
		select {
		case o.ready <- struct{}{}:
		default:
		}
	}
}

// park waits until there is something to take (true), or until the
// writer must stop (false): tick retired it, or the outbox is closed and
// empty. The writer calls it when take returned false.
func (o *outbox) park() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		if o.takeableLocked() {
			// Work, even if tick asked it to stop meanwhile: it is no
			// longer idle.
			o.retire = false
			return true
		}
		if o.retire || (o.closed && len(o.q) == 0) {
			o.retire = false
			if len(o.q) == 0 {
				o.q = nil // an idle connection keeps no queue
			}
			o.writerStopsLocked()
			return false
		}
		if o.ready == nil {
			o.ready = make(chan struct{}, 1)
		}
		ready := o.ready
		o.parked = true
		o.mu.Unlock()
		<-ready
		o.mu.Lock()
		o.parked = false
	}
}

// tick is the server's idle timer: a writer parked since the previous
// tick, having taken nothing, is asked to stop.
func (o *outbox) tick() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.parked && !o.busy {
		o.retire = true
		o.wakeLocked()
	}
	o.busy = false
}

// writerStopsLocked records that the writer stopped, and that everything
// was written when the outbox is closed and empty. o.mu must be held.
func (o *outbox) writerStopsLocked() {
	o.writing = false
	if o.closed && len(o.q) == 0 {
		o.shutDoneLocked()
	}
}

func (o *outbox) shutDoneLocked() {
	if o.doneShut {
		return
	}
	o.doneShut = true
	if o.done != nil {
		close(o.done)
	}
}

// drained returns a channel closed once the outbox is closed and what it
// held was written (or dropped by abort).
func (o *outbox) drained() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done == nil {
		o.done = make(chan struct{})
		if o.doneShut {
			close(o.done)
		}
	}
	return o.done
}

// writerGone records that the writer stopped without taking again (its
// write failed; the connection is aborted).
func (o *outbox) writerGone() {
	o.mu.Lock()
	o.writerStopsLocked()
	o.mu.Unlock()
}

// mergeLocked merges m into the last queued message when both are deltas
// of the same stream and the client is behind. o.mu must be held.
func (o *outbox) mergeLocked(m outMsg) bool {
	// The caller merges only while behind, so that a client that keeps up
	// gets every delta as it was sent (and the rules are not even looked
	// up).
	if len(o.q) == 0 || m.method == "" {
		return false
	}
	rule := coalesceRuleFor(m.method)
	if rule == nil {
		return false
	}
	fields, text, ok := rule.parse(m.params()) // once, whatever the look-back
	if !ok {
		return false
	}
	// The delta joins the last queued delta of its own stream, looking
	// back over a run of deltas only: deltas of other streams (the
	// interleaved items of concurrent turns) commute with it, while an
	// authoritative message, a response or a slot ends the run, so that
	// nothing is reordered across one. Without the look-back, turns that
	// stream at once defeat merging and a reading client's queue fills.
	for i := len(o.q) - 1; i >= 0 && i >= len(o.q)-mergeLookback; i-- {
		prev := &o.q[i]
		if prev.slot != nil || prev.method == "" || coalesceRuleFor(prev.method) == nil {
			return false
		}
		if prev.method != m.method {
			continue
		}
		if prev.merged == nil {
			acc, ok := rule.start(prev.params())
			if !ok {
				return false
			}
			prev.merged = acc
		}
		if !prev.merged.keysEqual(fields) {
			continue
		}
		if !prev.merged.join(fields, text) {
			// Its stream's last delta is full: never merge into an older
			// one past it.
			return false
		}
		prev.size += len(m.data)
		o.bytes += len(m.data)
		o.coalesced.Add(1)
		return true
	}
	return false
}

// mergeLookback bounds how far back a delta looks for its stream's last
// delta: the cost of a push while behind, and more streams than turns a
// connection runs at once.
const mergeLookback = 256

// finish rebuilds the bytes of a message that absorbed merged deltas.
func (m *outMsg) finish() {
	if m.merged == nil || !m.merged.joined {
		m.merged = nil
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

// take returns the messages the writer may write now (everything before
// the first unfilled slot, filled slots replaced by their messages),
// reusing buf. It returns false when there are none (the writer then
// parks).
func (o *outbox) take(buf []outMsg) ([]outMsg, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	avail := 0
	for avail < len(o.q) && (o.q[avail].slot == nil || o.q[avail].slot.filled) {
		avail++
	}
	if avail > 0 {
		clear(buf)
		out := buf[:0]
		for _, m := range o.q[:avail] {
			o.bytes -= m.size
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
		o.inBatch = len(out)
		o.batchAt = time.Now()
		o.busy = true
		if o.waiting > 0 {
			close(o.space)
			o.space = make(chan struct{})
		}
		return out, true
	}
	clear(buf) // the messages written last are not kept while idle
	buf = buf[:0]
	o.batchAt = time.Time{}
	if len(o.q) == 0 {
		// The writer has written everything: the client caught up.
		o.inBatch = 0
		o.behind = false
	}
	// Otherwise a response not made yet heads the queue: fill wakes the
	// writer.
	return buf, false
}

// close stops new pushes; what is queued is still taken (drained).
func (o *outbox) close() {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		close(o.space)
		o.space = make(chan struct{})
	}
	if !o.writing && len(o.q) == 0 {
		o.shutDoneLocked()
	}
	o.wakeLocked() // a parked writer stops once it was drained
	o.mu.Unlock()
}

// abort stops new pushes and drops what is queued: the connection is gone.
func (o *outbox) abort() {
	o.mu.Lock()
	o.q = nil
	o.bytes = 0
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
