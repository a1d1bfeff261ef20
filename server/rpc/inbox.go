package rpc

import (
	"sync"
)

// inbox passes what a connection's reader read to its dispatcher, in
// order. The reader goroutine only reads: dispatching a message (decoding
// it, initialize, admitting a request) runs on a dispatcher goroutine that
// exists only while the connection has input. That is for memory: a
// goroutine's stack grows to what its deepest call needed and keeps that
// size while it stays in use, and an idle connection's one goroutine, its
// reader, blocked in a read, needs a few kilobytes where dispatching needs
// more; 10,000 idle connections hold 10,000 readers. Like the writer
// (outbox), the dispatcher waits (park) when there is nothing to
// dispatch and stops once it has waited a whole tick of the server's idle
// timer.
//
// Dispatching is quick and never waits on a handler, so the reader is held
// back only when more than maxInboxBytes wait to be dispatched (a client
// that sends faster than requests are even admitted), and on a connection
// that waits for room in its outbound queue (stdio) while the client does
// not read.
type inbox struct {
	// start starts a dispatcher, which calls take until it returns false.
	start func()

	// mu guards the fields that follow.
	mu sync.Mutex
	// q[head:] waits to be dispatched.
	q     []inMsg
	head  int
	bytes int
	// running: a dispatcher runs (start was called, park has not
	// returned false since); parked: it waits in park; busy: it took
	// something since the last tick; retire: tick asks it to stop.
	running, parked, busy, retire bool
	ready                         chan struct{} // 1-buffered; made when the dispatcher first parks
	// changed is closed and replaced when a message was taken or the
	// dispatcher stopped, for a reader waiting for room or for the end of
	// dispatching; nil when nobody waits.
	changed chan struct{}
	closed  bool
}

// inMsg is one message read, or a marker that one was over the size
// limit.
type inMsg struct {
	data     []byte
	tooLarge bool
}

// maxInboxBytes is how much read input may wait to be dispatched before
// the reader waits (one message of any size is always taken).
const maxInboxBytes = 1 << 20

// inMsgOverhead is what an entry counts on top of its bytes.
const inMsgOverhead = 64

// push queues m for dispatching, waiting while the inbox is full. It
// reports false when the inbox was closed (the connection ended).
func (in *inbox) push(m inMsg) bool {
	in.mu.Lock()
	for in.bytes >= maxInboxBytes && !in.closed {
		in.waitLocked()
	}
	if in.closed {
		in.mu.Unlock()
		return false
	}
	if in.head > 64 && in.head > len(in.q)/2 {
		// What was taken stays in front until the dispatcher catches up:
		// move the rest down rather than let the slice grow.
		n := copy(in.q, in.q[in.head:])
		clear(in.q[n:])
		in.q, in.head = in.q[:n], 0
	}
	in.q = append(in.q, m)
	in.bytes += len(m.data) + inMsgOverhead
	start := !in.running
	in.running = true
	in.wakeLocked()
	in.mu.Unlock()
	if start {
		in.start()
	}
	return true
}

// take returns the next message to dispatch; false when there is none
// (the dispatcher then parks).
func (in *inbox) take() (inMsg, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	defer in.signalLocked()
	if in.head == len(in.q) || in.closed {
		in.q, in.head, in.bytes = in.q[:0], 0, 0
		return inMsg{}, false
	}
	m := in.q[in.head]
	in.q[in.head] = inMsg{}
	in.head++
	in.bytes -= len(m.data) + inMsgOverhead
	in.busy = true
	return m, true
}

// park waits until there is something to dispatch (true), or until the
// dispatcher must stop (false): tick retired it, or the inbox was closed.
// The dispatcher calls it when take returned false.
func (in *inbox) park() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for {
		if !in.closed && in.head < len(in.q) {
			// Input, even if tick asked it to stop meanwhile: nobody else
			// would dispatch it, and it is no longer idle.
			in.retire = false
			return true
		}
		if in.closed || in.retire {
			in.retire = false
			in.running = false
			in.q, in.head = nil, 0 // an idle connection keeps no queue
			in.signalLocked()
			return false
		}
		if in.ready == nil {
			in.ready = make(chan struct{}, 1)
		}
		ready := in.ready
		in.parked = true
		in.signalLocked() // everything pushed was dispatched
		in.mu.Unlock()
		<-ready
		in.mu.Lock()
		in.parked = false
	}
}

// tick is the server's idle timer: a dispatcher parked since the previous
// tick, having taken nothing, is asked to stop.
func (in *inbox) tick() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.parked && !in.busy {
		in.retire = true
		in.wakeLocked()
	}
	in.busy = false
}

// wakeLocked wakes a parked dispatcher. in.mu must be held.
func (in *inbox) wakeLocked() {
	if in.parked {
		select {
		case in.ready <- struct{}{}:
		default:
		}
	}
}

// waitDispatched waits until everything pushed was dispatched (the
// dispatcher is parked or stopped with nothing left), or the inbox was
// closed.
func (in *inbox) waitDispatched() {
	in.mu.Lock()
	for !in.closed && (in.head < len(in.q) || (in.running && !in.parked)) {
		in.waitLocked()
	}
	in.mu.Unlock()
}

// close drops what waits to be dispatched and wakes a waiting reader:
// the connection ended.
func (in *inbox) close() {
	in.mu.Lock()
	in.closed = true
	in.q, in.head, in.bytes = nil, 0, 0
	in.signalLocked()
	in.wakeLocked()
	in.mu.Unlock()
}

// waitLocked waits for the next change. in.mu must be held; it is
// released while waiting.
func (in *inbox) waitLocked() {
	if in.changed == nil {
		in.changed = make(chan struct{})
	}
	ch := in.changed
	in.mu.Unlock()
	<-ch
	in.mu.Lock()
}

func (in *inbox) signalLocked() {
	if in.changed != nil {
		close(in.changed)
		in.changed = nil
	}
}
