package server

import (
	"context"
	"encoding/json"
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
// and its subscribers. A pump goroutine reads the session's events,
// projects them and fans the outputs out, in order, to the subscribers.
type thread struct {
	a    *app
	id   string
	sess *core.Session
	rec  *rollout.Recorder // nil for an ephemeral thread
	log  *zap.Logger
	// rawEvents: started with experimentalRawEvents.
	rawEvents bool

	// mu guards everything below. Outputs are delivered with mu held, so
	// every subscriber sees them in the same order.
	mu   sync.Mutex
	cond *sync.Cond
	meta threadMeta
	proj *projection.Thread
	subs map[*Conn]*subscriber
	// reqs tracks, per pending server request (by call id), the request
	// id it got on each connection it was sent to.
	reqs map[string]map[*Conn]int64
	// holds > 0 stops delivery while a handler answers first (turn/start's
	// result goes out before turn/started).
	holds int
	// unloadTimer fires when the thread has had no subscriber and no
	// activity for the unload delay.
	unloadTimer *time.Timer
	turnRunning bool
	closed      bool
	pumpDone    chan struct{}
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

type subscriber struct {
	conn *Conn
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
		subs:     map[*Conn]*subscriber{},
		reqs:     map[string]map[*Conn]int64{},
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
		t.deliverLocked(t.proj.Apply(ev))
		t.mu.Unlock()
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
	rel := func() {
		once.Do(func() {
			t.mu.Lock()
			t.holds--
			t.cond.Broadcast()
			t.mu.Unlock()
		})
	}
	time.AfterFunc(5*time.Second, rel)
	return rel
}

// deliverLocked sends outputs to the subscribers, in order.
func (t *thread) deliverLocked(outs []projection.Output) {
	for _, o := range outs {
		switch {
		case o.Request != nil:
			t.sendRequestLocked(o.Request, nil)
		case o.Resolved != nil:
			t.resolvedLocked(o.Resolved.CallID)
		default:
			// Encoded once for every subscriber.
			m, err := newNotification(o.Method, o.Params, time.Now().UnixMilli())
			if err != nil {
				t.log.Error("dropping a notification that cannot be encoded", zap.String("method", o.Method), zap.Error(err))
				continue
			}
			for c := range t.subs {
				if o.Audience == projection.RawEvents && !(t.rawEvents && c.Capabilities().ExperimentalAPI) {
					continue
				}
				if !c.OptedOut(o.Method) {
					c.enqueue(context.Background(), m)
				}
			}
		}
	}
}

// sendRequestLocked sends a server request to every subscriber (or only
// to conn, when re-sending to a late subscriber). The first answer wins.
func (t *thread) sendRequestLocked(r *projection.Pending, only *Conn) {
	ids := t.reqs[r.CallID]
	if ids == nil {
		ids = map[*Conn]int64{}
		t.reqs[r.CallID] = ids
	}
	for c := range t.subs {
		if only != nil && c != only {
			continue
		}
		if _, sent := ids[c]; sent {
			continue
		}
		id, ch, err := c.startCall(r.Method, r.Params)
		if err != nil {
			continue
		}
		ids[c] = id
		go t.awaitAnswer(r, c, id, ch)
	}
}

// awaitAnswer waits for one connection's answer to a request.
func (t *thread) awaitAnswer(r *projection.Pending, c *Conn, id int64, ch <-chan callResult) {
	var res callResult
	select {
	case res = <-ch:
	case <-c.Done():
		return
	case <-t.pumpDone:
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reqs[r.CallID][c] != id {
		return // settled already
	}
	outs, ok := t.proj.Answered(r.CallID)
	if !ok {
		return
	}
	op, err := r.Decode(res.result, res.err)
	if err != nil {
		t.log.Warn("malformed answer to a server request", zap.String("method", r.Method), zap.Error(err))
		op, _ = r.Decode(nil, err)
	}
	t.deliverLocked(outs)
	if _, _, err := t.sess.Submit(context.Background(), op); err != nil {
		t.log.Warn("could not hand an answer to the core", zap.Error(err))
	}
}

// resolvedLocked sends serverRequest/resolved for a request to each
// connection it was sent to, with that connection's request id; late
// answers are then ignored.
func (t *thread) resolvedLocked(callID string) {
	ids := t.reqs[callID]
	delete(t.reqs, callID)
	conns := make([]*Conn, 0, len(ids))
	for c := range ids {
		conns = append(conns, c)
	}
	sort.Slice(conns, func(i, j int) bool { return conns[i].ID() < conns[j].ID() })
	for _, c := range conns {
		c.forget(ids[c])
		if _, still := t.subs[c]; !still {
			continue
		}
		c.Notify("serverRequest/resolved", protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: protocol.IntID(ids[c])})
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
	if _, ok := t.subs[c]; ok {
		return true
	}
	t.subs[c] = &subscriber{conn: c}
	t.armUnloadLocked()
	c.OnClose(func() { t.unsubscribe(c) })
	return false
}

// replayPending sends c the server requests still waiting for an answer,
// in the order they were made.
func (t *thread) replayPending(c *Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.subs[c]; !ok {
		return
	}
	for _, r := range t.proj.PendingRequests() {
		t.sendRequestLocked(r, c)
	}
}

// unsubscribe removes c; it reports whether c was subscribed.
func (t *thread) unsubscribe(c *Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.subs[c]; !ok {
		return false
	}
	delete(t.subs, c)
	for _, ids := range t.reqs {
		if id, ok := ids[c]; ok {
			c.forget(id)
			delete(ids, c)
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

// notifySubscribers sends a notification to every subscriber.
func (t *thread) notifySubscribers(method string, params any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.subs {
		c.Notify(method, params)
	}
}

var _ = json.Marshal
