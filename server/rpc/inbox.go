package rpc

import (
	"sync"
)

// inbox passes what a connection's reader read to its dispatcher, in
// order. The reader goroutine only reads: dispatching a message (decoding
// it, initialize, admitting a request) runs on a dispatcher goroutine that
// exists only while there is something to dispatch. That is for memory: a
// goroutine's stack grows to what its deepest call needed and keeps that
// size while it stays in use, and an idle connection's one goroutine, its
// reader, blocked in a read, needs a few kilobytes where dispatching needs
// more; 10,000 idle connections hold 10,000 readers.
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
	mu    sync.Mutex
	q     []inMsg
	bytes int
	// running: a dispatcher runs (start was called, take has not
	// returned false since).
	running bool
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
	in.q = append(in.q, m)
	in.bytes += len(m.data) + inMsgOverhead
	start := !in.running
	in.running = true
	in.mu.Unlock()
	if start {
		in.start()
	}
	return true
}

// take returns the next message to dispatch; false when there is none:
// the dispatcher then stops (push starts a new one).
func (in *inbox) take() (inMsg, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	defer in.signalLocked()
	if len(in.q) == 0 || in.closed {
		in.q, in.bytes = nil, 0
		in.running = false
		return inMsg{}, false
	}
	m := in.q[0]
	in.q[0] = inMsg{}
	in.q = in.q[1:]
	in.bytes -= len(m.data) + inMsgOverhead
	return m, true
}

// waitDispatched waits until everything pushed was dispatched (or the
// inbox was closed).
func (in *inbox) waitDispatched() {
	in.mu.Lock()
	for in.running && !in.closed {
		in.waitLocked()
	}
	in.mu.Unlock()
}

// close drops what waits to be dispatched and wakes a waiting reader:
// the connection ended.
func (in *inbox) close() {
	in.mu.Lock()
	in.closed = true
	in.q, in.bytes = nil, 0
	in.signalLocked()
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
