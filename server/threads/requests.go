package threads

import (
	"context"
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// This file is how a thread's server requests (approvals, questions,
// client tool calls) reach its subscribers and come back. It is the same
// for every kind of request. A thread has one table of them, its
// projection's: projection decides when a request is made, answered and
// resolved, and turns an answer into a core Op; each entry also carries
// its route, where the request went, which this file keeps. The engine
// only correlates ids on each connection (rpc.Call).
//
//   - a request goes to every subscriber, with that connection's own id,
//     and to a connection that subscribes later (replay on resume);
//   - the first answer wins: it becomes the core's Op, and the others'
//     calls are withdrawn;
//   - serverRequest/resolved goes to every connection the request
//     reached, whether it was answered or settled by a turn transition;
//   - a connection that unsubscribes may still answer the requests it
//     was sent (as in the reference), and is told when each is resolved;
//     a connection that closes answers nothing more.

// route is where one server request was sent: its call on each
// connection. It is kept in the request's projection.Pending.Route and
// guarded by the thread's mu.
type route struct {
	calls map[*rpc.Conn]*rpc.Call
}

// routeOf returns r's route (nil before it was sent anywhere).
func routeOf(r *projection.Pending) *route {
	rt, _ := r.Route.(*route)
	return rt
}

// forgetConnLocked drops c, which closed, from the routes of the requests
// still waiting: it answers nothing more and is told nothing more, and the
// thread keeps no reference to it. t.mu must be held.
func (t *thread) forgetConnLocked(c *rpc.Conn) {
	for _, r := range t.proj.Requests() {
		if rt := routeOf(r); rt != nil {
			if call, ok := rt.calls[c]; ok {
				call.Cancel()
				delete(rt.calls, c)
			}
		}
	}
}

// cancel withdraws the request from every connection.
func (rt *route) cancel() {
	for c, call := range rt.calls {
		call.Cancel()
		delete(rt.calls, c)
	}
}

// sendRequest sends a server request to the subscribers (or only to one:
// a replay to a late subscriber), skipping those it already reached. Only
// the deliverer calls it.
func (t *thread) sendRequest(r *projection.Pending, subs []*rpc.Conn, only *rpc.Conn) {
	for _, c := range subs {
		if only != nil && c != only {
			continue
		}
		t.mu.Lock()
		rt := routeOf(r)
		_, sent := rt.callOn(c)
		ok := !sent && t.proj.Waiting(r) && slices.Contains(t.subs, c)
		t.mu.Unlock()
		if !ok {
			continue // sent already, settled, or c left
		}
		call, err := c.Request(r.Method, r.Params)
		if err != nil {
			// The connection is gone, or its scope is read
			// (rpc.ErrReadScope): it answers no server requests.
			continue
		}
		t.mu.Lock()
		// Recorded even if another connection answered meanwhile, or c
		// unsubscribed while it was sent: the request is on c's wire, c
		// may answer it, and the resolution queued behind this delivery
		// must reach c too.
		if rt = routeOf(r); rt == nil {
			rt = &route{calls: map[*rpc.Conn]*rpc.Call{}}
			r.Route = rt
		}
		rt.calls[c] = call
		t.mu.Unlock()
		go t.await(r, call)
	}
}

// callOn returns the call that sent the request to c, if any.
func (rt *route) callOn(c *rpc.Conn) (*rpc.Call, bool) {
	if rt == nil {
		return nil, false
	}
	call, ok := rt.calls[c]
	return call, ok
}

// await waits for one connection's answer. The first answer settles the
// request: serverRequest/resolved is queued for every connection it
// reached, then the core gets the answer, so that what the core does with
// it comes after the resolution.
func (t *thread) await(r *projection.Pending, call *rpc.Call) {
	<-call.Done()
	result, err := call.Result()
	if errors.Is(err, rpc.ErrCancelled) || errors.Is(err, rpc.ErrConnClosed) {
		return // withdrawn, or the client is gone: others may still answer
	}
	t.mu.Lock()
	if got, _ := routeOf(r).callOn(call.Conn()); got != call {
		t.mu.Unlock()
		return // withdrawn as the answer came
	}
	outs, ok := t.proj.Answered(r.CallID)
	if !ok {
		t.mu.Unlock()
		return // another connection answered first
	}
	t.queueLocked(outs...)
	t.mu.Unlock()
	op, derr := r.Decode(result, err)
	if derr != nil {
		t.log.Warn("malformed answer to a server request", zap.Uint64("conn", call.Conn().ID()),
			zap.String("method", r.Method), zap.Error(derr))
		op, _ = r.Decode(nil, derr)
	}
	if _, _, err := t.sess.Submit(context.Background(), op); err != nil {
		t.log.Warn("could not hand an answer to the core", zap.Error(err))
	}
}

// resolved withdraws a settled request and tells every connection it
// reached, with that connection's id. Only the deliverer calls it.
func (t *thread) resolved(r *projection.Pending) {
	t.mu.Lock()
	rt := routeOf(r)
	r.Route = nil
	t.mu.Unlock()
	if rt == nil {
		return
	}
	for c, call := range rt.calls {
		t.settle(c, call)
	}
}

// settle withdraws call from c and tells c the request is resolved. Only
// the deliverer calls it, so that the notification follows the request on
// c's wire.
func (t *thread) settle(c *rpc.Conn, call *rpc.Call) {
	call.Cancel()
	c.Notify("serverRequest/resolved", protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: protocol.IntID(call.ID())})
}
