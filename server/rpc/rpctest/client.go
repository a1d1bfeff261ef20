// Package rpctest is a test client for the engine: a connection over an
// in-memory pipe that decodes what the server sends and keeps every
// message it skipped while waiting for another, in order. It is for tests
// only.
package rpctest

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/server/transport"
)

// WaitTimeout is how long a test waits for something that should happen;
// generous, so that a loaded machine does not fail tests.
const WaitTimeout = 10 * time.Second

// QuietWindow is how long a test watches for something that must not
// happen.
const QuietWindow = 200 * time.Millisecond

// Msg is a decoded server message as a test sees it.
type Msg struct {
	Raw []byte
	// Fields are the top-level members, raw.
	Fields map[string]json.RawMessage
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// IsNotification reports whether m is a server notification.
func (m Msg) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsServerRequest reports whether m is a server→client request.
func (m Msg) IsServerRequest() bool { return m.Method != "" && m.ID != nil }

// Decode decodes a server message; it fails only when raw is not a JSON
// object.
func Decode(raw []byte) (Msg, error) {
	m := Msg{Raw: raw}
	if err := json.Unmarshal(raw, &m.Fields); err != nil {
		return m, err
	}
	m.ID = m.Fields["id"]
	if v, ok := m.Fields["method"]; ok {
		_ = json.Unmarshal(v, &m.Method)
	}
	m.Params = m.Fields["params"]
	m.Result = m.Fields["result"]
	if v, ok := m.Fields["error"]; ok {
		_ = json.Unmarshal(v, &m.Error)
	}
	return m, nil
}

// Parse decodes a server message, failing t when it is not JSON.
func Parse(t testing.TB, raw []byte) Msg {
	t.Helper()
	m, err := Decode(raw)
	if err != nil {
		t.Fatalf("server sent invalid JSON %q: %v", raw, err)
	}
	return m
}

// Client is one connection to an in-process server.
type Client struct {
	t      testing.TB
	st     transport.Stream
	in     chan []byte
	mu     sync.Mutex
	skip   []Msg
	nextID int
	done   chan struct{}
}

// Connect opens a connection served by serve (a server's ServeStream) over
// an in-memory pipe. It is closed when the test ends, and the test fails if
// the server side does not end then.
func Connect(t testing.TB, serve func(transport.Stream)) *Client {
	t.Helper()
	srvEnd, cliEnd := transport.Pipe(64)
	served := make(chan struct{})
	go func() {
		serve(srvEnd)
		close(served)
	}()
	c := &Client{t: t, st: cliEnd, in: make(chan []byte, 1024), done: served}
	go func() {
		defer close(c.in)
		for {
			b, err := cliEnd.Read(context.Background())
			if err != nil {
				return
			}
			c.in <- b
		}
	}()
	t.Cleanup(func() {
		_ = cliEnd.Close()
		select {
		case <-served:
		case <-time.After(WaitTimeout):
			t.Errorf("connection did not end after the client closed")
		}
	})
	return c
}

// Close closes the client's end.
func (c *Client) Close() { _ = c.st.Close() }

// Served is closed once the server side of the connection has ended.
func (c *Client) Served() <-chan struct{} { return c.done }

// SendRaw writes one message as is.
func (c *Client) SendRaw(s string) {
	c.t.Helper()
	if err := c.st.Write(context.Background(), []byte(s)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// Send writes v as JSON.
func (c *Client) Send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.SendRaw(string(b))
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
func (c *Client) Call(method string, params any) Msg {
	c.t.Helper()
	id := c.Request(method, params)
	return c.Response(id)
}

// Response waits for the answer to id.
func (c *Client) Response(id json.RawMessage) Msg {
	c.t.Helper()
	return c.ReadUntil(func(m Msg) bool { return m.Method == "" && string(m.ID) == string(id) })
}

// Answer sends the result of server request id.
func (c *Client) Answer(id json.RawMessage, result any) {
	c.t.Helper()
	c.Send(map[string]any{"id": id, "result": result})
}

// ReadUntil returns the first message (skipped ones first) matching pred;
// the others stay buffered in order.
func (c *Client) ReadUntil(pred func(Msg) bool) Msg {
	c.t.Helper()
	c.mu.Lock()
	for i, m := range c.skip {
		if pred(m) {
			c.skip = append(c.skip[:i:i], c.skip[i+1:]...)
			c.mu.Unlock()
			return m
		}
	}
	c.mu.Unlock()
	deadline := time.After(WaitTimeout)
	for {
		select {
		case b, ok := <-c.in:
			if !ok {
				c.t.Fatalf("connection ended while waiting")
			}
			m := Parse(c.t, b)
			if pred(m) {
				return m
			}
			c.mu.Lock()
			c.skip = append(c.skip, m)
			c.mu.Unlock()
		case <-deadline:
			c.t.Fatalf("timed out waiting for a message; skipped: %d", len(c.skip))
		}
	}
}

// DropSkipped forgets the messages ReadUntil skipped, so that Next and
// AssertNoMessage look only at what arrives from now on.
func (c *Client) DropSkipped() {
	c.mu.Lock()
	c.skip = nil
	c.mu.Unlock()
}

// Next returns the next message in arrival order.
func (c *Client) Next() Msg {
	c.t.Helper()
	return c.ReadUntil(func(Msg) bool { return true })
}

// AssertNoMessage fails if any message arrives within QuietWindow.
func (c *Client) AssertNoMessage() {
	c.t.Helper()
	c.mu.Lock()
	n := len(c.skip)
	c.mu.Unlock()
	if n > 0 {
		c.t.Fatalf("unexpected buffered message: %s", c.skip[0].Raw)
	}
	select {
	case b, ok := <-c.in:
		if ok {
			c.t.Fatalf("unexpected message: %s", b)
		}
	case <-time.After(QuietWindow):
	}
}

// Initialize runs the handshake as client "unit" 1.2.3 with caps (nil:
// none) and sends initialized.
func (c *Client) Initialize(caps map[string]any) Msg {
	c.t.Helper()
	p := map[string]any{"clientInfo": map[string]any{"name": "unit", "version": "1.2.3"}}
	if caps != nil {
		p["capabilities"] = caps
	}
	m := c.Call("initialize", p)
	if m.Error != nil {
		c.t.Fatalf("initialize failed: %s", m.Raw)
	}
	c.Send(map[string]any{"method": "initialized"})
	return m
}

// WantError fails unless m is an error with code and, when message is
// not empty, that message.
func WantError(t testing.TB, m Msg, code int64, message string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("want error %d %q, got %s", code, message, m.Raw)
	}
	if m.Error.Code != code || (message != "" && m.Error.Message != message) {
		t.Fatalf("want error %d %q, got %d %q", code, message, m.Error.Code, m.Error.Message)
	}
}
