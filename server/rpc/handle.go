package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/agentd-dev/agentd/protocol"
	"go.uber.org/zap"
)

// handler is a registered method.
type handler struct {
	// serve decodes and gates raw params, then runs the method.
	serve func(ctx context.Context, r *Request, raw json.RawMessage) (any, error)
}

// Handle registers h for the client requests named method, replacing any
// earlier handler. initialize is the engine's own and cannot be
// registered.
//
// For a method of the protocol table, P must be the table's params type
// (protocol.Empty for a method without params) and R a pointer to its
// result type, or Handle panics: a mismatch is found when the daemon is
// built, never by a client.
// Params are decoded with protocol.DecodeParams (the reference's error
// texts; unknown fields ignored), then experimental gating applies, then
// h runs. For a method the table does not know (test hooks), params are
// decoded with encoding/json; P may be json.RawMessage to take them raw.
//
// h runs on its own goroutine, never on the read loop, so it may wait;
// ctx ends when the connection does. A returned *protocol.Error is sent as
// is; any other error becomes -32603 with its text. The result is encoded
// as JSON (nil, or a nil pointer, as {}).
func Handle[P, R any](s *Server, method string, h func(ctx context.Context, r *Request, p *P) (R, error)) {
	if method == "initialize" {
		panic("rpc: initialize is built in")
	}
	info, _ := protocol.Lookup(protocol.ClientRequest, method)
	if info != nil && info.NameOnly {
		panic("rpc: " + method + " is known by name only: give it params and result types in protocol/table.go first")
	}
	var serve func(ctx context.Context, r *Request, raw json.RawMessage) (any, error)
	if info != nil {
		checkTypes[P, R](info)
		serve = func(ctx context.Context, r *Request, raw json.RawMessage) (any, error) {
			p := new(P)
			if info.Params != nil {
				v, err := protocol.DecodeParams(info, raw)
				if err != nil {
					return nil, toInvalidRequest(err)
				}
				p = v.(*P)
			}
			if perr := r.conn.gateDecoded(info, raw); perr != nil {
				return nil, perr
			}
			return result(h(ctx, r, p))
		}
	} else {
		serve = func(ctx context.Context, r *Request, raw json.RawMessage) (any, error) {
			p := new(P)
			if len(raw) > 0 && !isNull(raw) {
				if err := json.Unmarshal(raw, p); err != nil {
					return nil, protocol.InvalidRequest("Invalid request: %v", err)
				}
			}
			return result(h(ctx, r, p))
		}
	}
	s.hmu.Lock()
	s.handlers[method] = &handler{serve: serve}
	s.hmu.Unlock()
}

// result boxes a typed result; a nil pointer is no result ({}).
func result[R any](res R, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if v := reflect.ValueOf(any(res)); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, nil
	}
	return res, nil
}

// checkTypes panics unless P and R (a pointer) are the protocol table's types for
// info.
func checkTypes[P, R any](info *protocol.MethodInfo) {
	p, r := reflect.TypeFor[P](), reflect.TypeFor[R]()
	wantP := info.Params
	if wantP == nil {
		wantP = reflect.TypeFor[protocol.Empty]()
	}
	if p != wantP {
		panic(fmt.Sprintf("rpc: %s takes %v params, not %v", info.Method, wantP, p))
	}
	if info.Result != nil && r != reflect.PointerTo(info.Result) {
		panic(fmt.Sprintf("rpc: %s returns *%v, not %v", info.Method, info.Result, r))
	}
}

// Request is a client request being handled: its connection, its trace
// context, and what is sent around its response. A handler uses it to
// order its response against other messages on the connection:
//
//   - Then and ThenBroadcast send notifications right after a result (not
//     after an error): thread/start's result, then thread/started.
//   - ResponseFirst makes everything queued on the connection from then on,
//     by anyone, follow the response: turn/start's result comes before the
//     turn's events, which the thread sends from another goroutine.
//
// The ordering is structural: the response's place is reserved in the
// connection's queue and filled when the handler returns (or panics). Its
// methods are safe for concurrent use.
type Request struct {
	conn   *Conn
	id     json.RawMessage
	method string
	trace  *traceContext
	// ctx is the handler's context, a child of the connection's;
	// cancel ends it (with ErrRequestCancelled for $/cancelRequest).
	ctx    context.Context
	cancel context.CancelCauseFunc
	// waiting is what the request counts against its connection's
	// MaxQueuedRequestBytes until it runs (0: it was not to wait).
	waiting int

	// mu guards the fields that follow.
	mu       sync.Mutex
	slot     *slot
	then     []outMsg
	thenAll  []Notification
	answered bool
	// claimed is set once the handler started, or once a cancellation
	// answered the request before it could.
	claimed bool
	// log is built on first use (Logger).
	log *zap.Logger
}

// Conn returns the connection the request came on.
func (r *Request) Conn() *Conn { return r.conn }

// Method returns the request's method.
func (r *Request) Method() string { return r.method }

// requestKey is the context key of the Request a handler's context
// belongs to.
type requestKey struct{}

// Logger returns the logger of the request whose handler ctx belongs to
// (Request.Logger), or fallback when ctx is not a handler's: code below
// a handler logs with the request's ids without being handed it.
func Logger(ctx context.Context, fallback *zap.Logger) *zap.Logger {
	if r, ok := ctx.Value(requestKey{}).(*Request); ok {
		return r.Logger()
	}
	return fallback
}

// Logger returns the logger for what is logged while handling the
// request: the connection's (conn) with the request's id (request) and
// method.
func (r *Request) Logger() *zap.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		r.log = r.conn.srv.log.WithLazy(append(r.conn.connFields(), logID(r.id), logMethod(r.method))...)
	}
	return r.log
}

// Trace returns the W3C trace context the request carried ("trace":
// {traceparent, tracestate}), or empty strings.
func (r *Request) Trace() (traceparent, tracestate string) {
	if r.trace == nil {
		return "", ""
	}
	return r.trace.Traceparent, r.trace.Tracestate
}

// ResponseFirst reserves the response's place in the connection's queue:
// whatever is queued on the connection after it, by any goroutine, is
// written after the response (and its Then notifications). The writer
// waits at the reserved place until the handler returns, so a handler
// must not, after calling it, wait for its own connection to take a
// message (it may queue them; they go after the response). Calling it
// again, or after the response, does nothing.
func (r *Request) ResponseFirst() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slot != nil || r.answered {
		return
	}
	// Reserving waits for room only while the queue is full of what was
	// queued before: nothing waits on this request yet.
	s, err := r.conn.out.reserve(context.Background())
	if !r.conn.outcome(err) {
		return // the connection is gone; the answer goes nowhere either
	}
	r.slot = s
}

// Then sends a notification on the request's connection right after its
// result, unless the client opted out of method. It is encoded now. It is
// not sent when the request ends in an error.
func (r *Request) Then(method string, params any) {
	if r.conn.OptedOut(method) {
		return
	}
	n, err := NewNotification(method, params)
	if err != nil {
		r.Logger().Error("dropping notification that cannot be encoded", zap.String("notification", method), zap.Error(err))
		return
	}
	r.mu.Lock()
	if !r.answered {
		r.then = append(r.then, n.m)
	}
	r.mu.Unlock()
}

// ThenBroadcast sends a notification to every initialized connection once
// the request's result is queued: on the request's own connection it comes
// after the result (after what other goroutines queued meanwhile, when the
// result's place was reserved). It is not sent when the request ends in
// an error.
func (r *Request) ThenBroadcast(method string, params any) {
	n, err := NewNotification(method, params)
	if err != nil {
		r.Logger().Error("dropping broadcast that cannot be encoded", zap.String("notification", method), zap.Error(err))
		return
	}
	r.mu.Lock()
	if !r.answered {
		r.thenAll = append(r.thenAll, n)
	}
	r.mu.Unlock()
}

// answer queues the response once: in its reserved place, or at the end
// of the queue; with the Then notifications when ok (a result).
func (r *Request) answer(msg outMsg, ok bool) {
	r.answerCtx(context.Background(), msg, ok)
}

// answerCtx is answer, waiting for room (on a connection that waits) only
// until ctx ends.
func (r *Request) answerCtx(ctx context.Context, msg outMsg, ok bool) {
	r.mu.Lock()
	if r.answered {
		r.mu.Unlock()
		return
	}
	r.answered = true
	msgs := []outMsg{msg}
	var all []Notification
	if ok {
		msgs = append(msgs, r.then...)
		all = r.thenAll
	}
	s := r.slot
	r.then, r.thenAll = nil, nil
	r.mu.Unlock()
	c := r.conn
	c.untrackOpen(r)
	if s != nil {
		c.out.fill(s, msgs)
	} else {
		c.outcome(c.out.pushAll(ctx, msgs))
	}
	for _, n := range all {
		c.srv.broadcast(n)
	}
}
