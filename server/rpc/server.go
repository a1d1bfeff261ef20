package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/transport"
	"go.uber.org/zap"
)

// Limits bound what the engine accepts and holds.
type Limits struct {
	// MaxInflightPerConnection bounds the requests of one connection
	// being handled at once; past it, requests wait their turn.
	MaxInflightPerConnection int
	// MaxInflight bounds the requests being handled at once in total;
	// past it, requests wait their turn.
	MaxInflight int
	// MaxQueuedRequestBytes bounds, per connection, what the requests
	// waiting for their turn hold: each counts its size and
	// queuedRequestOverhead. A request that would wait while the
	// connection's waiting requests hold that much is answered -32001 at
	// once (one of any size may always wait). 0: none waits; past the
	// in-flight limits a request is answered -32001.
	MaxQueuedRequestBytes int
	// MaxMessageBytes caps one message in either direction.
	MaxMessageBytes int
	// OutboundQueueSize is each connection's outbound queue, in messages.
	OutboundQueueSize int
	// ShutdownTimeout bounds a graceful drain.
	ShutdownTimeout time.Duration
}

// Options configure a Server.
type Options struct {
	Limits Limits
	// Home resolves unix:// without a path (the default control socket).
	Home string
	// Logger receives the engine's logs; nil discards them.
	Logger *zap.Logger
	// Initialize makes the result of a valid initialize, and the
	// notifications the client gets right after it (configWarning). It
	// runs on the connection's read loop and must not block.
	Initialize func(ClientInfo) (result any, then []Notification)
	// Observer, when set, is told each request's outcome (metrics).
	Observer Observer
	// Originator, when set, is every client's originator instead of its
	// name (CODEX_INTERNAL_ORIGINATOR_OVERRIDE, as the reference reads
	// it): in userAgent, the threads it starts and the model requests'
	// originator header. One that is not a valid header value is ignored.
	Originator string
}

// Server is the JSON-RPC engine: its handlers, its connections and its
// listeners.
type Server struct {
	opts Options
	lim  Limits
	log  *zap.Logger

	// hmu guards handlers, orderKeys and cancellable.
	hmu       sync.RWMutex
	handlers  map[string]*handler
	orderKeys map[string]OrderKey
	// cancellable are the methods whose running handlers $/cancelRequest
	// stops (Cancellable).
	cancellable map[string]bool

	// work counts the admitted requests of all connections (running or
	// waiting their turn); Add happens under mu, before draining is set,
	// so Wait in shutdown is safe.
	work sync.WaitGroup
	// slots holds a token for each request being handled (MaxInflight).
	slots chan struct{}

	// stop receives a reason when something other than the caller's
	// context ends the server (stdin closed).
	stop chan string
	// drain ends (with ErrShuttingDown) when Shutdown begins: it stops
	// the running handlers of Cancellable methods.
	drain      context.Context
	startDrain context.CancelCauseFunc
	// counts are running totals for Stats.
	counts counters

	// mu guards the fields that follow.
	mu         sync.Mutex
	conns      map[uint64]*Conn
	nextConnID uint64
	// inflight counts the admitted requests (running or waiting).
	inflight   int
	draining   bool
	drainHooks []func(context.Context)
	// gauges are the counts Status reports.
	gauges    []gauge
	listeners []boundListener
	// sockets counts the socket connections holding a slot (admitSocket),
	// up to maxSockets; limitWarned is set once a refusal was logged,
	// until a slot frees up.
	sockets, maxSockets int
	limitWarned         bool
	// reapStop, while the idle timer runs (reap), stops it: it is closed
	// when the last connection ends.
	reapStop chan struct{}
}

type boundListener struct {
	ep transport.Endpoint
	l  transport.Listener
}

// New returns an engine with no methods but initialize.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Initialize == nil {
		opts.Initialize = func(ClientInfo) (any, []Notification) { return protocol.Empty{}, nil }
	}
	if o := opts.Originator; o != "" && !validHeaderValue(o) {
		opts.Logger.Warn("ignoring an originator override that is not a valid header value", zap.String("originator", protocol.Cut(o)))
		opts.Originator = ""
	}
	opts.Originator = cutIdentifier(opts.Originator)
	drain, startDrain := context.WithCancelCause(context.Background())
	opts.Limits.MaxInflight = max(opts.Limits.MaxInflight, 1)
	opts.Limits.MaxInflightPerConnection = max(opts.Limits.MaxInflightPerConnection, 1)
	return &Server{
		slots:       make(chan struct{}, opts.Limits.MaxInflight),
		drain:       drain,
		startDrain:  startDrain,
		opts:        opts,
		lim:         opts.Limits,
		log:         opts.Logger,
		handlers:    map[string]*handler{},
		orderKeys:   map[string]OrderKey{},
		cancellable: map[string]bool{},
		conns:       map[uint64]*Conn{},
		stop:        make(chan string, 1),
	}
}

// Logger returns the engine's logger.
func (s *Server) Logger() *zap.Logger { return s.log }

// Conns returns the initialized connections.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for _, c := range s.conns {
		if c.Initialized() && !c.internal {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Broadcast sends a notification to every initialized connection that did
// not opt out of it. It is encoded once. Like Notify, it never blocks on a
// socket client (a stdio client that is not reading makes it wait).
func (s *Server) Broadcast(method string, params any) {
	n, err := NewNotification(method, params)
	if err != nil {
		s.log.Error("dropping broadcast that cannot be encoded", zap.String("method", method), zap.Error(err))
		return
	}
	s.broadcast(n)
}

// broadcast sends n to every initialized connection that did not opt out
// of it.
func (s *Server) broadcast(n Notification) {
	for _, c := range s.Conns() {
		c.Send(n)
	}
}

// Gauge registers a named count for the service status (for example
// "threads loaded"); fn must be cheap and safe to call at any time.
func (s *Server) Gauge(name string, fn func() int) {
	s.mu.Lock()
	s.gauges = append(s.gauges, gauge{name, fn})
	s.mu.Unlock()
}

type gauge struct {
	name string
	fn   func() int
}

// Status is a one-line summary for the service manager: the clients
// connected and every gauge.
func (s *Server) Status() string {
	s.mu.Lock()
	gauges := slices.Clone(s.gauges)
	s.mu.Unlock()
	parts := []string{fmt.Sprintf("%d connections", len(s.Conns()))}
	for _, g := range gauges {
		parts = append(parts, fmt.Sprintf("%d %s", g.fn(), g.name))
	}
	return strings.Join(parts, ", ")
}

// OnDrain registers fn to run during a graceful shutdown, after listeners
// stopped and alongside the wait for in-flight requests. fn should return
// once the work it tracks has finished (for example running turns) or when
// ctx (the shutdown deadline) ends.
func (s *Server) OnDrain(fn func(ctx context.Context)) {
	s.mu.Lock()
	s.drainHooks = append(s.drainHooks, fn)
	s.mu.Unlock()
}

// ServeStream runs one connection over st until it ends.
func (s *Server) ServeStream(st transport.Stream) { s.serveStream(st, false) }

// serveStream runs a connection; an internal one is the engine's own.
func (s *Server) serveStream(st transport.Stream, internal bool) {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		_ = st.Close()
		return
	}
	s.nextConnID++
	c := newConn(s, s.nextConnID, st)
	c.internal = internal
	s.conns[c.id] = c
	if s.reapStop == nil {
		s.reapStop = make(chan struct{})
		go s.reap(s.reapStop)
	}
	s.mu.Unlock()
	c.run()
}

// idleWorkerRetire is the period of the idle timer (reap): a connection's
// writer or dispatcher that waited a whole period for work stops. Long
// enough that a connection with steady traffic keeps them (a goroutine
// started per message costs its start and its stack's growth every time:
// fan-out to 50 WebSocket clients took twice as long), short enough that
// an idle connection soon holds only its reader.
const idleWorkerRetire = 250 * time.Millisecond

// reap is the idle timer: every idleWorkerRetire it ticks every
// connection's outbox and inbox. It runs while there are connections,
// until stop is closed.
func (s *Server) reap(stop <-chan struct{}) {
	t := time.NewTicker(idleWorkerRetire)
	defer t.Stop()
	var conns []*Conn
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		conns = conns[:0]
		for _, c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.out.tick()
			c.in.tick()
		}
		clear(conns)
	}
}

func (s *Server) removeConn(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c.id)
	if len(s.conns) == 0 && s.reapStop != nil {
		close(s.reapStop)
		s.reapStop = nil
	}
	// In the same step, so that Stats counts its merges once.
	s.counts.coalescedClosed.Add(c.out.coalescedCount())
	s.mu.Unlock()
}

// ListenOptions say how listeners admit clients.
type ListenOptions struct {
	// WSAuth authenticates the clients of ws:// listeners; nil admits
	// all.
	WSAuth transport.Authenticator
	// AllowUnauthenticated lets a ws:// listener on a non-loopback
	// address start without WSAuth (refused otherwise, as the reference
	// refuses it).
	AllowUnauthenticated bool
	// Adopted are sockets bound by someone else (systemd socket
	// activation), served as WebSocket listeners after the URLs, under
	// the same rules; Names names them for the log (LISTEN_FDNAMES).
	Adopted []net.Listener
	Names   []string
	// TLS is the certificate of wss:// listeners; when set, the adopted
	// TCP sockets serve wss:// too. A certificate no listener uses is an
	// error, as is a wss:// listener without one.
	TLS *transport.Certificate
	// MaxConnections bounds the WebSocket connections of all socket
	// listeners (TCP and Unix) together; past it a client gets HTTP 503
	// before the upgrade. 0: no bound. stdio is one connection more.
	MaxConnections int
}

// Listen parses and binds every listen URL (stdio://, ws://IP:PORT,
// wss://IP:PORT, unix://[PATH]), adopts the passed sockets, and logs the addresses.
// Nothing is served until Serve. On error, what was bound is released
// (adopted sockets included).
func (s *Server) Listen(ctx context.Context, urls []string, lo ListenOptions) error {
	var bound []boundListener
	release := func() {
		for _, b := range bound {
			_ = b.l.Close()
		}
	}
	fail := func(err error) error {
		release()
		for _, ln := range lo.Adopted {
			_ = ln.Close()
		}
		return err
	}
	topts := transport.Options{MaxMessageBytes: s.lim.MaxMessageBytes, Logger: s.log, Auth: lo.WSAuth, TLS: lo.TLS}
	if lo.MaxConnections > 0 {
		s.mu.Lock()
		s.maxSockets = lo.MaxConnections
		s.mu.Unlock()
		topts.Admit = s.admitSocket
	}
	stdio := 0
	for _, u := range urls {
		ep, err := transport.ParseListenURL(u, s.opts.Home)
		if err != nil {
			return fail(err)
		}
		if ep.Kind == transport.KindStdio {
			if stdio++; stdio > 1 {
				return fail(errors.New("stdio:// may be given only once"))
			}
		}
		if err := lo.admits(ep); err != nil {
			return fail(err)
		}
		l, err := transport.Listen(ctx, ep, topts)
		if err != nil {
			return fail(err)
		}
		bound = append(bound, boundListener{ep: ep, l: l})
	}
	for i, ln := range lo.Adopted {
		l, ep, err := transport.Adopt(ln, topts)
		if err == nil {
			err = lo.admits(ep)
		}
		if err != nil {
			return fail(err)
		}
		name := ""
		if i < len(lo.Names) {
			name = lo.Names[i]
		}
		s.log.Info("serving a socket passed by the service manager", zap.String("url", l.URL()), zap.String("name", name))
		bound = append(bound, boundListener{ep: ep, l: l})
	}
	if lo.TLS != nil && !slices.ContainsFunc(bound, func(b boundListener) bool { return b.ep.TLS }) {
		return fail(errors.New("--tls-cert and --tls-key are given but no listener serves TLS: add --listen wss://IP:PORT (under socket activation, pass a TCP socket)"))
	}
	for _, b := range bound {
		s.log.Info("listening on "+b.l.URL(), zap.String("url", b.l.URL()))
		if lo.open(b.ep) {
			s.log.Warn("listening on a non-loopback address without authentication: anyone who can reach it can act as a client", zap.String("url", b.l.URL()))
		}
	}
	s.mu.Lock()
	s.listeners = append(s.listeners, bound...)
	s.mu.Unlock()
	return nil
}

// admitSocket is the listeners' admission check (transport.Options.Admit):
// a slot while fewer than maxSockets socket connections hold one.
func (s *Server) admitSocket() (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sockets >= s.maxSockets {
		s.counts.refusedConns.Add(1)
		if !s.limitWarned {
			// Once per episode: a flood past the limit must not flood
			// the log too.
			s.limitWarned = true
			s.log.Warn("refusing websocket clients: the connection limit is reached (--max-connections)", zap.Int("limit", s.maxSockets))
		}
		return nil, false
	}
	s.sockets++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.sockets--
			s.limitWarned = false
			s.mu.Unlock()
		})
	}, true
}

// open reports whether ep is a ws:// listener anyone on the network may
// use: a non-loopback address without authentication.
func (lo ListenOptions) open(ep transport.Endpoint) bool {
	return ep.Kind == transport.KindWS && lo.WSAuth == nil && !loopbackAddr(ep.Addr)
}

// admits refuses an open listener unless AllowUnauthenticated.
func (lo ListenOptions) admits(ep transport.Endpoint) error {
	if lo.open(ep) && !lo.AllowUnauthenticated {
		return fmt.Errorf("refusing to start non-loopback websocket listener %s without auth; configure `--ws-auth capability-token` or `--ws-auth signed-bearer-token` (or pass --allow-unauthenticated)", ep.Addr)
	}
	return nil
}

// loopbackAddr reports whether host:port names a loopback host.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves the bound listeners until ctx ends or stdin closes (when
// stdio:// is one of them), then shuts down gracefully: stop accepting,
// let in-flight requests and drain hooks finish within the configured
// shutdown timeout, close every connection. It returns nil after a clean
// shutdown.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	listeners := append([]boundListener(nil), s.listeners...)
	s.mu.Unlock()
	if len(listeners) == 0 {
		return errors.New("nothing to serve: no listener bound")
	}
	errc := make(chan error, len(listeners))
	for _, b := range listeners {
		serve := s.ServeStream
		if b.ep.Kind == transport.KindStdio {
			serve = func(st transport.Stream) {
				s.ServeStream(st)
				s.requestStop("stdin closed")
			}
		}
		go func(b boundListener) {
			if err := b.l.Serve(serve); err != nil {
				errc <- fmt.Errorf("%s: %w", b.l.URL(), err)
			}
		}(b)
	}
	var err error
	reason := ""
	select {
	case <-ctx.Done():
		reason = "shutdown requested"
	case reason = <-s.stop:
	case err = <-errc:
		reason = "listener failed"
	}
	s.Shutdown(reason)
	return err
}

// requestStop asks Serve to shut down.
func (s *Server) requestStop(reason string) {
	select {
	case s.stop <- reason:
	default:
	}
}

// CloseListeners stops accepting connections and removes Unix socket
// files. Shutdown calls it; a forced exit should too.
func (s *Server) CloseListeners() {
	s.mu.Lock()
	listeners := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for _, b := range listeners {
		if err := b.l.Close(); err != nil {
			s.log.Warn("closing listener", zap.String("url", b.l.URL()), zap.Error(err))
		}
	}
}

// Shutdown stops accepting, refuses new requests (-32001, retryable),
// stops the running handlers of Cancellable methods (ErrShuttingDown),
// waits for in-flight requests and drain hooks up to the shutdown timeout,
// then closes every connection after sending what it has queued.
func (s *Server) Shutdown(reason string) {
	timeout := s.lim.ShutdownTimeout
	s.CloseListeners()
	s.mu.Lock()
	s.draining = true
	inflight := s.inflight
	hooks := append([]func(context.Context){}, s.drainHooks...)
	s.mu.Unlock()
	// Cancellable handlers stop now and answer what they did, rather
	// than run on to the deadline and be answered for.
	s.startDrain(ErrShuttingDown)
	s.log.Info("shutting down", zap.String("reason", reason), zap.Int("inflight", inflight), zap.Duration("timeout", timeout))

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1 + len(hooks))
	go func() {
		defer wg.Done()
		s.work.Wait()
	}()
	for _, h := range hooks {
		go func(h func(context.Context)) {
			defer wg.Done()
			h(ctx)
		}(h)
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		s.mu.Lock()
		left := s.inflight
		s.mu.Unlock()
		s.log.Warn("shutdown deadline reached; abandoning in-flight work", zap.Int("inflight", left))
	}

	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// Give writers a moment to send what is queued, even after the
	// deadline: those are answers the clients are waiting for.
	flush, cancelFlush := context.WithTimeout(context.Background(), flushGrace)
	defer cancelFlush()
	var cw sync.WaitGroup
	for _, c := range conns {
		cw.Add(1)
		go func(c *Conn) {
			defer cw.Done()
			c.giveUpOpen(flush)
			c.out.close()
			select {
			case <-c.out.drained():
			case <-flush.Done():
			}
			c.closeWith(nil)
			<-c.streamDone
		}(c)
	}
	cw.Wait()
	s.log.Info("shutdown complete")
}

// flushGrace bounds how long Shutdown waits for each connection's queued
// messages to be written.
const flushGrace = 2 * time.Second
