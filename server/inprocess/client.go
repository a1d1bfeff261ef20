package inprocess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/agentd-dev/agentd/server/rpc"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/transport"
)

// ErrClosed is returned once the connection has ended.
var ErrClosed = errors.New("inprocess: connection closed")

// DefaultBuffer is the in-memory pipe's capacity in messages, per
// direction (the reference's channel capacity).
const DefaultBuffer = 128

// ClientInfo is what the client says about itself in initialize.
type ClientInfo struct {
	Name, Title, Version string
}

// Options configure a connection.
type Options struct {
	ClientInfo ClientInfo
	// ExperimentalAPI opts into experimental methods and fields.
	ExperimentalAPI bool
	// OptOutNotificationMethods are notifications never sent to this
	// client.
	OptOutNotificationMethods []string
	// Buffer is the pipe's capacity per direction; 0 means DefaultBuffer.
	Buffer int
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	UserAgent      string `json:"userAgent"`
	CodexHome      string `json:"codexHome"`
	PlatformFamily string `json:"platformFamily"`
	PlatformOs     string `json:"platformOs"`
}

// Event is a message the server sent on its own: a notification, or a
// server request to answer.
type Event struct {
	Method string
	Params json.RawMessage
	// EmittedAtMs is when the server emitted a notification (Unix ms).
	EmittedAtMs int64
	// Request is set for a server request; answer it exactly once with
	// Respond or RespondError.
	Request *ServerRequest
	// Raw is the whole message as the server sent it.
	Raw json.RawMessage
}

// ServerRequest is a request from the server (an approval, a question,
// a client tool call).
type ServerRequest struct {
	// ID is the request's id, as sent.
	ID json.RawMessage
	c  *Client
}

// Respond answers the request with result (encoded as JSON).
func (r *ServerRequest) Respond(ctx context.Context, result any) error {
	b, err := json.Marshal(map[string]any{"id": r.ID, "result": result})
	if err != nil {
		return fmt.Errorf("inprocess: encoding the answer: %w", err)
	}
	return r.c.write(ctx, b)
}

// RespondError answers the request with an error.
func (r *ServerRequest) RespondError(ctx context.Context, perr *protocol.Error) error {
	b, err := json.Marshal(map[string]any{"id": r.ID, "error": perr})
	if err != nil {
		return fmt.Errorf("inprocess: encoding the error: %w", err)
	}
	return r.c.write(ctx, b)
}

// Client is one in-process connection. Its methods are safe for
// concurrent use.
type Client struct {
	srv *rpc.Server
	// own says that Start created srv, so Close shuts it down.
	own bool
	st  transport.Stream
	log *zap.Logger

	init      InitializeResult
	events    *eventQueue
	done      chan struct{} // closed when the connection has ended
	serveDone chan struct{} // closed when the server side has returned

	// wmu serialises writes (one writer at a time, as Stream requires).
	wmu sync.Mutex

	// mu guards the fields that follow.
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	err     error // why the connection ended
}

// response is the answer to one of our requests.
type response struct {
	result json.RawMessage
	err    *protocol.Error
}

// Start creates a server for cfg (log may be nil) and connects to it.
// Close shuts that server down.
func Start(ctx context.Context, cfg *config.Config, log *zap.Logger, o Options) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("inprocess: a configuration is required")
	}
	s := server.New(cfg, log)
	c, err := Connect(ctx, s, o)
	if err != nil {
		s.Shutdown("in-process client failed to connect")
		return nil, err
	}
	c.own = true
	return c, nil
}

// Connect opens a connection to a running server s and performs the
// handshake (initialize, then initialized).
func Connect(ctx context.Context, s *rpc.Server, o Options) (*Client, error) {
	buffer := o.Buffer
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	srvEnd, cliEnd := transport.Pipe(buffer)
	c := newClient(s, cliEnd, s.Logger())
	go func() {
		s.ServeStream(srvEnd)
		close(c.serveDone)
	}()
	return c.handshake(ctx, o)
}

func newClient(s *rpc.Server, st transport.Stream, log *zap.Logger) *Client {
	c := &Client{
		srv: s, st: st, log: log,
		events: newEventQueue(), done: make(chan struct{}), serveDone: make(chan struct{}),
		pending: map[int64]chan response{},
	}
	go c.readLoop()
	return c
}

// handshake sends initialize and initialized.
func (c *Client) handshake(ctx context.Context, o Options) (*Client, error) {
	info := map[string]any{"name": o.ClientInfo.Name, "version": o.ClientInfo.Version}
	if o.ClientInfo.Title != "" {
		info["title"] = o.ClientInfo.Title
	}
	caps := map[string]any{"experimentalApi": o.ExperimentalAPI}
	if o.OptOutNotificationMethods != nil {
		caps["optOutNotificationMethods"] = o.OptOutNotificationMethods
	}
	if err := c.Request(ctx, "initialize", map[string]any{"clientInfo": info, "capabilities": caps}, &c.init); err != nil {
		c.Close()
		return nil, fmt.Errorf("inprocess: initialize: %w", err)
	}
	if err := c.Notify(ctx, "initialized", nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("inprocess: initialized: %w", err)
	}
	return c, nil
}

// Initialize returns the server's answer to the handshake.
func (c *Client) Initialize() InitializeResult { return c.init }

// Server returns the server the client is connected to (nil for a
// client of Dial).
func (c *Client) Server() *rpc.Server { return c.srv }

// Events returns the server's notifications and requests, in order. The
// channel is closed after the connection ends and every event before
// the end was delivered (or at once after Close).
func (c *Client) Events() <-chan Event { return c.events.out }

// Done returns a channel closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended (nil while it is open, and after
// a normal end).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Request sends a client request and waits for its answer, decoding the
// result into result (unless nil). A JSON-RPC error comes back as a
// *protocol.Error. params nil sends {}.
func (c *Client) Request(ctx context.Context, method string, params, result any) error {
	if params == nil {
		params = struct{}{}
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.isDoneLocked() {
		c.mu.Unlock()
		return ErrClosed
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		forget()
		return fmt.Errorf("inprocess: encoding %s params: %w", method, err)
	}
	if err := c.write(ctx, b); err != nil {
		forget()
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if result != nil {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("inprocess: decoding %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		forget()
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
}

// Notify sends a client notification (params nil: none).
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("inprocess: encoding %s params: %w", method, err)
	}
	return c.write(ctx, b)
}

func (c *Client) write(ctx context.Context, b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	err := c.st.Write(ctx, b)
	if errors.Is(err, transport.ErrClosed) {
		return ErrClosed
	}
	return err
}

// Close ends the connection: pending requests fail with ErrClosed and
// unread events are dropped. A server created by Start is shut down
// (running turns end, threads are saved). Close is idempotent.
func (c *Client) Close() error {
	_ = c.st.Close()
	c.events.abandon()
	<-c.serveDone
	c.end(nil)
	c.mu.Lock()
	own := c.own
	c.own = false
	c.mu.Unlock()
	if own {
		c.srv.Shutdown("in-process client closed")
	}
	return nil
}

func (c *Client) isDoneLocked() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// end records the end of the connection once.
func (c *Client) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isDoneLocked() {
		return
	}
	c.err = err
	c.pending = map[int64]chan response{}
	close(c.done)
}

// wireMsg is a message from the server.
type wireMsg struct {
	ID          json.RawMessage `json:"id"`
	Method      string          `json:"method"`
	Params      json.RawMessage `json:"params"`
	Result      json.RawMessage `json:"result"`
	Error       *protocol.Error `json:"error"`
	EmittedAtMs int64           `json:"emittedAtMs"`
}

// readLoop routes what the server sends: answers to their requests,
// everything else to the event queue. It never waits on the consumer.
func (c *Client) readLoop() {
	defer c.events.close()
	for {
		data, err := c.st.Read(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			c.end(err)
			return
		}
		var m wireMsg
		if err := json.Unmarshal(data, &m); err != nil {
			c.log.Warn("inprocess: undecodable message from the server", zap.Error(err))
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null":
			c.events.push(Event{Method: m.Method, Params: m.Params, Request: &ServerRequest{ID: m.ID, c: c}, Raw: data})
		case m.Method != "":
			c.events.push(Event{Method: m.Method, Params: m.Params, EmittedAtMs: m.EmittedAtMs, Raw: data})
		default:
			c.route(m)
		}
	}
}

// route hands an answer to the request waiting for it.
func (c *Client) route(m wireMsg) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		if m.Error != nil {
			c.log.Warn("inprocess: error from the server for no request", zap.String("message", m.Error.Message))
		}
		return
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- response{result: m.Result, err: m.Error}
	}
}

// RunSandboxHelper serves the sandbox helper entry point when the program
// was started as one (the sandbox re-executes the program's binary to
// confine a command), exiting with the command's status; otherwise it
// returns at once. Call it first thing in main.
func RunSandboxHelper() {
	if len(os.Args) > 1 && os.Args[1] == policy.SandboxHelperArg {
		os.Exit(policy.SandboxMain(os.Args[2:]))
	}
}
