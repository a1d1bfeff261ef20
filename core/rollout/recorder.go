package rollout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// ErrClosed is returned by a Recorder's barriers after Close.
var ErrClosed = errors.New("rollout: recorder closed")

// DefaultQueueSize is the number of commands a Recorder queues before
// RecordItem and RecordEvent block: that wait is disk back-pressure.
const DefaultQueueSize = 256

// Recorder appends one thread's records to its rollout file. It implements
// core.Sink.
//
// Concurrency: every method may be called from any goroutine; records keep
// the order of the calls that made them when those calls are themselves
// ordered (the turn loop calls from one goroutine). One writer goroutine
// at a time owns the file and is fed by a bounded queue; RecordItem and
// RecordEvent return once the record is queued and block only while the
// queue is full. The writer runs only while there is work: it is started
// by the first command queued after it stopped, and stops once the queue
// is empty and everything is written, unless a turn is under way (it
// waits for the turn's next records then) or writes fail (it stays to
// retry them). An idle thread's recorder therefore holds no goroutine and
// no queue, only its state (a few hundred bytes, and the open file).
// Close is idempotent; records sent after it are dropped.
//
// Durability: records reach the file (a write call, no fsync) as soon as
// the writer is idle, and at the latest at each barrier: Flush (an item
// boundary) writes, Sync (a turn end) writes and fsyncs. The writer also
// fsyncs by itself after writing a turn's end, so an ended turn survives a
// crash even if the caller never calls Sync. Rollback and Persist return
// only after an fsync; SetName after the session index's.
//
// Write errors do not fail the caller's turn: the unwritten records stay in
// memory, OnWarning and OnWriteFailed are told, and the writer retries,
// at the next barrier and by itself (every 100 ms at first, backing off
// to every 2 s) until a write succeeds; OnWriteRecovered is told then.
// Barriers return the error too, for callers that promise durability to
// a client.
type Recorder struct {
	threadID string
	path     string
	// w is the writer's state; only the running writer goroutine touches
	// it (one at a time: a new one starts only after the last stopped).
	w *writer
	// exited is closed when the writer has handled Close.
	exited chan struct{}

	// qmu guards the fields that follow.
	qmu sync.Mutex
	// q is the commands waiting for the writer, in order; at most qsize
	// of them, but Close's command always goes in.
	q     []command
	qsize int
	// room is signalled when the writer takes the queue (senders wait on
	// it while the queue is full).
	room *sync.Cond
	// running: a writer goroutine runs (or is starting); it is set by the
	// sender that starts it and cleared by the writer when it stops.
	running bool
	// wake has a token when commands were queued while the writer ran: it
	// waits on it only while retrying failed writes.
	wake chan struct{}

	// created is set once the file exists on disk.
	created atomic.Bool
	// failing is set while writes fail (until one succeeds again).
	failing atomic.Bool

	// sendMu guards closed; senders hold it shared while they enqueue so
	// that Close (exclusive) knows nothing is enqueued after its command.
	sendMu sync.RWMutex
	closed bool

	closeOnce sync.Once
	closeErr  error
	onClose   func()
	// setName records a name in the store's session index.
	setName func(threadID, name string) error
}

type cmdKind uint8

const (
	cmdItem cmdKind = iota + 1
	cmdEvent
	cmdLine
	cmdFlush
	cmdSync
	cmdPersist
	cmdClose
)

type command struct {
	kind   cmdKind
	at     time.Time
	turnID string
	item   model.ResponseItem
	ev     core.Event
	// cmdLine: a pre-encoded record. durable makes the writer fsync
	// before replying.
	lineType string
	payload  []byte
	durable  bool
	ctx      context.Context // cmdClose: how long to keep retrying
	reply    chan error
}

// ThreadID is the id of the thread the recorder writes.
func (r *Recorder) ThreadID() string { return r.threadID }

// Path is the rollout file's path, known before the file exists.
func (r *Recorder) Path() string { return r.path }

// Failing reports whether the recorder's writes fail now: it holds
// records that it could not write yet.
func (r *Recorder) Failing() bool { return r.failing.Load() }

// Materialized reports whether the rollout file has been created.
func (r *Recorder) Materialized() bool { return r.created.Load() }

// RecordItem queues a model history item of turn turnID ("" for items
// recorded between turns, such as injected items; those are never removed
// by a rollback). The first user message of a turn materializes the file.
func (r *Recorder) RecordItem(turnID string, item model.ResponseItem) {
	if item.IsZero() {
		return
	}
	r.send(command{kind: cmdItem, at: time.Now(), turnID: turnID, item: item})
}

// RecordEvent queues ev if the rollout keeps its kind (see Keeps); other
// events return at once. TurnStarted and the user message item
// materialize the file.
func (r *Recorder) RecordEvent(ev core.Event) {
	if decide(ev.Msg) != decisionKeep {
		return
	}
	r.send(command{kind: cmdEvent, at: time.Now(), ev: ev})
}

// RecordTurnContext queues the settings turn turnID runs with. Call it
// once per turn, before the turn's first item.
func (r *Recorder) RecordTurnContext(turnID string, tc TurnContext) {
	r.sendLine(turnID, LineTurnContext, turnContextToWire(turnID, tc), false)
}

// RecordCompaction queues a compaction of the history: when the thread is
// rebuilt, the history recorded before it is replaced by
// c.ReplacementHistory.
func (r *Recorder) RecordCompaction(turnID string, c Compaction) {
	r.sendLine(turnID, LineCompacted, wireCompacted{Message: c.Message, ReplacementHistory: nonNil(c.ReplacementHistory)}, false)
}

// SetName records the thread's name ("" clears it) in the store's session
// index and returns once it is durable.
func (r *Recorder) SetName(_ context.Context, name string) error {
	r.sendMu.RLock()
	closed := r.closed
	r.sendMu.RUnlock()
	if closed {
		return ErrClosed
	}
	return r.setName(r.threadID, name)
}

// Rollback records that the last n user turns are dropped from the
// thread (history and public view) and returns once it is durable.
func (r *Recorder) Rollback(ctx context.Context, n int) error {
	if n < 1 {
		return fmt.Errorf("rollout: rollback of %d turns", n)
	}
	return r.lineBarrier(ctx, "", LineEventMsg, refRolledBack{Type: evThreadRolledBack, NumTurns: n})
}

// Flush writes everything recorded so far to the file (no fsync).
func (r *Recorder) Flush(ctx context.Context) error { return r.barrier(ctx, cmdFlush) }

// Sync writes everything recorded so far and fsyncs the file.
func (r *Recorder) Sync(ctx context.Context) error { return r.barrier(ctx, cmdSync) }

// Persist creates the file now (if it does not exist yet), writes
// everything recorded so far and fsyncs it.
func (r *Recorder) Persist(ctx context.Context) error { return r.barrier(ctx, cmdPersist) }

// Close drains the queue, writes and fsyncs everything, and stops the
// writer. If writing fails it retries until ctx is done and then gives up
// (the records still in memory are lost, and the error is returned).
// Close is idempotent; later calls return the first call's result.
func (r *Recorder) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		r.sendMu.Lock()
		r.closed = true
		r.sendMu.Unlock()
		reply := make(chan error, 1)
		// Past the bound: Close never waits for room.
		r.enqueue(command{kind: cmdClose, ctx: ctx, reply: reply}, false)
		r.closeErr = <-reply
		<-r.exited
		if r.onClose != nil {
			r.onClose()
		}
	})
	return r.closeErr
}

func (r *Recorder) send(c command) bool {
	r.sendMu.RLock()
	defer r.sendMu.RUnlock()
	if r.closed {
		return false
	}
	r.enqueue(c, true)
	return true
}

// enqueue queues c for the writer, waiting while the queue is full when
// bounded, and starts the writer if it is not running.
func (r *Recorder) enqueue(c command, bounded bool) {
	r.qmu.Lock()
	// A full queue has a running writer: it stops only once the queue is
	// empty.
	for bounded && len(r.q) >= r.qsize {
		r.room.Wait()
	}
	r.q = append(r.q, c)
	start := !r.running
	r.running = true
	r.qmu.Unlock()
	if start {
		go r.w.run()
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take returns the queued commands and leaves spare (empty) as the queue.
// Only the writer calls it.
func (r *Recorder) take(spare []command) []command {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	q := r.q
	if len(q) == 0 {
		return nil
	}
	r.q = spare
	r.room.Broadcast()
	return q
}

// park stops the writer unless commands came meanwhile: it reports
// whether the writer must end. Only the writer calls it.
func (r *Recorder) park() bool {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if len(r.q) > 0 {
		return false
	}
	r.q = nil // a command is 300 bytes: no array is kept for the next burst
	r.running = false
	return true
}

func (r *Recorder) sendLine(turnID, typ string, v any, durable bool) (chan error, error) {
	payload, err := model.MarshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	c := command{kind: cmdLine, at: time.Now(), turnID: turnID, lineType: typ, payload: payload, durable: durable}
	if durable {
		c.reply = make(chan error, 1)
	}
	if !r.send(c) {
		return nil, ErrClosed
	}
	return c.reply, nil
}

func (r *Recorder) lineBarrier(ctx context.Context, turnID, typ string, v any) error {
	reply, err := r.sendLine(turnID, typ, v, true)
	if err != nil {
		return err
	}
	return wait(ctx, reply)
}

func (r *Recorder) barrier(ctx context.Context, kind cmdKind) error {
	reply := make(chan error, 1)
	if !r.send(command{kind: kind, reply: reply}) {
		return ErrClosed
	}
	return wait(ctx, reply)
}

func wait(ctx context.Context, reply chan error) error {
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ core.Sink = (*Recorder)(nil)
