package threads

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
)

// maxQueued bounds the outputs a thread holds for its deliverer. The
// deliverer falls that far behind only when a subscriber that is waited
// for (stdio, in-process) stops reading; the pump then waits, and what the
// core emits meanwhile waits in the session's event stream, which never
// blocks the core and coalesces deltas while it is behind.
const maxQueued = 1024

// thread is a loaded thread: a core session, its rollout, its projection
// and its subscribers.
//
// Events move outward through two goroutines, in order:
//   - the pump reads the session's events, projects each one under mu and
//     queues the outputs (outq);
//   - the deliverer takes what is queued and sends it to the subscribers,
//     outside mu. It is the only goroutine that sends a thread's outputs,
//     and the only one that may wait for a client.
//
// Both run while a turn runs, and neither stays between turns: the
// session's event stream starts the pump when an event comes
// (core.EventStream.Drive) and the pump returns once it has read
// everything and no turn runs; queueing starts the deliverer
// (wakeDelivererLocked), which returns once outq is empty and no turn
// runs. At most one of each runs at a time. An idle loaded thread
// therefore holds no goroutine of its own (issue 17: memory per loaded
// thread), and a turn's events flow as they always did.
//
// Handlers never deliver: they queue (a replay of pending requests to a
// new subscriber, a notification) and wake the deliverer. A handler that
// reserved its response's place (rpc.Request.ResponseFirst) therefore
// never waits behind its own response, and everything the thread sends
// that connection afterwards follows the response.
//
// Lock discipline: mu guards the thread's state and is never held while
// waiting for a client or for the core.
type thread struct {
	sv *service
	// cfg is the configuration snapshot the thread was loaded with: a
	// reload changes new threads only.
	cfg  *config.Config
	id   string
	sess *core.Session
	rec  *rollout.Recorder // nil for an ephemeral thread
	log  *zap.Logger
	// rawEvents: started with experimentalRawEvents.
	rawEvents bool
	// instructionSources are the AGENTS.md files the thread was given.
	instructionSources []string

	// wake has a token when outq has outputs or the thread is ending,
	// for a deliverer that waits (during a turn).
	wake chan struct{}
	// pumpDone and deliverDone are closed when the pump has read the
	// session's last event and when the deliverer has delivered what
	// followed it; stopped when shutdown has finished (the rollout
	// closed).
	pumpDone, deliverDone, stopped chan struct{}

	// mu guards everything below.
	mu sync.Mutex
	// room is signalled when outq empties (the pump waits on it).
	room *sync.Cond
	meta threadMeta
	// turnClient names the client that started the running turn, and
	// turnInputs are its user messages, for notify.
	turnClient string
	turnInputs []string
	turnNotify bool // the running turn is the model's (notify tells of it)
	// toolStarts are when the tool items running began, for metrics.
	toolStarts map[string]time.Time
	proj       *projection.Thread
	// subs is the subscribers, replaced (never changed in place) on every
	// change, so that the deliverer can use a snapshot without mu.
	subs []*rpc.Conn
	// hooks holds, for each connection whose close unsubscribes it, what
	// unregisters that hook (when the thread ends first).
	hooks map[*rpc.Conn]func()
	// subGen numbers each subscriber's latest subscribe call (from subSeq),
	// so that a tentative subscription is undone only if nobody
	// subscribed the connection since.
	subGen map[*rpc.Conn]uint64
	subSeq uint64
	// outq holds outputs waiting for delivery, in order.
	outq []delivery
	// delivering: a deliverer goroutine runs (wakeDelivererLocked).
	delivering bool
	// unloadTimer fires when the thread has had no activity for the
	// unload delay.
	unloadTimer *time.Timer
	turnRunning bool
	// holds counts requests between finding the thread loaded and
	// starting a turn on it or subscribing to it (hold): no unload starts
	// meanwhile. unloading: an unload has started; no hold is granted.
	holds     int
	unloading bool
	// closed: shutdown has begun; last is what to deliver after the
	// session's last event. pumpEnded: the session's events have ended
	// (and last is queued), so the deliverer ends once outq is empty.
	closed, pumpEnded bool
	last              []projection.Output
}

// delivery is one output to deliver to subs, the subscribers when it was
// queued (so a connection gets what was produced after it subscribed);
// only, when set, restricts it to one connection (requests re-sent to a
// late subscriber).
type delivery struct {
	out  projection.Output
	subs []*rpc.Conn
	only *rpc.Conn
}

// threadMeta is what the wire Thread shows besides status and turns.
type threadMeta struct {
	createdAt, updatedAt time.Time
	cwd, model, provider string
	effort               string
	name, preview        string
	ephemeral            bool
	path                 string
	originator           string
	forkedFrom           string
	gitInfo              *rollout.GitInfo
	// cliVersion and source are those of the program that created the
	// thread, as its rollout says ("" for a thread of this process).
	cliVersion, source string
}

func newThread(sv *service, ls loadSpec, sess *core.Session) *thread {
	t := &thread{
		sv:          sv,
		cfg:         ls.settings.cfg,
		id:          ls.id,
		sess:        sess,
		rec:         ls.rec,
		log:         sv.log.WithLazy(zap.String("thread", ls.id)), // its fields encoded only when it logs
		rawEvents:   ls.rawEvents,
		wake:        make(chan struct{}, 1),
		pumpDone:    make(chan struct{}),
		deliverDone: make(chan struct{}),
		stopped:     make(chan struct{}),
		meta:        ls.meta,
		proj:        projection.NewThread(ls.id, ls.status),
		hooks:       map[*rpc.Conn]func(){},
		subGen:      map[*rpc.Conn]uint64{},
	}
	t.room = sync.NewCond(&t.mu)
	t.mu.Lock()
	t.armUnloadLocked()
	t.mu.Unlock()
	sess.Events().Drive(func() { go t.pump() })
	return t
}

// pump projects the session's events and queues the outputs. While a
// turn runs it waits for the next event; between turns it returns once
// none is waiting (the next event starts it again). Once the session has
// ended, it queues what shutdown asked to send last.
func (t *thread) pump() {
	events := t.sess.Events()
	for {
		t.mu.Lock()
		inTurn := t.turnRunning
		t.mu.Unlock()
		var ev core.Event
		var err error
		if inTurn {
			ev, err = events.Next(context.Background())
		} else {
			var ok bool
			if ev, ok, err = events.TryNext(); err == nil && !ok {
				return
			}
		}
		if err != nil {
			break
		}
		t.mu.Lock()
		for len(t.outq) >= maxQueued {
			t.room.Wait()
		}
		if !streamDelta(ev) {
			t.observe(ev)
			t.noticeTurn(ev)
			t.report(ev)
		}
		t.queueLocked(t.proj.Apply(ev)...)
		t.mu.Unlock()
	}
	t.mu.Lock()
	t.setTurnRunningLocked(false) // a session that ended runs no turn
	t.queueLocked(t.last...)
	t.pumpEnded = true
	t.wakeDelivererLocked()
	t.mu.Unlock()
	close(t.pumpDone)
}

// streamDelta reports whether ev is streamed text or output. A delta
// changes no metadata, notice or metric: the pump gives it to the
// projection alone.
func streamDelta(ev core.Event) bool {
	switch ev.Msg.(type) {
	case core.AgentMessageDelta, core.PlanDelta, core.ReasoningSummaryDelta,
		core.ReasoningRawDelta, core.ExecCommandOutputDelta:
		return true
	}
	return false
}

// observe updates the thread's metadata from an event.
func (t *thread) observe(ev core.Event) {
	switch m := ev.Msg.(type) {
	case core.ItemCompleted:
		if um, ok := m.Item.(core.UserMessageItem); ok && t.meta.preview == "" {
			t.meta.preview = userText(um)
		}
		t.meta.updatedAt = ev.Time
	case core.TurnStarted:
		t.meta.updatedAt = ev.Time
		t.meta.model = m.Context.Model
		t.meta.effort = m.Context.Effort
		t.meta.cwd = m.Context.Cwd
		t.stopUnloadTimerLocked()
		t.setTurnRunningLocked(true)
	case core.TurnComplete, core.TurnAborted:
		t.meta.updatedAt = ev.Time
		t.setTurnRunningLocked(false)
		t.armUnloadLocked()
	case core.RateLimits:
		t.sv.rateLimits.record(m.Snapshot)
	}
}

// setTurnRunningLocked records whether a turn runs, and tells the
// daemon's trimmer of each change. t.mu must be held.
func (t *thread) setTurnRunningLocked(running bool) {
	if running == t.turnRunning {
		return
	}
	t.turnRunning = running
	if t.sv == nil || t.sv.trim == nil {
		return
	}
	if running {
		t.sv.trim.turnStarted()
	} else {
		t.sv.trim.turnEnded()
	}
}

func userText(um core.UserMessageItem) string {
	for _, u := range um.Content {
		if u.Kind == core.InputText && u.Text != "" {
			return u.Text
		}
	}
	return ""
}

// queueLocked queues outputs for the current subscribers and wakes the
// deliverer. t.mu must be held.
func (t *thread) queueLocked(outs ...projection.Output) {
	for _, o := range outs {
		t.outq = append(t.outq, delivery{out: o, subs: t.subs})
	}
	t.wakeDelivererLocked()
}

// wakeDelivererLocked wakes the deliverer, or starts it if it is not
// running and there is something for it to do: outputs queued, or the
// end of the session's events to conclude. t.mu must be held.
func (t *thread) wakeDelivererLocked() {
	if t.delivering {
		select {
		case t.wake <- struct{}{}:
		default:
		}
		return
	}
	if len(t.outq) == 0 && !t.pumpEnded {
		return
	}
	t.delivering = true
	go t.deliverLoop()
}

// deliverLoop delivers the queued outputs in order. While a turn runs it
// waits for more; between turns it returns once none is left (the next
// output starts it again), giving back the queue's arrays. Once the
// session has ended and everything is delivered, it withdraws the server
// requests still out and the thread's close hooks, and closes
// deliverDone.
func (t *thread) deliverLoop() {
	var spare []delivery
	for {
		t.mu.Lock()
		for len(t.outq) == 0 && !t.pumpEnded {
			if !t.turnRunning {
				t.delivering = false
				t.outq = nil
				t.mu.Unlock()
				return
			}
			t.mu.Unlock()
			<-t.wake
			t.mu.Lock()
		}
		if len(t.outq) == 0 {
			// Requests still routed (none after a turn ended normally)
			// are withdrawn.
			for _, r := range t.proj.Requests() {
				if rt := routeOf(r); rt != nil {
					rt.cancel()
					r.Route = nil
				}
			}
			hooks := t.hooks
			t.hooks = map[*rpc.Conn]func(){}
			t.mu.Unlock()
			for _, remove := range hooks {
				remove()
			}
			close(t.deliverDone)
			return
		}
		batch := t.outq
		t.outq = spare[:0]
		t.room.Broadcast()
		t.mu.Unlock()
		for _, d := range batch {
			t.deliver(d)
		}
		clear(batch)
		spare = batch
	}
}

// deliver sends one output to its subscribers (or to its one connection).
// Only the deliverer calls it; it may wait for a client.
func (t *thread) deliver(d delivery) {
	o := d.out
	switch {
	case o.Request != nil:
		t.sendRequest(o.Request, d.subs, d.only)
	case o.Resolved != nil:
		t.resolved(o.Resolved)
	default:
		// Encoded once for every subscriber.
		n, err := rpc.NewNotification(o.Method, o.Params)
		if err != nil {
			t.log.Error("dropping a notification that cannot be encoded", zap.String("method", o.Method), zap.Error(err))
			return
		}
		for _, c := range d.subs {
			if d.only != nil && c != d.only {
				continue
			}
			if o.Audience == projection.RawEvents && !(t.rawEvents && c.Capabilities().ExperimentalAPI) {
				continue
			}
			c.Send(n)
		}
	}
}

// subscribe adds c as a subscriber; with replay, c is also sent the
// server requests still waiting for an answer, after whatever is queued
// for delivery. It reports whether c was already subscribed. It never
// waits.
func (t *thread) subscribe(c *rpc.Conn, replay bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subscribeLocked(c, replay)
}

func (t *thread) subscribeLocked(c *rpc.Conn, replay bool) bool {
	t.subSeq++
	t.subGen[c] = t.subSeq
	was := slices.Contains(t.subs, c)
	if !was {
		t.subs = append(slices.Clip(t.subs), c)
		t.armUnloadLocked()
		if _, ok := t.hooks[c]; !ok && !t.closed {
			t.hooks[c] = c.OnClose(func() {
				t.mu.Lock()
				t.unsubscribeLocked(c)
				delete(t.hooks, c)
				t.forgetConnLocked(c)
				t.mu.Unlock()
			})
		}
	}
	if replay {
		t.replayLocked(c)
	}
	return was
}

// replay re-sends c the server requests still waiting for an answer.
func (t *thread) replay(c *rpc.Conn) {
	t.mu.Lock()
	t.replayLocked(c)
	t.mu.Unlock()
}

func (t *thread) replayLocked(c *rpc.Conn) {
	for _, r := range t.proj.PendingRequests() {
		t.outq = append(t.outq, delivery{out: projection.Output{Request: r}, subs: t.subs, only: c})
	}
	t.wakeDelivererLocked()
}

// subscribeTentatively subscribes c for a request that may still fail;
// undo unsubscribes it again, unless it was subscribed already or has been
// subscribed since (by another request of the same client).
func (t *thread) subscribeTentatively(c *rpc.Conn) (undo func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.subscribeLocked(c, false) {
		return func() {}
	}
	gen := t.subGen[c]
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.subGen[c] == gen {
			t.unsubscribeLocked(c)
		}
	}
}

// unsubscribe removes c; it reports whether c was subscribed. The server
// requests c was sent stay its to answer, as in the reference: a client
// that unsubscribes while a request waits for it may still answer it, and
// is told when it is resolved.
func (t *thread) unsubscribe(c *rpc.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unsubscribeLocked(c)
}

func (t *thread) unsubscribeLocked(c *rpc.Conn) bool {
	delete(t.subGen, c)
	i := slices.Index(t.subs, c)
	if i < 0 {
		return false
	}
	t.subs = slices.Delete(slices.Clone(t.subs), i, i+1)
	t.armUnloadLocked()
	return true
}

// observedUnloadFactor stretches the unload delay of a thread that still
// has subscribers but no activity: a connection that only watches keeps a
// thread loaded for a long while, never forever (a later turn/start loads
// it again).
const observedUnloadFactor = 8

// unloadTimeout bounds the wait for a thread to stop when it is unloaded
// (its turn aborted, its last events delivered, its rollout closed).
const unloadTimeout = 30 * time.Second

// armUnloadLocked (re)starts the unload timer of an idle thread: the
// unload delay without subscribers, observedUnloadFactor times it with.
// Activity (a turn, a subscriber coming or going) re-arms it.
func (t *thread) armUnloadLocked() {
	t.stopUnloadTimerLocked()
	if t.closed || t.turnRunning {
		return
	}
	delay := t.cfg.Server.ThreadUnloadDelay
	if len(t.subs) > 0 {
		delay *= observedUnloadFactor
	}
	t.unloadTimer = time.AfterFunc(delay, t.unloadIfIdle)
}

func (t *thread) stopUnloadTimerLocked() {
	if t.unloadTimer != nil {
		t.unloadTimer.Stop()
		t.unloadTimer = nil
	}
}

// unloadIfIdle unloads the thread if no turn runs: thread/status/changed
// notLoaded, then thread/closed, to every connection.
func (t *thread) unloadIfIdle() {
	t.mu.Lock()
	if t.closed || t.turnRunning || t.proj.ActiveTurnID() != "" {
		t.mu.Unlock()
		return
	}
	if st, _ := t.sess.Status(); st != core.StatusIdle || t.holds > 0 {
		// A turn the pump has not seen start yet, or a request about to
		// start one or to subscribe: try again later.
		t.armUnloadLocked()
		t.mu.Unlock()
		return
	}
	gone := t.beginUnloadLocked()
	defer gone()
	ctx, cancel := context.WithTimeout(context.Background(), unloadTimeout)
	defer cancel()
	t.shutdown(ctx)
	t.sv.s.Broadcast("thread/status/changed", protocol.ThreadStatusChangedNotification{ThreadID: t.id, Status: protocol.StatusNotLoaded()})
	t.sv.s.Broadcast("thread/closed", protocol.ThreadIDNotification{ThreadID: t.id})
}

// beginUnloadLocked starts unloading t (gone idle, archived, deleted): no
// hold is granted any more, and t leaves the registry, recorded as being
// unloaded until gone is called (registry.unload). It unlocks t.mu, which
// must be held.
func (t *thread) beginUnloadLocked() (gone func()) {
	t.unloading = true
	gone = t.sv.threads.unload(t)
	t.mu.Unlock()
	if h := t.sv.unloadingHook; h != nil {
		h(t.id)
	}
	return gone
}

// hold keeps the thread from starting to unload until release is called,
// or reports false when its unload has started: the caller then waits for
// the unload and loads the thread again (heldThread). A thread closed
// otherwise (archived, deleted, the daemon stopping) is held as it is.
func (t *thread) hold() (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.unloading {
		return nil, false
	}
	t.holds++
	return func() {
		t.mu.Lock()
		t.holds--
		t.mu.Unlock()
	}, true
}

// shutdown stops the session (aborting a running turn) and closes the
// rollout. The subscribers get the session's last events, then last. It
// waits for their delivery until ctx ends (the rest is still delivered
// afterwards). A second call waits for the first to finish, until its
// own ctx ends.
func (t *thread) shutdown(ctx context.Context, last ...projection.Output) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		select {
		case <-t.stopped:
		case <-ctx.Done():
		}
		return
	}
	defer close(t.stopped)
	t.closed = true
	t.last = last
	t.stopUnloadTimerLocked()
	t.mu.Unlock()
	if err := t.sess.Shutdown(ctx); err != nil {
		t.log.Warn("session shutdown", zap.Error(err))
	}
	select {
	case <-t.deliverDone:
	case <-ctx.Done():
	}
	if t.rec != nil {
		if err := t.rec.Close(ctx); err != nil {
			t.log.Warn("closing the rollout", zap.Error(err))
		}
	}
}

// status returns the thread's status.
func (t *thread) status() protocol.ThreadStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.proj.Status()
}
