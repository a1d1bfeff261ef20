package server

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/transport"
	"go.uber.org/zap/zaptest"
)

// waitTimeout is how long a test waits for something that should happen;
// generous, so that a loaded machine does not fail tests.
const waitTimeout = 10 * time.Second

// quietWindow is how long a test watches for something that must not
// happen.
const quietWindow = 200 * time.Millisecond

// msg is a decoded server message as a test sees it.
type msg struct {
	raw    []byte
	fields map[string]json.RawMessage
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

func parseMsg(t testing.TB, raw []byte) msg {
	t.Helper()
	var m msg
	m.raw = raw
	if err := json.Unmarshal(raw, &m.fields); err != nil {
		t.Fatalf("server sent invalid JSON %q: %v", raw, err)
	}
	m.ID = m.fields["id"]
	if v, ok := m.fields["method"]; ok {
		_ = json.Unmarshal(v, &m.Method)
	}
	m.Params = m.fields["params"]
	m.Result = m.fields["result"]
	if v, ok := m.fields["error"]; ok {
		_ = json.Unmarshal(v, &m.Error)
	}
	return m
}

// testClient talks to an in-process server over an in-memory pipe. It
// keeps every message it skipped while waiting for another, in order.
type testClient struct {
	t      testing.TB
	st     transport.Stream
	in     chan []byte
	mu     sync.Mutex
	skip   []msg
	nextID int
	done   chan struct{}
}

func newTestServer(t testing.TB, mutate func(*config.Config)) *Server {
	t.Helper()
	cfg := config.Default(t.TempDir())
	if mutate != nil {
		mutate(cfg)
	}
	return New(cfg, zaptest.NewLogger(t))
}

// connect opens an in-process connection to s.
func connect(t testing.TB, s *Server) *testClient {
	t.Helper()
	srvEnd, cliEnd := transport.Pipe(64)
	served := make(chan struct{})
	go func() {
		s.ServeStream(srvEnd)
		close(served)
	}()
	c := &testClient{t: t, st: cliEnd, in: make(chan []byte, 1024), done: served}
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
		case <-time.After(waitTimeout):
			t.Errorf("connection did not end after the client closed")
		}
	})
	return c
}

func (c *testClient) sendRaw(s string) {
	c.t.Helper()
	if err := c.st.Write(context.Background(), []byte(s)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *testClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(string(b))
}

// request sends a request with the next integer id and returns that id.
func (c *testClient) request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := json.RawMessage(strconv.Itoa(c.nextID))
	m := map[string]any{"id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	c.send(m)
	return id
}

// call sends a request and waits for its answer.
func (c *testClient) call(method string, params any) msg {
	c.t.Helper()
	id := c.request(method, params)
	return c.response(id)
}

// response waits for the answer to id.
func (c *testClient) response(id json.RawMessage) msg {
	c.t.Helper()
	return c.readUntil(func(m msg) bool { return m.Method == "" && string(m.ID) == string(id) })
}

// readUntil returns the first message (skipped ones first) matching pred;
// the others stay buffered in order.
func (c *testClient) readUntil(pred func(msg) bool) msg {
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
	deadline := time.After(waitTimeout)
	for {
		select {
		case b, ok := <-c.in:
			if !ok {
				c.t.Fatalf("connection ended while waiting")
			}
			m := parseMsg(c.t, b)
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

// next returns the next message in arrival order.
func (c *testClient) next() msg {
	c.t.Helper()
	return c.readUntil(func(msg) bool { return true })
}

// assertNoMessage fails if any message arrives within the window.
func (c *testClient) assertNoMessage() {
	c.t.Helper()
	c.mu.Lock()
	n := len(c.skip)
	c.mu.Unlock()
	if n > 0 {
		c.t.Fatalf("unexpected buffered message: %s", c.skip[0].raw)
	}
	select {
	case b, ok := <-c.in:
		if ok {
			c.t.Fatalf("unexpected message: %s", b)
		}
	case <-time.After(quietWindow):
	}
}

func (c *testClient) initialize(caps map[string]any) msg {
	c.t.Helper()
	p := map[string]any{"clientInfo": map[string]any{"name": "unit", "version": "1.2.3"}}
	if caps != nil {
		p["capabilities"] = caps
	}
	m := c.call("initialize", p)
	if m.Error != nil {
		c.t.Fatalf("initialize failed: %s", m.raw)
	}
	c.send(map[string]any{"method": "initialized"})
	return m
}

func wantError(t testing.TB, m msg, code int64, message string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("want error %d %q, got %s", code, message, m.raw)
	}
	if m.Error.Code != code || (message != "" && m.Error.Message != message) {
		t.Fatalf("want error %d %q, got %d %q", code, message, m.Error.Code, m.Error.Message)
	}
}
