package core

import (
	"context"
	"errors"
	"sync"
)

// errDone is put's answer when the session stopped while it waited.
var errDone = errors.New("core: session stopped")

// submissionQueue is a session's inbound river: submissions in order, at
// most SubmissionQueueCapacity of them, with one reader (the loop), which
// it starts when a submission comes and none runs (the reader stops with
// park). Its array grows with what is queued and is given back when it
// empties, so that an idle session holds none (a channel of that capacity
// would hold 24 KB per session whether used or not).
type submissionQueue struct {
	// ready has one token when submissions were queued while the reader
	// ran.
	ready chan struct{}
	// start starts the reader; set before the first put.
	start func()

	// mu guards the fields that follow.
	mu sync.Mutex
	q  []queued
	// room, when a submitter waits for room, is closed by the next take.
	room chan struct{}
	// running: the reader runs (from the put that started it to the park
	// that stopped it).
	running bool
}

func newSubmissionQueue() *submissionQueue {
	return &submissionQueue{ready: make(chan struct{}, 1)}
}

// put queues q, waiting while the queue is full until ctx ends or done is
// closed (it then returns errDone).
func (sq *submissionQueue) put(ctx context.Context, q queued, done <-chan struct{}) error {
	for {
		sq.mu.Lock()
		if len(sq.q) < SubmissionQueueCapacity {
			sq.q = append(sq.q, q)
			start := !sq.running && sq.start != nil
			sq.running = true
			sq.mu.Unlock()
			if start {
				sq.start()
			} else {
				sq.signal()
			}
			return nil
		}
		if sq.room == nil {
			sq.room = make(chan struct{})
		}
		room := sq.room
		sq.mu.Unlock()
		select {
		case <-room:
		case <-done:
			return errDone
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take returns the first submission, if any.
func (sq *submissionQueue) take() (queued, bool) {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if len(sq.q) == 0 {
		return queued{}, false
	}
	q := sq.q[0]
	sq.q[0] = queued{}
	sq.q = sq.q[1:]
	if len(sq.q) == 0 {
		sq.q = nil
	} else {
		sq.signal()
	}
	if sq.room != nil {
		close(sq.room)
		sq.room = nil
	}
	return q, true
}

// park stops the reader unless submissions are waiting: it reports
// whether the reader must return (the next put starts one again).
func (sq *submissionQueue) park() bool {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if len(sq.q) > 0 {
		return false
	}
	sq.running = false
	return true
}

// len returns how many submissions are waiting.
func (sq *submissionQueue) len() int {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	return len(sq.q)
}

func (sq *submissionQueue) signal() {
	select {
	case sq.ready <- struct{}{}:
	default:
	}
}
