package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"go.uber.org/zap"
)

// HandlerFunc serves one client request. params is what
// protocol.DecodeParams returned for the method (a pointer to its params
// struct), or the raw json.RawMessage for a method the protocol table does
// not describe. A returned *protocol.Error is sent as is; any other error
// becomes -32603 with its text. The result is encoded as JSON (nil as {}).
//
// Handlers run on their own goroutine, never on the read loop, so they may
// make server requests (Conn.Call) and wait. ctx is cancelled when the
// connection ends.
type HandlerFunc func(ctx context.Context, c *Conn, params any) (any, error)

// dispatch handles one incoming message on the read loop.
func (c *Conn) dispatch(data []byte) {
	m, perr, answerTo := decodeMessage(data)
	if perr != nil {
		c.log.Debug("rejected message", zap.String("error", perr.Message))
		c.sendError(answerTo, perr)
		return
	}
	switch m.kind {
	case kindRequest:
		c.handleRequest(m)
	case kindNotification:
		c.handleNotification(m)
	case kindResponse:
		c.routeResponse(m)
	}
}

// handleNotification handles a client notification. Only `initialized`
// means anything; the gate is the initialize request, not this
// notification (requests sent before it are served, as the reference
// does). Unknown notifications are ignored.
func (c *Conn) handleNotification(m inMessage) {
	if m.method == "initialized" {
		c.log.Debug("client sent initialized")
		return
	}
	c.log.Debug("ignoring client notification", zap.String("method", m.method))
}

// handleRequest gates a request and starts its handler. Everything here is
// quick and never waits, so reading goes on.
func (c *Conn) handleRequest(m inMessage) {
	if m.method == "initialize" {
		// In order, on the read loop: the requests after it must see
		// its outcome.
		c.handleInitialize(m.id, m.params)
		return
	}
	if !c.Initialized() {
		c.sendError(m.id, protocol.ErrNotInitialized)
		return
	}
	h, info := c.srv.lookup(m.method)
	if h == nil {
		if info == nil {
			c.sendError(m.id, unknownMethodError(m.method))
			return
		}
		// Validate first, so that clients see the same validation and
		// gating errors as they will once the method is implemented.
		if _, perr := c.decodeParams(m, info); perr != nil {
			c.sendError(m.id, perr)
			return
		}
		c.sendError(m.id, notImplementedError(m.method))
		return
	}
	if !c.srv.admit(c) {
		c.sendError(m.id, protocol.ErrOverloaded)
		return
	}
	c.log.Debug("request started", zap.String("method", m.method), zap.ByteString("id", m.id))
	go c.runHandler(m, h, info)
}

// runHandler decodes and gates params, runs the handler and answers.
func (c *Conn) runHandler(m inMessage, h HandlerFunc, info *protocol.MethodInfo) {
	defer c.srv.release(c)
	rs := &requestState{conn: c, trace: m.trace}
	answered := false
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", zap.String("method", m.method), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			if !answered {
				c.sendError(m.id, protocol.Errorf(protocol.CodeInternalError, "internal error in %s", m.method))
			}
		}
	}()

	params, perr := c.decodeParams(m, info)
	if perr != nil {
		c.sendError(m.id, perr)
		return
	}
	ctx := context.WithValue(c.ctx, requestStateKey{}, rs)
	start := time.Now()
	result, err := h(ctx, c, params)
	c.log.Debug("request finished", zap.String("method", m.method), zap.ByteString("id", m.id),
		zap.Duration("took", time.Since(start)), zap.Bool("ok", err == nil))
	if err != nil {
		answered = true
		c.sendError(m.id, toProtocolError(err))
		rs.finish(false)
		return
	}
	// The result and what its handler sends after it leave together. The
	// after-response functions run even when the connection is gone (what
	// they send then goes nowhere), so that what they release is released.
	c.out.hold()
	defer c.out.unhold()
	c.sendResult(m.id, result)
	answered = true
	rs.finish(true)
}

// decodeParams decodes params through the protocol table, then applies
// experimental gating, in the reference's order: a decode error wins over
// a gating error.
func (c *Conn) decodeParams(m inMessage, info *protocol.MethodInfo) (any, *protocol.Error) {
	if info == nil {
		return m.params, nil
	}
	params, err := protocol.DecodeParams(info, m.params)
	if err != nil {
		return nil, toInvalidRequest(err)
	}
	if !c.Capabilities().ExperimentalAPI {
		if info.Experimental {
			return nil, protocol.InvalidRequest("%s requires experimentalApi capability", info.Method)
		}
		if d := protocol.ExperimentalUse(info, m.params); d != "" {
			return nil, protocol.InvalidRequest("%s requires experimentalApi capability", d)
		}
	}
	return params, nil
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

// routeResponse hands a client's answer to the server request waiting for
// it. Answers to unknown or finished requests are ignored, as the
// reference does. It never blocks: each waiter has a one-slot channel.
func (c *Conn) routeResponse(m inMessage) {
	id, ok := intID(m.id)
	if !ok {
		c.log.Debug("ignoring response with a non-integer id", zap.ByteString("id", m.id))
		return
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch == nil {
		c.log.Debug("ignoring response to an unknown or finished server request", zap.Int64("id", id))
		return
	}
	res := callResult{result: m.result}
	if m.err != nil {
		var perr protocol.Error
		if err := json.Unmarshal(m.err, &perr); err != nil {
			perr = protocol.Error{Code: protocol.CodeInternalError, Message: fmt.Sprintf("malformed error from client: %s", m.err)}
		}
		res.err = &perr
	} else if res.result == nil {
		res.result = json.RawMessage("null")
	}
	ch <- res
}

// requestStateKey carries a handler's *requestState in its context.
type requestStateKey struct{}

// requestState collects what a handler asked to run after its response.
type requestState struct {
	conn  *Conn
	trace *traceContext
	// after and done are only touched by the handler's goroutine and the
	// functions it calls, but AfterResponse may be called from helpers on
	// other goroutines, so they are guarded.
	mu    sync.Mutex
	after []func()
	done  bool
}

// finish runs the after-response functions once the response is queued
// (only when a result, not an error, was sent).
func (rs *requestState) finish(ran bool) {
	rs.mu.Lock()
	fns := rs.after
	rs.after = nil
	rs.done = true
	rs.mu.Unlock()
	if !ran {
		return
	}
	for _, fn := range fns {
		fn()
	}
}

// TraceContext returns the W3C trace context the request whose handler
// context is ctx carried ("trace": {traceparent, tracestate}), or empty
// strings.
func TraceContext(ctx context.Context) (traceparent, tracestate string) {
	rs, ok := ctx.Value(requestStateKey{}).(*requestState)
	if !ok || rs.trace == nil {
		return "", ""
	}
	return rs.trace.Traceparent, rs.trace.Tracestate
}

// AfterResponse arranges for fn to run right after the response to the
// request whose handler context is ctx has been queued on c, and only if
// that response is a result. Anything fn sends on c is therefore written
// after the result (the reference sends thread/started after the
// thread/start result). Called outside a handler of c, or after the
// response was sent, fn runs at once.
func (c *Conn) AfterResponse(ctx context.Context, fn func()) {
	rs, ok := ctx.Value(requestStateKey{}).(*requestState)
	if !ok || rs.conn != c {
		fn()
		return
	}
	rs.mu.Lock()
	if rs.done {
		rs.mu.Unlock()
		fn()
		return
	}
	rs.after = append(rs.after, fn)
	rs.mu.Unlock()
}
