// Package rpc is agentd's JSON-RPC engine: connections over any
// transport.Stream, the handshake, dispatch to methods registered by type,
// the bounded outbound queue with its single writer and overflow policy,
// and server→client requests. It knows nothing of threads.
//
// # Concurrency contract
//
// Goroutines. Each connection has one reader, which only reads; a
// dispatcher while there is read input to dispatch (inbox), a writer while
// there is something to write (outbox), each stopped by the server's idle
// timer (reap) once it waited a whole tick, and one goroutine per request
// being handled or waiting its turn: an idle connection holds one
// goroutine. The dispatcher decodes, gates and routes, in the order
// messages were read; it never waits on a handler, so answers to server
// requests get through while handlers run. (The errors it answers itself,
// for malformed or refused input, wait for room like any message on a
// connection that waits when full.) initialize runs on the dispatcher, so
// the next request sees its outcome. Handlers run on their own goroutines,
// bounded per connection and in total; past either bound a request waits
// its turn, and past what waiting requests may hold
// (Limits.MaxQueuedRequestBytes) it is answered -32001 at once;
// a handler may wait (for the core, for a client's answer), and its
// context ends when the connection does, or, for a Cancellable method,
// when the client cancels the request ($/cancelRequest; context.Cause is
// then ErrRequestCancelled) or the server starts to shut down
// (ErrShuttingDown).
// The context carries the request, for Logger.
//
// What may block. Queueing a message (Notify, Send, Request, a handler's
// response) never blocks on a socket: a client that cannot keep up has its
// deltas coalesced and is then disconnected. On a connection that cannot
// reconnect (stdio, in-process) a full queue makes the sender wait instead.
// Closing a connection never blocks.
//
// Order. Messages are written in the order they were queued, except that
// a delta may be merged into the queued delta it continues while the
// client is behind. A request's response is queued when its handler
// returns; Request.Then queues notifications right behind it, and
// Request.ResponseFirst reserves the response's place in the queue
// earlier, so that whatever other goroutines queue on the connection
// afterwards is written after it. The writer waits at a reserved place
// until it is filled, which the engine does exactly once per request,
// whether the handler returns, fails or panics, or for it when the
// connection is given up at the shutdown deadline. The queue is bounded by
// memory, not by messages (see outbox), so that a client that reads is not
// given up for what the engine queued while it could not write. A handler
// must not wait for its own connection, or for its client's answer to a
// server request, after ResponseFirst.
//
// Every request gets exactly one answer, also at the shutdown deadline
// (requests still in flight are answered -32603 for their handlers) and
// when it is cancelled: a request cancelled before its handler started
// (one waiting its turn) is answered -32800 and its handler never runs;
// the start and the cancellation claim the request once, whichever comes
// first. Every
// server request (Call) ends: answered, cancelled, or failed with
// ErrConnClosed when its connection ends.
package rpc
