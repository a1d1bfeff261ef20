package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// Message is one message from the server as a test sees it.
type Message = rpctest.Msg

// Client is a protocol client over any transport. A background reader
// keeps every message in arrival order; ReadUntil returns the first that
// matches and leaves the others for later reads, so nothing is lost.
type Client struct {
	t    testing.TB
	name string

	write func([]byte) error
	close func() error

	// mu guards the fields that follow.
	mu      sync.Mutex
	queue   []Message
	ended   error // why reading stopped; nil while reading
	changed chan struct{}
	paused  bool
	resume  chan struct{}
	// received is every message in arrival order, read or not.
	received [][]byte

	nextID int
}

func newClient(t testing.TB, name string) *Client {
	c := &Client{t: t, name: name, changed: make(chan struct{}), resume: make(chan struct{})}
	t.Cleanup(func() { _ = c.close() })
	return c
}

func (c *Client) push(raw []byte) {
	m, err := rpctest.Decode(raw)
	if err != nil {
		c.t.Errorf("%s: server sent invalid JSON %q: %v", c.name, raw, err)
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, m)
	c.received = append(c.received, raw)
	c.signalLocked()
	c.mu.Unlock()
}

// Received returns every message the server sent so far, in arrival
// order, whether the test read it or not.
func (c *Client) Received() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.received...)
}

func (c *Client) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Client) end(err error) {
	if err == nil {
		err = io.EOF
	}
	c.mu.Lock()
	c.ended = err
	c.signalLocked()
	c.mu.Unlock()
}

// waitIfPaused blocks the reader while the client is paused.
func (c *Client) waitIfPaused() {
	c.mu.Lock()
	for c.paused {
		ch := c.resume
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
	}
	c.mu.Unlock()
}

// Pause stops reading from the connection (after the message being read,
// if any), so the server sees a client that does not keep up.
func (c *Client) Pause() {
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

// Resume starts reading again.
func (c *Client) Resume() {
	c.mu.Lock()
	if c.paused {
		c.paused = false
		close(c.resume)
		c.resume = make(chan struct{})
	}
	c.mu.Unlock()
}

func (c *Client) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		c.waitIfPaused()
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				c.t.Errorf("%s: message not terminated by a newline: %q", c.name, line)
			} else {
				c.push(line[:len(line)-1])
			}
		}
		if err != nil {
			c.end(err)
			return
		}
	}
}

// WSOptions adjust a WebSocket dial.
type WSOptions struct {
	Header http.Header
	// ReceiveBuffer, when set, fixes the socket's receive buffer size.
	ReceiveBuffer int
}

// DialWS connects to the daemon's WebSocket listener.
func (d *Daemon) DialWS(o WSOptions) *Client {
	d.t.Helper()
	dialer := &net.Dialer{}
	if o.ReceiveBuffer > 0 {
		dialer = dialerWithReceiveBuffer(o.ReceiveBuffer)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	return dialWS(d.t, "ws", d.URL("ws"), hc, o.Header)
}

// DialUnix connects to the daemon's Unix socket (WebSocket over it).
func (d *Daemon) DialUnix() *Client {
	d.t.Helper()
	path := d.UnixPath()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", path)
	}}}
	return dialWS(d.t, "unix", "ws://localhost/", hc, nil)
}

func dialWS(t testing.TB, name, url string, hc *http.Client, header http.Header) *Client {
	t.Helper()
	c, _, err := tryDialWS(t, name, url, hc, header)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return c
}

// TryDialWS connects to the daemon's WebSocket listener; when the upgrade
// is refused it returns the HTTP status instead of failing the test.
func (d *Daemon) TryDialWS() (*Client, int, error) {
	d.t.Helper()
	return tryDialWS(d.t, "ws", d.URL("ws"), nil, nil)
}

func tryDialWS(t testing.TB, name, url string, hc *http.Client, header http.Header) (*Client, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: header})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return nil, code, err
	}
	conn.SetReadLimit(1 << 30)
	c := newClient(t, name)
	c.write = func(b []byte) error {
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		defer cancel()
		return conn.Write(ctx, websocket.MessageText, b)
	}
	c.close = func() error { return conn.CloseNow() }
	go func() {
		for {
			c.waitIfPaused()
			typ, b, err := conn.Read(context.Background())
			if err != nil {
				c.end(err)
				return
			}
			if typ != websocket.MessageText {
				t.Errorf("%s: server sent a binary frame", name)
				continue
			}
			c.push(b)
		}
	}()
	return c, http.StatusSwitchingProtocols, nil
}

// SendRaw writes bytes as they are (stdio: include the newline).
func (c *Client) SendRaw(b []byte) {
	c.t.Helper()
	if err := c.write(b); err != nil {
		c.t.Fatalf("%s: write: %v", c.name, err)
	}
}

// Send writes v as one message (a line on stdio, a frame on sockets).
func (c *Client) Send(v any) {
	c.t.Helper()
	// Without HTML escaping, so that tests can check the server does not
	// escape either.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		c.t.Fatal(err)
	}
	b := buf.Bytes() // ends with '\n'
	if !strings.HasPrefix(c.name, "stdio") {
		b = b[:len(b)-1]
	}
	c.SendRaw(b)
}

// Notify sends a client notification.
func (c *Client) Notify(method string, params any) {
	c.t.Helper()
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	c.Send(m)
}

// Request sends a request with the next integer id and returns that id.
func (c *Client) Request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := json.RawMessage(strconv.Itoa(c.nextID))
	m := map[string]any{"id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	c.Send(m)
	return id
}

// Call sends a request and waits for its answer.
func (c *Client) Call(method string, params any) Message {
	c.t.Helper()
	return c.Response(c.Request(method, params))
}

// Response waits for the answer to the request with id.
func (c *Client) Response(id json.RawMessage) Message {
	c.t.Helper()
	return c.ReadUntil(func(m Message) bool { return m.Method == "" && string(m.ID) == string(id) })
}

// Next returns the next message in arrival order.
func (c *Client) Next() Message {
	c.t.Helper()
	return c.ReadUntil(func(Message) bool { return true })
}

// ReadUntil returns the first message matching pred, waiting up to
// WaitTimeout; the messages before it stay queued in order.
func (c *Client) ReadUntil(pred func(Message) bool) Message {
	c.t.Helper()
	m, err := c.ReadUntilTimeout(pred, WaitTimeout)
	if err != nil {
		c.t.Fatalf("%s: %v", c.name, err)
	}
	return m
}

// ReadUntilTimeout is ReadUntil with its own timeout; it returns an error
// instead of failing the test.
func (c *Client) ReadUntilTimeout(pred func(Message) bool, timeout time.Duration) (Message, error) {
	deadline := time.After(timeout)
	seen := 0
	for {
		c.mu.Lock()
		for ; seen < len(c.queue); seen++ {
			if pred(c.queue[seen]) {
				m := c.queue[seen]
				c.queue = append(c.queue[:seen:seen], c.queue[seen+1:]...)
				c.mu.Unlock()
				return m, nil
			}
		}
		ended, changed := c.ended, c.changed
		c.mu.Unlock()
		if ended != nil {
			return Message{}, errors.Join(errors.New("connection ended while waiting"), ended)
		}
		select {
		case <-changed:
		case <-deadline:
			return Message{}, errors.New("timed out waiting for a message")
		}
	}
}

// AssertNoMessage fails if a message is queued or arrives within
// QuietWindow.
func (c *Client) AssertNoMessage() {
	c.t.Helper()
	c.AssertNoMessageFor(QuietWindow)
}

// AssertNoMessageFor fails if a message is queued or arrives within window.
func (c *Client) AssertNoMessageFor(window time.Duration) {
	c.t.Helper()
	time.Sleep(window)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) > 0 {
		c.t.Fatalf("%s: unexpected message: %s", c.name, c.queue[0].Raw)
	}
}

// WaitClosed waits until the server ends the connection and returns why
// reading stopped.
func (c *Client) WaitClosed() error {
	c.t.Helper()
	deadline := time.After(WaitTimeout)
	for {
		c.mu.Lock()
		ended, changed := c.ended, c.changed
		c.mu.Unlock()
		if ended != nil {
			return ended
		}
		select {
		case <-changed:
		case <-deadline:
			c.t.Fatalf("%s: connection still open after %v", c.name, WaitTimeout)
		}
	}
}

// Close closes the client's side of the connection.
func (c *Client) Close() { _ = c.close() }

// Initialize runs the handshake (initialize, then initialized) and returns
// the initialize answer. caps may be nil.
func (c *Client) Initialize(name string, caps map[string]any) Message {
	c.t.Helper()
	p := map[string]any{"clientInfo": map[string]any{"name": name, "title": nil, "version": "0.0.1"}}
	if caps != nil {
		p["capabilities"] = caps
	}
	m := c.Call("initialize", p)
	if m.Error != nil {
		c.t.Fatalf("%s: initialize failed: %s", c.name, m.Raw)
	}
	c.Notify("initialized", nil)
	return m
}

// WantError fails unless m is an error with code and (when not empty)
// message.
func WantError(t testing.TB, m Message, code int64, message string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("want error %d %q, got %s", code, message, m.Raw)
	}
	if m.Error.Code != code || (message != "" && m.Error.Message != message) {
		t.Fatalf("want error %d %q, got %d %q", code, message, m.Error.Code, m.Error.Message)
	}
}

// WantResult fails unless m is a result, and returns it.
func WantResult(t testing.TB, m Message) json.RawMessage {
	t.Helper()
	if m.Error != nil || m.Result == nil {
		t.Fatalf("want a result, got %s", m.Raw)
	}
	return m.Result
}
