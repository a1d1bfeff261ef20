package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/scope"
	"go.uber.org/zap"
)

// dispatch handles one incoming message on the read loop.
func (c *Conn) dispatch(data []byte) {
	m, perr, answerTo := decodeMessage(data)
	if perr != nil {
		c.log.Debug("rejected message", zap.String("error", perr.Message))
		c.sendError(answerTo, perr)
		return
	}
	m.size = len(data)
	switch m.kind {
	case kindRequest:
		c.handleRequest(m)
	case kindNotification:
		c.handleNotification(m)
	case kindResponse:
		c.routeResponse(m)
	}
}

// handleNotification handles a client notification: `initialized` (the
// gate is the initialize request, not this notification: requests sent
// before it are served, as the reference does) and agentd's
// `$/cancelRequest`. Unknown notifications are ignored.
func (c *Conn) handleNotification(m inMessage) {
	if m.method == "initialized" {
		c.log.Debug("client sent initialized")
		return
	}
	if m.method == CancelMethod {
		c.handleCancel(m.params)
		return
	}
	c.log.Debug("ignoring client notification", logMethod(m.method))
}

// handleRequest gates a request and starts its handler. Everything here is
// quick and never waits, so reading goes on.
func (c *Conn) handleRequest(m inMessage) {
	m.arrived = time.Now()
	if m.method == "initialize" {
		// In order, on the read loop: the requests after it must see
		// its outcome.
		c.handleInitialize(m.id, m.params)
		return
	}
	if !c.Initialized() {
		c.srv.observeRequest(c, m.method, OutcomeRejected, 0)
		c.sendError(m.id, protocol.ErrNotInitialized)
		return
	}
	h, info := c.srv.lookup(m.method)
	if h == nil && info == nil {
		c.srv.observeRequest(c, m.method, OutcomeRejected, 0)
		c.sendError(m.id, protocol.UnknownMethod(m.method))
		return
	}
	// The scope before anything else about the request: a refusal does
	// not depend on its params, and no handler runs.
	if need := scope.Required(m.method); !c.Scope().Allows(need) {
		c.srv.observeRequest(c, m.method, OutcomeRejected, 0)
		c.log.Info("request refused by scope", logMethod(m.method), zap.Stringer("needs", need))
		c.sendError(m.id, scope.Deny(c.Scope(), m.method, ""))
		return
	}
	if h == nil {
		c.srv.observeRequest(c, m.method, OutcomeRejected, 0)
		// Validate first, so that clients see the same validation and
		// gating errors as they will once the method is implemented.
		if perr := c.gate(info, m.params); perr != nil {
			c.sendError(m.id, perr)
			return
		}
		c.sendError(m.id, notImplementedError(m.method))
		return
	}
	waiting, ok := c.srv.admit(c, m.size)
	if !ok {
		c.srv.observeRequest(c, m.method, OutcomeOverloaded, 0)
		c.sendError(m.id, protocol.ErrOverloaded)
		return
	}
	// Tracked from now, on the read loop: a $/cancelRequest read right
	// after it finds it, and one waiting its turn at the shutdown deadline
	// is answered too.
	r := c.newRequest(m)
	r.waiting = waiting
	if !c.trackOpen(r) {
		c.srv.finish(c, r)
		r.cancel(nil)
		r.answer(errorMsg(m.id, errGivenUp), false)
		return
	}
	if key := c.srv.orderKey(m.method, m.params); key != "" {
		c.serial.run(key, func() { c.runTracked(r, m, h) })
		return
	}
	go c.runTracked(r, m, h)
}

// lookup returns the handler for method (nil when none is registered) and
// its protocol description (nil for a method the protocol table does not
// know, such as the test hooks).
func (s *Server) lookup(method string) (*handler, *protocol.MethodInfo) {
	s.hmu.RLock()
	h := s.handlers[method]
	s.hmu.RUnlock()
	info, _ := protocol.Lookup(protocol.ClientRequest, method)
	return h, info
}

// notImplementedError answers a method the protocol has but agentd does
// not serve (yet): -32601, so that a client can tell it from a typo.
func notImplementedError(method string) *protocol.Error {
	return protocol.Errorf(protocol.CodeMethodNotFound, "`%s` is not implemented by agentd", protocol.Cut(method))
}

// queuedRequestOverhead is what a request waiting for its turn counts
// against MaxQueuedRequestBytes on top of its size: a goroutine waiting
// for a slot (its stack), or its place in a serial line, and its state.
const queuedRequestOverhead = 8 << 10

// admit admits a request of size bytes on c. One that finds the
// connection's or the server's in-flight limit reached waits for its
// turn (acquire), counting size+queuedRequestOverhead against the
// connection's MaxQueuedRequestBytes (returned as waiting); past that
// bound, or while the server drains, it is refused: answer -32001 now.
// Nothing is refused before: a burst of pipelined requests all run.
func (s *Server) admit(c *Conn, size int) (waiting int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return 0, false
	}
	if c.inflight >= s.lim.MaxInflightPerConnection || s.inflight >= s.lim.MaxInflight {
		if c.queued >= s.lim.MaxQueuedRequestBytes {
			return 0, false
		}
		waiting = size + queuedRequestOverhead
		c.queued += waiting
	}
	c.inflight++
	s.inflight++
	s.work.Add(1)
	c.handlers.Add(1)
	return waiting, true
}

// acquire waits for r's turn: an in-flight slot of its connection, then
// one of the server, in the order requests asked (a channel's waiting
// senders are served first come, first served). A free slot is taken at
// once, whatever r's context says, as a request that did not wait always
// ran. It reports false when r's context ended while it waited (cancelled
// by the client, stopped by the drain, or its connection ended). Either
// way r no longer counts as waiting.
func (s *Server) acquire(c *Conn, r *Request) bool {
	defer c.dequeued(r)
	if !take(c.slots, r.ctx) {
		return false
	}
	if !take(s.slots, r.ctx) {
		<-c.slots
		return false
	}
	return true
}

// take puts a token in slots: at once when there is room, otherwise when
// there is room before ctx ends (false).
func take(slots chan struct{}, ctx context.Context) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	select {
	case slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// dequeued ends what r counted as waiting.
func (c *Conn) dequeued(r *Request) {
	if r.waiting == 0 {
		return
	}
	c.mu.Lock()
	c.queued -= r.waiting
	c.mu.Unlock()
	r.waiting = 0
}

// releaseSlots returns the slots acquire took.
func (s *Server) releaseSlots(c *Conn) {
	<-s.slots
	<-c.slots
}

// finish ends a request admit admitted.
func (s *Server) finish(c *Conn, r *Request) {
	c.dequeued(r)
	c.mu.Lock()
	c.inflight--
	c.mu.Unlock()
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
	c.handlers.Done()
	s.work.Done()
}

// newRequest makes the Request of m, with its own context: a child of
// the connection's, which $/cancelRequest cancels alone, which the
// server's drain cancels for a Cancellable method, and which carries the
// request (for Logger).
func (c *Conn) newRequest(m inMessage) *Request {
	ctx, cancel := context.WithCancelCause(c.ctx)
	if c.srv.isCancellable(m.method) {
		// Registered here, before the handler can start: a request
		// admitted just before the drain began is stopped too (AfterFunc
		// runs at once on a drain already begun).
		stop := context.AfterFunc(c.srv.drain, func() { cancel(ErrShuttingDown) })
		cancelCtx := cancel
		cancel = func(cause error) {
			stop()
			cancelCtx(cause)
		}
	}
	r := &Request{conn: c, id: m.id, method: m.method, trace: m.trace, cancel: cancel}
	r.ctx = context.WithValue(ctx, requestKey{}, r)
	return r
}

// runTracked waits for r's turn (acquire), runs the handler of the
// tracked request r and answers, exactly once, whatever happens: a
// result, an error, or an internal error when the handler panics. The
// handler does not run when r was answered meanwhile: cancelled while it
// waited its turn, or given up at the shutdown deadline.
func (c *Conn) runTracked(r *Request, m inMessage, h *handler) {
	defer c.srv.finish(c, r)
	defer r.cancel(nil)
	if !c.srv.acquire(c, r) {
		// Its context ended while it waited: the client cancelled it (and
		// was answered), or the drain stopped it (a Cancellable method),
		// or the connection is gone.
		if r.claim() {
			r.answer(errorMsg(m.id, errGivenUp), false)
		}
		return
	}
	defer c.srv.releaseSlots(c)
	if c.isGivenUp() || !r.claim() {
		return
	}
	c.log.Debug("request started", logID(m.id), logMethod(m.method))
	defer func() {
		if p := recover(); p != nil {
			r.Logger().Error("handler panicked", zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			r.answer(errorMsg(m.id, protocol.Errorf(protocol.CodeInternalError, "internal error in %s", protocol.Cut(m.method))), false)
		}
	}()
	start := time.Now()
	result, err := h.serve(r.ctx, r, m.params)
	took := time.Since(start)
	outcome := OutcomeOK
	switch {
	case err != nil && Cancelled(r.ctx):
		// A handler that stopped says what it did (a *protocol.Error,
		// CancelledError); a bare context error says nothing more.
		outcome = OutcomeCancelled
		var perr *protocol.Error
		if !errors.As(err, &perr) {
			err = errCancelled
		}
	case err != nil && ShuttingDown(r.ctx):
		// Stopped by the drain: likewise, a bare context error says
		// only that the server is shutting down.
		outcome = OutcomeError
		var perr *protocol.Error
		if !errors.As(err, &perr) {
			err = errGivenUp
		}
	case err != nil:
		outcome = OutcomeError
	}
	c.log.Debug("request finished", logID(m.id), logMethod(m.method),
		zap.Duration("took", took), zap.String("outcome", outcome))
	c.srv.observeRequest(c, m.method, outcome, time.Since(m.arrived))
	if err != nil {
		r.answer(errorMsg(m.id, toProtocolError(err)), false)
		return
	}
	r.answer(c.resultMsg(m.id, result), true)
}

// gate applies experimental gating to a protocol method's request: the
// method itself, then its fields and enum values. Params are decoded
// (and their errors reported) before gating, in the reference's order:
// a decode error wins over a gating error.
func (c *Conn) gate(info *protocol.MethodInfo, raw json.RawMessage) *protocol.Error {
	if _, err := protocol.DecodeParams(info, raw); err != nil {
		return toInvalidRequest(err)
	}
	return c.gateDecoded(info, raw)
}

// gateDecoded is gate for params that decoded.
func (c *Conn) gateDecoded(info *protocol.MethodInfo, raw json.RawMessage) *protocol.Error {
	if c.Capabilities().ExperimentalAPI {
		return nil
	}
	if info.Experimental {
		return protocol.InvalidRequest("%s requires experimentalApi capability", info.Method)
	}
	if d := protocol.ExperimentalUse(info, raw); d != "" {
		return protocol.InvalidRequest("%s requires experimentalApi capability", d)
	}
	return nil
}

// toInvalidRequest converts a params decoding error to the wire: a
// *protocol.Error as is, anything else as -32600 with its text.
func toInvalidRequest(err error) *protocol.Error {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return protocol.InvalidRequest("Invalid request: %v", err)
}

// toProtocolError converts a handler error to the wire: a *protocol.Error
// as is, anything else as an internal error carrying its text.
func toProtocolError(err error) *protocol.Error {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return &protocol.Error{Code: protocol.CodeInternalError, Message: err.Error()}
}

// Ordering: the requests of a connection that must wait for each other.

// OrderKey names the requests of a connection that must be handled one
// after the other, in the order they arrived: requests with the same
// non-empty key wait for each other; "" runs at once. It runs on the read
// loop, on the raw params, and must be quick.
type OrderKey func(params json.RawMessage) string

// Order gives methods an ordering key. Requests of one connection with the
// same key (say, the same thread) are handled, and so answered, in the
// order received, as the reference handles them; the others run
// concurrently.
func Order(s *Server, key OrderKey, methods ...string) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	for _, m := range methods {
		s.orderKeys[m] = key
	}
}

// ByThread keys a request by its threadId param ("thread:<id>").
func ByThread(params json.RawMessage) string {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ThreadID == "" {
		return ""
	}
	return "thread:" + p.ThreadID
}

// Fixed returns an OrderKey that puts every request of its methods in one
// line (say, the config writes).
func Fixed(key string) OrderKey { return func(json.RawMessage) string { return key } }

// orderKey returns the ordering key of a request, "" for none.
func (s *Server) orderKey(method string, params json.RawMessage) string {
	s.hmu.RLock()
	key := s.orderKeys[method]
	s.hmu.RUnlock()
	if key == nil {
		return ""
	}
	return key(params)
}

// serialLine runs the requests of one key of one connection in turn.
type serialLine struct {
	queue []func()
}

// lines holds a connection's serial lines by key.
type lines struct {
	mu sync.Mutex
	by map[string]*serialLine
}

// trim drops the map of lines when it is empty (an idle connection keeps
// none).
func (l *lines) trim() {
	l.mu.Lock()
	if len(l.by) == 0 {
		l.by = nil
	}
	l.mu.Unlock()
}

// run runs fn now, on its own goroutine, when no request of key is
// running; otherwise after those that arrived before it.
func (l *lines) run(key string, fn func()) {
	l.mu.Lock()
	if l.by == nil {
		l.by = map[string]*serialLine{}
	}
	if line, busy := l.by[key]; busy {
		line.queue = append(line.queue, fn)
		l.mu.Unlock()
		return
	}
	line := &serialLine{}
	l.by[key] = line
	l.mu.Unlock()
	go func() {
		for next := fn; next != nil; {
			next()
			l.mu.Lock()
			if len(line.queue) == 0 {
				delete(l.by, key)
				next = nil
			} else {
				next, line.queue = line.queue[0], line.queue[1:]
			}
			l.mu.Unlock()
		}
	}()
}
