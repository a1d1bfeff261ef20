package server

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

// registry holds the loaded threads.
type registry struct {
	a *app
	// mu guards threads.
	mu      sync.Mutex
	threads map[string]*thread
}

func newRegistry(a *app) *registry {
	return &registry{a: a, threads: map[string]*thread{}}
}

func (r *registry) get(id string) *thread {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.threads[id]
}

func (r *registry) add(t *thread) {
	r.mu.Lock()
	r.threads[t.id] = t
	r.mu.Unlock()
}

func (r *registry) remove(t *thread) {
	r.mu.Lock()
	if r.threads[t.id] == t {
		delete(r.threads, t.id)
	}
	r.mu.Unlock()
}

// ids returns the loaded thread ids, sorted.
func (r *registry) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.threads))
	for id := range r.threads {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func (r *registry) all() []*thread {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*thread, 0, len(r.threads))
	for _, t := range r.threads {
		out = append(out, t)
	}
	return out
}

// waitIdle waits until no loaded thread runs a turn, or ctx ends.
func (r *registry) waitIdle(ctx context.Context) {
	for _, t := range r.all() {
		for {
			st, changed := t.sess.Status()
			if st == core.StatusIdle || st == core.StatusShutdown {
				break
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}
}

// closeAll shuts every loaded thread down (shutdown of the daemon).
func (r *registry) closeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range r.all() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.shutdown(ctx)
		}()
	}
	wg.Wait()
}

// thread is a loaded thread: a core session, its rollout, its projection
// and its subscribers. A pump goroutine reads the session's events and
// projects them; the outputs are delivered in order to the subscribers.
//
// Lock discipline: mu guards the thread's state and is never held while
// waiting for a client or for the core. Outputs are queued under mu in the
// order the projection made them (outq), and delivered outside it by
// whoever holds sendMu, one deliverer at a time, in queue order. A slow
// client therefore holds up only this thread's deliveries, never its
// state (thread/read, resume, answers from other clients).
type thread struct {
	a    *app
	id   string
	sess *core.Session
	rec  *rollout.Recorder // nil for an ephemeral thread
	log  *zap.Logger
	// rawEvents: started with experimentalRawEvents.
	rawEvents bool

	// sendMu is held by the one goroutine delivering outq.
	sendMu sync.Mutex

	// mu guards everything below.
	mu   sync.Mutex
	cond *sync.Cond
	meta threadMeta
	proj *projection.Thread
	// subs is the subscribers, replaced (never changed in place) on every
	// change, so a deliverer can use a snapshot without mu.
	subs []*Conn
	// hooked records the connections whose close unsubscribes them.
	hooked map[*Conn]bool
	// outq holds outputs waiting for delivery, in order.
	outq []delivery
	// reqs tracks each pending server request, by call id.
	reqs map[string]*serverReq
	// holds > 0 stops the pump while a handler answers first (turn/start's
	// result goes out before turn/started).
	holds int
	// unloadTimer fires when the thread has had no activity for the
	// unload delay.
	unloadTimer *time.Timer
	turnRunning bool
	closed      bool
	pumpDone    chan struct{}
}

// delivery is one output to deliver; only, when set, restricts it to one
// connection (a request re-sent to a late subscriber).
type delivery struct {
	out  projection.Output
	only *Conn
}

// serverReq is a server request sent to the subscribers: the id it got on
// each connection, and done, closed once it is settled.
type serverReq struct {
	ids  map[*Conn]int64
	done chan struct{}
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
}

func newThread(a *app, id string, sess *core.Session, rec *rollout.Recorder, meta threadMeta, status protocol.ThreadStatus) *thread {
	t := &thread{
		a:        a,
		id:       id,
		sess:     sess,
		rec:      rec,
		log:      a.log.With(zap.String("thread", id)),
		meta:     meta,
		proj:     projection.NewThread(id, status),
		hooked:   map[*Conn]bool{},
		reqs:     map[string]*serverReq{},
		pumpDone: make(chan struct{}),
	}
	t.cond = sync.NewCond(&t.mu)
	t.mu.Lock()
	t.armUnloadLocked()
	t.mu.Unlock()
	go t.pump()
	return t
}

// pump projects the session's events and delivers them.
func (t *thread) pump() {
	defer close(t.pumpDone)
	ctx := context.Background()
	for {
		ev, err := t.sess.Events().Next(ctx)
		if err != nil {
			return
		}
		t.mu.Lock()
		for t.holds > 0 {
			t.cond.Wait()
		}
		t.observe(ev)
		t.queueLocked(t.proj.Apply(ev)...)
		t.mu.Unlock()
		t.flush()
	}
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
		t.turnRunning = true
	case core.TurnComplete, core.TurnAborted:
		t.meta.updatedAt = ev.Time
		t.turnRunning = false
		t.armUnloadLocked()
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

// hold stops delivery until the returned function is called; a handler
// uses it so that its result reaches the client before the events it
// caused. The release also happens on its own after a few seconds, so a
// response that is never written cannot stall the thread.
func (t *thread) hold() (release func()) {
	t.mu.Lock()
	t.holds++
	t.mu.Unlock()
	var once sync.Once
	var timer *time.Timer
	rel := func() {
		once.Do(func() {
			timer.Stop()
			t.mu.Lock()
			t.holds--
			t.cond.Broadcast()
			t.mu.Unlock()
		})
	}
	timer = time.AfterFunc(5*time.Second, rel)
	return rel
}

// queueLocked queues outputs for delivery. A server request gets its
// tracking entry now, so an answer is recognised however fast it comes.
func (t *thread) queueLocked(outs ...projection.Output) {
	for _, o := range outs {
		if o.Request != nil {
			t.reqs[o.Request.CallID] = &serverReq{ids: map[*Conn]int64{}, done: make(chan struct{})}
		}
		t.outq = append(t.outq, delivery{out: o})
	}
}

// flush delivers the queued outputs, in order. mu must not be held.
func (t *thread) flush() {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	for {
		t.mu.Lock()
		batch, subs := t.outq, t.subs
		t.outq = nil
		t.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, d := range batch {
			t.deliver(d, subs)
		}
	}
}

// deliver sends one output to the subscribers. Only the deliverer (the
// holder of sendMu) calls it; it may wait for a client.
func (t *thread) deliver(d delivery, subs []*Conn) {
	o := d.out
	switch {
	case o.Request != nil:
		t.sendRequest(o.Request, subs, d.only)
	case o.Resolved != nil:
		t.resolved(o.Resolved.CallID, subs)
	default:
		// Encoded once for every subscriber.
		m, err := newNotification(o.Method, o.Params, time.Now().UnixMilli())
		if err != nil {
			t.log.Error("dropping a notification that cannot be encoded", zap.String("method", o.Method), zap.Error(err))
			return
		}
		for _, c := range subs {
			if o.Audience == projection.RawEvents && !(t.rawEvents && c.Capabilities().ExperimentalAPI) {
				continue
			}
			if !c.OptedOut(o.Method) {
				c.enqueue(context.Background(), m)
			}
		}
	}
}

// sendRequest sends a server request to the subscribers (or only to one,
// re-sending to a late subscriber). The first answer wins.
func (t *thread) sendRequest(r *projection.Pending, subs []*Conn, only *Conn) {
	for _, c := range subs {
		if only != nil && c != only {
			continue
		}
		t.mu.Lock()
		sr := t.reqs[r.CallID]
		_, sent := sr.idOf(c)
		t.mu.Unlock()
		if sr == nil || sent {
			continue // settled already, or already sent to c
		}
		id, ch, err := c.startCall(r.Method, r.Params)
		if err != nil {
			continue
		}
		t.mu.Lock()
		if t.reqs[r.CallID] != sr {
			t.mu.Unlock()
			c.forget(id)
			continue
		}
		sr.ids[c] = id
		t.mu.Unlock()
		go t.awaitAnswer(r, sr, c, id, ch)
	}
}

func (sr *serverReq) idOf(c *Conn) (int64, bool) {
	if sr == nil {
		return 0, false
	}
	id, ok := sr.ids[c]
	return id, ok
}

// awaitAnswer waits for one connection's answer to a request. The first
// answer settles it: serverRequest/resolved goes out, then the core gets
// the answer.
func (t *thread) awaitAnswer(r *projection.Pending, sr *serverReq, c *Conn, id int64, ch <-chan callResult) {
	var res callResult
	select {
	case res = <-ch:
	case <-sr.done:
		return
	case <-c.Done():
		return
	case <-t.pumpDone:
		return
	}
	t.mu.Lock()
	if got, ok := sr.idOf(c); t.reqs[r.CallID] != sr || !ok || got != id {
		t.mu.Unlock()
		return // settled, or no longer sent to c
	}
	outs, ok := t.proj.Answered(r.CallID)
	if !ok {
		t.mu.Unlock()
		return
	}
	t.queueLocked(outs...)
	t.mu.Unlock()
	op, err := r.Decode(res.result, res.err)
	if err != nil {
		t.log.Warn("malformed answer to a server request", zap.String("method", r.Method), zap.Error(err))
		op, _ = r.Decode(nil, err)
	}
	t.flush()
	if _, _, err := t.sess.Submit(context.Background(), op); err != nil {
		t.log.Warn("could not hand an answer to the core", zap.Error(err))
	}
}

// resolved sends serverRequest/resolved for a request to each subscriber
// it was sent to, with that connection's request id; late answers are
// then ignored.
func (t *thread) resolved(callID string, subs []*Conn) {
	t.mu.Lock()
	sr := t.reqs[callID]
	delete(t.reqs, callID)
	t.mu.Unlock()
	if sr == nil {
		return
	}
	close(sr.done)
	for _, c := range subs {
		id, ok := sr.ids[c]
		if !ok {
			continue
		}
		c.forget(id)
		c.Notify("serverRequest/resolved", protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: protocol.IntID(id)})
	}
}

// subscribe adds c as a subscriber and re-sends it the requests still
// pending. It reports whether c was already subscribed.
func (t *thread) subscribe(c *Conn) bool {
	was := t.subscribeQuiet(c)
	t.replayPending(c)
	return was
}

// subscribeQuiet adds c as a subscriber without re-sending anything.
func (t *thread) subscribeQuiet(c *Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Contains(t.subs, c) {
		return true
	}
	t.subs = append(slices.Clip(t.subs), c)
	t.armUnloadLocked()
	if !t.hooked[c] {
		t.hooked[c] = true
		c.OnClose(func() {
			t.unsubscribe(c)
			t.mu.Lock()
			delete(t.hooked, c)
			t.mu.Unlock()
		})
	}
	return false
}

// replayPending sends c the server requests still waiting for an answer,
// in the order they were made.
func (t *thread) replayPending(c *Conn) {
	t.mu.Lock()
	if !slices.Contains(t.subs, c) {
		t.mu.Unlock()
		return
	}
	for _, r := range t.proj.PendingRequests() {
		t.outq = append(t.outq, delivery{out: projection.Output{Request: r}, only: c})
	}
	t.mu.Unlock()
	t.flush()
}

// unsubscribe removes c; it reports whether c was subscribed.
func (t *thread) unsubscribe(c *Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := slices.Index(t.subs, c)
	if i < 0 {
		return false
	}
	t.subs = slices.Delete(slices.Clone(t.subs), i, i+1)
	for _, sr := range t.reqs {
		if id, ok := sr.ids[c]; ok {
			c.forget(id)
			delete(sr.ids, c)
		}
	}
	t.armUnloadLocked()
	return true
}

// observedUnloadFactor stretches the unload delay of a thread that still
// has subscribers but no activity: a connection that only watches keeps a
// thread loaded for a long while, never forever (a later turn/start loads
// it again).
const observedUnloadFactor = 8

// armUnloadLocked (re)starts the unload timer of an idle thread: the
// unload delay without subscribers, observedUnloadFactor times it with.
// Activity (a turn, a subscriber coming or going) re-arms it.
func (t *thread) armUnloadLocked() {
	t.stopUnloadTimerLocked()
	if t.closed || t.turnRunning {
		return
	}
	delay := t.a.cfg.Server.ThreadUnloadDelay
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
	if st, _ := t.sess.Status(); st != core.StatusIdle {
		// A turn the pump has not seen start yet: try again later.
		t.armUnloadLocked()
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.a.threads.remove(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.shutdown(ctx)
	t.a.s.Broadcast("thread/status/changed", protocol.ThreadStatusChangedNotification{ThreadID: t.id, Status: protocol.StatusNotLoaded()})
	t.a.s.Broadcast("thread/closed", protocol.ThreadIDNotification{ThreadID: t.id})
}

// shutdown stops the session (aborting a running turn), waits for its
// last events to be delivered, and closes the rollout.
func (t *thread) shutdown(ctx context.Context) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.stopUnloadTimerLocked()
	t.mu.Unlock()
	if err := t.sess.Shutdown(ctx); err != nil {
		t.log.Warn("session shutdown", zap.Error(err))
	}
	select {
	case <-t.pumpDone:
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

// notifySubscribers sends a notification to every subscriber, after
// everything queued before it.
func (t *thread) notifySubscribers(method string, params any) {
	t.mu.Lock()
	t.queueLocked(projection.Output{Method: method, Params: params})
	t.mu.Unlock()
	t.flush()
}
