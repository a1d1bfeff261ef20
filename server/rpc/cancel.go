package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agentd-dev/agentd/protocol"
	"go.uber.org/zap"
)

// CancelMethod is the client notification that cancels one of its requests
// in flight: {"id": <request id>}. The reference has no such notification;
// agentd takes the Language Server Protocol's name and shape.
const CancelMethod = "$/cancelRequest"

// Cancellable lets $/cancelRequest stop the running handlers of methods:
// their contexts are cancelled (with ErrRequestCancelled). So does a
// shutdown, as soon as the server starts draining (with ErrShuttingDown),
// rather than at the deadline. A method is registered so when its
// handler stops cleanly midway and answers what it did. Any request may
// be cancelled while it waits its turn (it then never runs); a running request of another method ignores the cancellation and
// answers as usual, since stopping it halfway could leave the client
// unsure of its effect (a turn started, but the request failed).
func Cancellable(s *Server, methods ...string) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	for _, m := range methods {
		s.cancellable[m] = true
	}
}

// isCancellable reports whether method's running handlers may be
// cancelled.
func (s *Server) isCancellable(method string) bool {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	return s.cancellable[method]
}

// ErrRequestCancelled is the cause of a request context the client
// cancelled with CancelMethod (context.Cause). A handler that stops for it
// answers with CancelledError, saying what it had done.
var ErrRequestCancelled = errors.New("request cancelled by the client")

// ErrShuttingDown is the cause of a Cancellable request's context when
// the server starts draining (Shutdown): its handler stops and answers
// what it did before the server exits. Its text is the answer of a
// handler that says nothing more.
var ErrShuttingDown = errors.New("the server is shutting down")

// ShuttingDown reports whether ctx, a handler's context, ended because
// the server shuts down.
func ShuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShuttingDown)
}

// Cancelled reports whether ctx, a handler's context, ended because the
// client cancelled the request (rather than because the connection closed
// or the server shut down).
func Cancelled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrRequestCancelled)
}

// CancelledError is the answer to a cancelled request, -32800 with the
// message (say, what was done before it stopped).
func CancelledError(format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeRequestCancelled, format, args...)
}

// errCancelledWaiting answers a request cancelled before its handler ran
// (it was waiting its turn behind another one): nothing was done.
var errCancelledWaiting = CancelledError("Request cancelled before it started")

// errCancelled answers a cancelled request whose handler stopped without
// saying what it had done.
var errCancelled = CancelledError("Request cancelled")

// cancelParams are CancelMethod's params.
type cancelParams struct {
	ID json.RawMessage `json:"id"`
}

// handleCancel cancels the requests in flight on c with the id params
// name. An unknown or finished id, or params that name none, are ignored,
// as the Language Server Protocol asks: the request may have been
// answered while the notification was on its way.
func (c *Conn) handleCancel(params json.RawMessage) {
	var p cancelParams
	if err := json.Unmarshal(params, &p); err != nil || !validID(p.ID) {
		c.log.Debug("ignoring "+CancelMethod+" without a request id", zap.String("params", protocol.Cut(string(params))))
		return
	}
	key := idKey(p.ID)
	c.mu.Lock()
	var hits []*Request
	for r := range c.open {
		if idKey(r.id) == key {
			hits = append(hits, r)
		}
	}
	c.mu.Unlock()
	if len(hits) == 0 {
		c.log.Debug("ignoring "+CancelMethod+" for no request in flight", logID(p.ID))
		return
	}
	for _, r := range hits {
		r.cancelByClient()
	}
}

// cancelByClient cancels r. A request whose handler has not started (it
// waits its turn) is answered now and its handler never runs; a running
// one of a Cancellable method has its context cancelled, and its handler
// decides the answer; another running one goes on.
func (r *Request) cancelByClient() {
	switch {
	case r.claim():
		r.Logger().Debug("request cancelled before it started")
		r.cancel(ErrRequestCancelled)
		r.conn.srv.observeRequest(r.conn, r.method, OutcomeCancelled, 0)
		r.answer(errorMsg(r.id, errCancelledWaiting), false)
	case r.conn.srv.isCancellable(r.method):
		r.Logger().Debug("request cancelled while running")
		r.cancel(ErrRequestCancelled)
	default:
		r.Logger().Debug("ignoring " + CancelMethod + ": the request is running and cannot be stopped midway")
	}
}

// claim marks r as started, once: true for the first caller, which then
// either runs the handler or answers that it was cancelled.
func (r *Request) claim() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.claimed {
		return false
	}
	r.claimed = true
	return true
}

// idKey is a request id as a lookup key: integers by value, strings by
// their text; an integer never equals a string.
func idKey(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return "n" + strconv.FormatInt(n, 10)
	}
	return "r" + string(raw)
}

// idText is a request id for logs: an integer's digits, a string's text.
func idText(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}
