package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/scope"
	"go.uber.org/zap"
)

// ErrCancelled is a Call's error after Cancel.
var ErrCancelled = errors.New("server request cancelled")

// ErrReadScope is Request's error on a connection whose scope is read: it
// observes, so it is asked nothing (it gets the notifications).
var ErrReadScope = errors.New("a read-scope connection gets no server requests")

// Call is one server→client request: the only way the engine asks a
// client something. Request sends it; Done is closed once it has ended,
// by the client's answer, by Cancel, or by the connection ending; Result
// then says how. Its methods are safe for concurrent use.
type Call struct {
	c    *Conn
	id   int64
	done chan struct{}

	once   sync.Once
	result json.RawMessage
	err    error
}

// Request sends a server request on c and returns at once. Ids are
// integers counting from 0 on each connection. The call is registered
// before it is queued, so an answer can never arrive unknown; it is queued
// in order with everything else sent on c. Like Notify, it waits for room
// only on a connection that may wait (stdio, in-process). It fails with
// ErrConnClosed when the connection has ended, and with ErrReadScope on a
// connection that may only observe.
func (c *Conn) Request(method string, params any) (*Call, error) {
	if !c.Scope().Allows(scope.Operate) {
		return nil, ErrReadScope
	}
	call := &Call{c: c, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrConnClosed
	}
	call.id = c.nextCallID
	c.nextCallID++
	if c.calls == nil {
		c.calls = map[int64]*Call{}
	}
	c.calls[call.id] = call
	c.mu.Unlock()

	data, err := encodeRequest(call.id, method, params)
	if err != nil {
		call.Cancel()
		return nil, fmt.Errorf("server request %s: %w", method, err)
	}
	if !c.enqueue(context.Background(), outMsg{data: data}) {
		call.Cancel()
		return nil, ErrConnClosed
	}
	return call, nil
}

// ID returns the request's id on its connection.
func (call *Call) ID() int64 { return call.id }

// Conn returns the connection the request was sent on.
func (call *Call) Conn() *Conn { return call.c }

// Done is closed once the call has ended.
func (call *Call) Done() <-chan struct{} { return call.done }

// Result returns the client's result, or the call's error: a
// *protocol.Error when the client answered with one, ErrCancelled or
// ErrConnClosed. It is meaningful once Done is closed.
func (call *Call) Result() (json.RawMessage, error) {
	select {
	case <-call.done:
		return call.result, call.err
	default:
		return nil, errors.New("server request still pending")
	}
}

// Wait waits for the call to end and returns Result. When ctx ends first,
// the call is cancelled and ctx's error returned.
func (call *Call) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-call.done:
		return call.Result()
	case <-ctx.Done():
		call.Cancel()
		return nil, ctx.Err()
	}
}

// Cancel ends the call without an answer; one arriving later is ignored.
// It does nothing once the call has ended.
func (call *Call) Cancel() {
	call.c.mu.Lock()
	if call.c.calls[call.id] == call {
		delete(call.c.calls, call.id)
	}
	call.c.mu.Unlock()
	call.end(nil, ErrCancelled)
}

// end settles the call once.
func (call *Call) end(result json.RawMessage, err error) {
	call.once.Do(func() {
		call.result, call.err = result, err
		close(call.done)
	})
}

// routeResponse hands a client's answer to the call waiting for it.
// Answers to unknown or finished calls are ignored, as the reference does.
// It never blocks.
func (c *Conn) routeResponse(m inMessage) {
	id, ok := intID(m.id)
	if !ok {
		c.log.Debug("ignoring response with a non-integer id", zap.String("serverRequest", protocol.Cut(idText(m.id))))
		return
	}
	c.mu.Lock()
	call := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if call == nil {
		c.log.Debug("ignoring response to an unknown or finished server request", zap.Int64("serverRequest", id))
		return
	}
	if m.err != nil {
		var perr protocol.Error
		if err := json.Unmarshal(m.err, &perr); err != nil {
			perr = protocol.Error{Code: protocol.CodeInternalError, Message: fmt.Sprintf("malformed error from client: %s", m.err)}
		}
		call.end(nil, &perr)
		return
	}
	result := m.result
	if result == nil {
		result = json.RawMessage("null")
	}
	call.end(result, nil)
}

// PendingCalls reports how many server requests on c await an answer.
func (c *Conn) PendingCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}
