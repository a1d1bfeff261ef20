package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
	"go.uber.org/zap"
)

// ErrConnClosed is returned by Call when the connection ended before the
// client answered.
var ErrConnClosed = errors.New("connection closed")

// errSlowClient is why a client that does not read is given up; the
// client is told (slowCloseReason) where the transport can carry it.
var errSlowClient = errors.New("client is not reading fast enough: outbound queue full")

// slowCloseReason is the WebSocket close reason (status 1008) sent to a
// client given up for not reading.
const slowCloseReason = "outbound queue full: client not reading fast enough"

// ClientInfo is what the client said about itself in initialize.
type ClientInfo struct {
	Name    string
	Title   string
	Version string
	// Originator names the client to the model provider and in the
	// threads it starts: Options.Originator when set, else Name.
	Originator string
}

// Capabilities are what the client declared in initialize.
type Capabilities struct {
	// ExperimentalAPI opts into experimental methods, fields and enum
	// variants on this connection.
	ExperimentalAPI bool
	// OptOutNotificationMethods lists notification methods never sent to
	// this connection (exact names; unknown names are kept and ignored).
	OptOutNotificationMethods []string
}

// session is what initialize established; it never changes afterwards, so
// it is read without locks.
type session struct {
	info ClientInfo
	// infoCut is set when info was cut to MaxClientInfoBytes.
	infoCut bool
	caps    Capabilities
	optOut  map[string]struct{}
}

// Conn is one client connection. Everything about it is independent of
// every other connection: its handshake, capabilities, opt-outs, in-flight
// limit, server-request ids and outbound queue.
type Conn struct {
	id     uint64
	srv    *Server
	stream transport.Stream
	info   transport.Info
	log    connLog
	in     inbox
	out    *outbox
	// internal marks the engine's own probe connection: it is not
	// counted, listed or broadcast to.
	internal bool

	// ctx is cancelled when the connection ends; handler contexts derive
	// from it.
	ctx    context.Context
	cancel context.CancelFunc

	sess atomic.Pointer[session]

	done       chan struct{} // closed when the connection has ended
	closeOnce  sync.Once
	streamDone chan struct{}
	// handlers counts this connection's running handlers.
	handlers sync.WaitGroup
	// serial runs the requests that share an ordering key in turn.
	serial lines
	// slots holds a token for each of its requests being handled
	// (MaxInflightPerConnection).
	slots chan struct{}
	// warnedSlow is set once the client was logged as falling behind.
	warnedSlow atomic.Bool

	// mu guards the fields that follow. The maps are made when first
	// written to (most connections never hold a server request).
	mu     sync.Mutex
	closed bool
	// inflight counts the admitted requests (running or waiting their
	// turn); queued is what those waiting count (MaxQueuedRequestBytes).
	inflight   int
	queued     int
	calls      map[int64]*Call // server requests awaiting an answer
	nextCallID int64
	onClose    []closeHook
	nextHook   int
	// onInputEnd runs when a draining client ends its input (OnInputEnd);
	// inputEnded is set then.
	onInputEnd []func()
	inputEnded bool
	// open holds the requests being handled (not answered yet); givenUp
	// is set once they were answered for their handlers at the shutdown
	// deadline.
	open    map[*Request]struct{}
	givenUp bool
}

func newConn(s *Server, id uint64, st transport.Stream) *Conn {
	info := st.Info()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		id:         id,
		srv:        s,
		stream:     st,
		info:       info,
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
		streamDone: make(chan struct{}),
		slots:      make(chan struct{}, s.lim.MaxInflightPerConnection),
	}
	c.log = connLog{c}
	c.in.start = c.startDispatcher
	c.out = newOutbox(s.lim.OutboundQueueSize/2, s.lim.OutboundQueueSize*outboxBytesPerMessage, info.WaitWhenFull, c.startWriter)
	return c
}

// connFields are the fields of the connection's log lines.
func (c *Conn) connFields() []zap.Field {
	fields := []zap.Field{zap.Uint64("conn", c.id), zap.String("transport", c.info.Transport)}
	if c.info.Remote != "" {
		fields = append(fields, zap.String("remote", c.info.Remote))
	}
	if c.info.Principal != "" || c.info.Scope != scope.Admin {
		fields = append(fields, zap.Stringer("scope", c.info.Scope), zap.String("principal", c.info.Principal))
	}
	return fields
}

// ID returns the connection's id, unique within the process.
func (c *Conn) ID() uint64 { return c.id }

// Transport names the connection's transport, for logs.
func (c *Conn) Transport() string { return c.info.Transport }

// Scope is what the client may do: its token's scope on WebSocket, admin
// on stdio, the Unix socket and in-process. The engine refuses a method
// the scope does not allow before any handler runs; handlers check what
// depends on the params against it.
func (c *Conn) Scope() scope.Scope { return c.info.Scope }

// Initialized reports whether initialize succeeded on this connection.
func (c *Conn) Initialized() bool { return c.sess.Load() != nil }

// ClientInfo returns the client's initialize clientInfo (zero before).
func (c *Conn) ClientInfo() ClientInfo {
	if s := c.sess.Load(); s != nil {
		return s.info
	}
	return ClientInfo{}
}

// Capabilities returns the client's declared capabilities (zero before
// initialize).
func (c *Conn) Capabilities() Capabilities {
	if s := c.sess.Load(); s != nil {
		return s.caps
	}
	return Capabilities{}
}

// OptedOut reports whether the client asked not to receive method.
func (c *Conn) OptedOut(method string) bool {
	s := c.sess.Load()
	if s == nil {
		return false
	}
	_, ok := s.optOut[method]
	return ok
}

// Context returns a context cancelled when the connection ends.
func (c *Conn) Context() context.Context { return c.ctx }

// Done returns a channel closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// OnClose registers fn to run once the connection has ended, on its own
// goroutine (so it may take locks that a notifier holds). If the
// connection already ended, fn runs right away (also on its own
// goroutine). The returned function unregisters fn, so that a hook does
// not keep what it refers to alive for the life of the connection.
func (c *Conn) OnClose(fn func()) (remove func()) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		go fn()
		return func() {}
	}
	id := c.nextHook
	c.nextHook++
	c.onClose = append(c.onClose, closeHook{id, fn})
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if i := slices.IndexFunc(c.onClose, func(h closeHook) bool { return h.id == id }); i >= 0 {
			c.onClose = slices.Delete(c.onClose, i, i+1)
			if len(c.onClose) == 0 {
				c.onClose = nil
			}
		}
		c.mu.Unlock()
	}
}

// OnInputEnd registers fn to run once the client has ended its input and
// the connection drains (a stdio client's EOF), on its own goroutine,
// before the drain waits for the requests in flight: what would not end
// by itself (a command/exec process) is stopped there, so that the
// requests it holds answer, as they do when the connection ends. If the
// input already ended, fn runs right away. It does not run when the
// connection ends otherwise (OnClose does).
func (c *Conn) OnInputEnd(fn func()) {
	c.mu.Lock()
	if c.inputEnded {
		c.mu.Unlock()
		go fn()
		return
	}
	c.onInputEnd = append(c.onInputEnd, fn)
	c.mu.Unlock()
}

// closeHook is a function OnClose registered.
type closeHook struct {
	id int
	fn func()
}

// trackOpen and untrackOpen keep the set of requests being handled.
// trackOpen reports false once the connection was given up: the request
// is then answered at once.
func (c *Conn) trackOpen(r *Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.givenUp {
		return false
	}
	if c.open == nil {
		c.open = map[*Request]struct{}{}
	}
	c.open[r] = struct{}{}
	return true
}

// isGivenUp reports whether the shutdown deadline answered the open
// requests.
func (c *Conn) isGivenUp() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.givenUp
}

func (c *Conn) untrackOpen(r *Request) {
	c.mu.Lock()
	delete(c.open, r)
	c.mu.Unlock()
}

// errGivenUp answers a request whose handler was still running when its
// connection was given up (the shutdown deadline).
var errGivenUp = protocol.Errorf(protocol.CodeInternalError, "%s", ErrShuttingDown)

// giveUpOpen answers, for their handlers, the requests still being handled
// at the shutdown deadline: every request is answered, and a response
// whose place was reserved no longer holds up what is queued behind it. A
// handler that returns later answers nothing more. It runs before the
// queue is closed, so that these answers are written; on a connection that
// waits, it waits for room only until ctx ends.
func (c *Conn) giveUpOpen(ctx context.Context) {
	c.mu.Lock()
	open := c.open
	c.open = nil
	c.givenUp = true
	c.mu.Unlock()
	for r := range open {
		r.answerCtx(ctx, errorMsg(r.id, errGivenUp), false)
	}
}

// Notify sends a notification with a top-level emittedAtMs, unless the
// client opted out of method. On a socket it never blocks: when the client
// cannot keep up, deltas are coalesced and then the connection is dropped
// (logged). On stdio and in-process connections it waits for room instead.
// After the connection ended it does nothing.
func (c *Conn) Notify(method string, params any) {
	if c.OptedOut(method) {
		return
	}
	n, err := NewNotification(method, params)
	if err != nil {
		c.log.Error("dropping notification that cannot be encoded", zap.String("method", method), zap.Error(err))
		return
	}
	c.enqueue(context.Background(), n.m)
}

// Send sends an encoded notification, unless the client opted out of its
// method; otherwise as Notify.
func (c *Conn) Send(n Notification) {
	if c.OptedOut(n.m.method) {
		return
	}
	c.enqueue(context.Background(), n.m)
}

// enqueue offers m to the outbox and applies the overflow policy's last
// step: a client that cannot keep up and may not be waited for is
// disconnected.
func (c *Conn) enqueue(ctx context.Context, m outMsg) bool {
	return c.outcome(c.out.push(ctx, m))
}

// outcome applies the overflow policy's last step to the result of a push.
func (c *Conn) outcome(err error) bool {
	if err == nil {
		if !c.warnedSlow.Load() && c.out.coalescedCount() > 0 && c.warnedSlow.CompareAndSwap(false, true) {
			c.log.Warn("client is falling behind; coalescing deltas")
		}
		return true
	}
	if errors.Is(err, errOutboxFull) {
		c.srv.counts.slowDisconnects.Add(1)
		c.closeWith(errSlowClient)
	}
	return false
}

// resultMsg encodes the answer to request id with result; a result that
// cannot be encoded becomes an internal error.
func (c *Conn) resultMsg(id json.RawMessage, result any) outMsg {
	data, err := encodeResponse(id, result)
	if err != nil {
		c.log.Error("cannot encode result", logID(id), zap.Error(err))
		return errorMsg(id, protocol.Errorf(protocol.CodeInternalError, "internal error: cannot encode result: %v", err))
	}
	return outMsg{data: data}
}

// errorMsg encodes the answer to request id (null when unknown) with perr.
func errorMsg(id json.RawMessage, perr *protocol.Error) outMsg {
	if perr.Code == 0 {
		perr = &protocol.Error{Code: protocol.CodeInternalError, Message: perr.Message}
	}
	return outMsg{data: encodeError(id, perr)}
}

// sendError answers request id (null when unknown) with perr.
func (c *Conn) sendError(id json.RawMessage, perr *protocol.Error) bool {
	return c.enqueue(context.Background(), errorMsg(id, perr))
}

// run serves the connection until it ends, reading on the calling
// goroutine. It returns once the stream is closed and its reader stopped
// (a stdio read, which cannot be interrupted, keeps it until stdin
// closes).
//
// An idle connection has this one goroutine, blocked in a read: the
// dispatcher runs only while there is something to dispatch (inbox), the
// writer only while there is something to write (outbox), since every
// goroutine holds a stack of several kilobytes.
func (c *Conn) run() {
	c.log.Info("connection opened")
	c.readEnded(c.readLoop())
	<-c.done
	<-c.streamDone
}

// startWriter starts the writer; the outbox calls it when it holds
// something to write and no writer runs.
func (c *Conn) startWriter() { go c.writeLoop() }

// writeLoop is the only writer of the stream while it runs: it takes what
// the outbox holds, writes it and flushes, and waits for more, until the
// outbox tells it to stop (idle, or closed and drained).
func (c *Conn) writeLoop() {
	var batch []outMsg
	for {
		var ok bool
		batch, ok = c.out.take(batch)
		if !ok {
			if !c.out.park() {
				return
			}
			continue
		}
		for i := range batch {
			if err := c.stream.Write(c.ctx, batch[i].data); err != nil {
				c.writeFailed(err)
				return
			}
		}
		if err := c.stream.Flush(); err != nil {
			c.writeFailed(err)
			return
		}
	}
}

// writeFailed ends the connection after a failed write, and the writer
// with it.
func (c *Conn) writeFailed(err error) {
	c.closeWith(writeError(err))
	c.out.writerGone()
}

func writeError(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return errors.Join(errors.New("write failed"), err)
}

// readLoop reads messages and passes them to the dispatcher, until the
// stream ends. It never waits on a handler: dispatching never does
// (requests run on their own goroutines; responses and notifications are
// handled in place without blocking).
func (c *Conn) readLoop() error {
	for {
		data, err := c.stream.Read(c.ctx)
		if err != nil {
			if errors.Is(err, transport.ErrMessageTooLarge) {
				if !c.in.push(inMsg{tooLarge: true}) {
					return nil
				}
				continue
			}
			// What was read before the end is dispatched before the end
			// is handled, as if the reader dispatched it itself: a
			// request a client sent just before it left still runs, and
			// at a stdio client's EOF the drain waits for it.
			c.in.waitDispatched()
			return err
		}
		if !c.in.push(inMsg{data: data}) {
			return nil
		}
		select {
		case <-c.done:
			return nil
		default:
		}
	}
}

// trimIdle drops the maps of a connection gone idle (a map keeps the size
// it grew to): its requests being handled and its serial lines, when
// empty.
func (c *Conn) trimIdle() {
	c.mu.Lock()
	if len(c.open) == 0 {
		c.open = nil
	}
	c.mu.Unlock()
	c.serial.trim()
}

// startDispatcher starts a dispatcher; the inbox calls it when it holds
// something to dispatch and none runs.
func (c *Conn) startDispatcher() { go c.dispatchLoop() }

// dispatchLoop dispatches what the inbox holds, in order, and waits for
// more, until the inbox tells it to stop (idle, or closed).
func (c *Conn) dispatchLoop() {
	for {
		m, ok := c.in.take()
		if !ok {
			if !c.in.park() {
				c.trimIdle()
				return
			}
			continue
		}
		if m.tooLarge {
			c.log.Warn("message over the size limit", zap.Int("limit", c.srv.lim.MaxMessageBytes))
			c.sendError(nullID, protocol.Errorf(protocol.CodeParseError,
				"Parse error: message exceeds the limit of %d bytes", c.srv.lim.MaxMessageBytes))
			continue
		}
		c.dispatch(m.data)
	}
}

// readEnded decides what the end of input means: on stdio, EOF is the
// client saying it is done, so in-flight requests finish and are answered
// first; anywhere else the connection is gone.
func (c *Conn) readEnded(err error) {
	if errors.Is(err, io.EOF) && c.info.DrainOnEOF {
		c.log.Info("input closed; finishing in-flight requests")
		c.mu.Lock()
		c.inputEnded = true
		hooks := c.onInputEnd
		c.onInputEnd = nil
		c.mu.Unlock()
		for _, fn := range hooks {
			go fn()
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.srv.lim.ShutdownTimeout)
		defer cancel()
		c.drain(ctx)
		return
	}
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		err = nil
	}
	c.closeWith(err)
}

// drain waits for in-flight handlers (until ctx ends), lets the writer send
// everything queued, then closes the connection.
func (c *Conn) drain(ctx context.Context) {
	handlersDone := make(chan struct{})
	go func() {
		c.handlers.Wait()
		close(handlersDone)
	}()
	flush := ctx
	select {
	case <-handlersDone:
	case <-ctx.Done():
		c.log.Warn("deadline reached with requests still in flight", zap.Int("inflight", c.inflightCount()))
		var cancel context.CancelFunc
		flush, cancel = context.WithTimeout(context.Background(), flushGrace)
		defer cancel()
		c.giveUpOpen(flush)
	}
	c.out.close()
	select {
	case <-c.out.drained():
	case <-flush.Done():
	case <-c.done:
	}
	c.closeWith(nil)
}

func (c *Conn) inflightCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}

// closeWith ends the connection once; reason (nil for a normal end) is
// logged. It never blocks: the stream is closed on another goroutine.
func (c *Conn) closeWith(reason error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		calls := c.calls
		c.calls = nil
		hooks := c.onClose
		c.onClose = nil
		c.mu.Unlock()

		fields := []zap.Field{zap.Int("pendingServerRequests", len(calls)), zap.Uint64("coalesced", c.out.coalescedCount())}
		if reason != nil {
			c.log.Warn("connection closed", append(fields, zap.Error(reason))...)
		} else {
			c.log.Info("connection closed", fields...)
		}
		c.out.abort()
		c.in.close()
		c.cancel()
		for _, call := range calls {
			call.end(nil, ErrConnClosed)
		}
		close(c.done)
		go func() {
			if errors.Is(reason, errSlowClient) {
				_ = transport.CloseFor(c.stream, slowCloseReason)
			}
			_ = c.stream.Close()
			close(c.streamDone)
		}()
		c.srv.removeConn(c)
		for _, h := range hooks {
			go h.fn()
		}
	})
}
