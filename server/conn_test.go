package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
)

func TestInitializeResultAndGate(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/echo", func(ctx context.Context, c *Conn, params any) (any, error) { return params, nil })
	c := connect(t, s)

	wantError(t, c.call("x/echo", map[string]any{}), protocol.CodeInvalidRequest, "Not initialized")

	m := c.initialize(nil)
	var res initializeResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.UserAgent, "unit/"+Version+" (") || !strings.HasSuffix(res.UserAgent, "(unit; 1.2.3)") {
		t.Errorf("userAgent %q", res.UserAgent)
	}
	if res.CodexHome != s.Config().Home || res.PlatformFamily != "unix" || res.PlatformOs != runtime.GOOS {
		t.Errorf("result %+v", res)
	}
	if _, ok := m.fields["emittedAtMs"]; ok {
		t.Errorf("response carries emittedAtMs: %s", m.raw)
	}

	m = c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "unit", "version": "1"}})
	wantError(t, m, protocol.CodeInvalidRequest, "Already initialized")

	// Sent raw: encoding/json on the client side would escape it.
	c.sendRaw(`{"id":99,"method":"x/echo","params":{"a":"<b>&"}}`)
	m = c.response(json.RawMessage("99"))
	if string(m.Result) != `{"a":"<b>&"}` {
		t.Errorf("result %s: want compact JSON without HTML escaping", m.Result)
	}
}

func TestInitializeValidation(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	cases := []struct {
		params any
		want   string
	}{
		{nil, "Invalid request: missing field `params`"},
		{map[string]any{}, "Invalid request: missing field `clientInfo`"},
		{map[string]any{"clientInfo": map[string]any{"version": "1"}}, "Invalid request: missing field `name`"},
		{map[string]any{"clientInfo": map[string]any{"name": "a\rb", "version": "1"}}, "Invalid clientInfo.name: 'a\rb'. Must be a valid HTTP header value."},
	}
	for _, tc := range cases {
		wantError(t, c.call("initialize", tc.params), protocol.CodeInvalidRequest, tc.want)
	}
	// A failed initialize leaves the connection uninitialized; a good
	// one still works.
	c.initialize(nil)
}

func TestConnectionsAreIndependent(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/id", func(ctx context.Context, c *Conn, params any) (any, error) { return c.ID(), nil })
	a, b := connect(t, s), connect(t, s)
	a.initialize(nil)
	wantError(t, b.call("x/id", nil), protocol.CodeInvalidRequest, "Not initialized")
	b.initialize(nil)
	ra, rb := a.call("x/id", nil), b.call("x/id", nil)
	if string(ra.Result) == string(rb.Result) || ra.Error != nil || rb.Error != nil {
		t.Fatalf("same connection? %s %s", ra.raw, rb.raw)
	}
	if len(s.Conns()) != 2 {
		t.Fatalf("Conns: %d", len(s.Conns()))
	}
}

func TestUnknownMethod(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	c.initialize(nil)
	m := c.call("foo/bar", map[string]any{})
	wantError(t, m, protocol.CodeInvalidRequest, "")
	if !strings.HasPrefix(m.Error.Message, "Invalid request: unknown variant `foo/bar`, expected one of `initialize`, ") {
		t.Fatalf("message %q", m.Error.Message)
	}
	for _, known := range protocol.Methods(protocol.ClientRequest) {
		if !strings.Contains(m.Error.Message, "`"+known.Method+"`") {
			t.Errorf("message does not list %s", known.Method)
		}
	}
	// A protocol method without a handler is not "unknown".
	if m := unimplementedMethod(t, s); m != "" {
		wantError(t, c.call(m, map[string]any{}), protocol.CodeMethodNotFound, "`"+m+"` is not implemented by agentd")
	}
}

// unimplementedMethod returns a stable protocol method without a handler
// whose params may be empty, or "" when every method is implemented.
func unimplementedMethod(t *testing.T, s *Server) string {
	t.Helper()
	for _, m := range protocol.Methods(protocol.ClientRequest) {
		if h, _ := s.lookup(m.Method); h != nil || m.Experimental || m.Method == "initialize" {
			continue
		}
		if _, err := protocol.DecodeParams(m, json.RawMessage(`{}`)); err == nil {
			return m.Method
		}
	}
	t.Log("every protocol method is implemented")
	return ""
}

// Params are validated and gated even for methods not implemented yet, in
// the reference's order: decoding first, then experimental gating.
func TestGatingOfFieldsAndMethods(t *testing.T) {
	s := newTestServer(t, nil)
	plain, exp := connect(t, s), connect(t, s)
	plain.initialize(nil)
	exp.initialize(map[string]any{"experimentalApi": true})
	wantError(t, plain.call("thread/start", map[string]any{"experimentalRawEvents": true}),
		protocol.CodeInvalidRequest, "thread/start.experimentalRawEvents requires experimentalApi capability")
	wantError(t, plain.call("thread/start", map[string]any{"cwd": 123}), protocol.CodeInvalidRequest, "Invalid request: invalid type: integer `123`, expected a string")
	wantError(t, plain.call("collaborationMode/list", map[string]any{}),
		protocol.CodeInvalidRequest, "collaborationMode/list requires experimentalApi capability")
	for _, m := range []msg{
		exp.call("thread/start", map[string]any{"experimentalRawEvents": true}),
		exp.call("collaborationMode/list", map[string]any{}),
	} {
		if m.Error != nil && strings.Contains(m.Error.Message, "requires experimentalApi") {
			t.Errorf("experimental client refused: %s", m.raw)
		}
	}
}

func TestHandlerErrorsAndPanics(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/plain", func(ctx context.Context, c *Conn, params any) (any, error) {
		return nil, errors.New("No such file or directory (os error 2)")
	})
	s.Handle("x/coded", func(ctx context.Context, c *Conn, params any) (any, error) {
		return nil, fmt.Errorf("wrapped: %w", protocol.InvalidRequest("thread not found: x").WithData(map[string]string{"k": "v"}))
	})
	s.Handle("x/panic", func(ctx context.Context, c *Conn, params any) (any, error) { panic("boom") })
	s.Handle("x/nil", func(ctx context.Context, c *Conn, params any) (any, error) { return nil, nil })
	s.Handle("x/bad", func(ctx context.Context, c *Conn, params any) (any, error) { return func() {}, nil })
	c := connect(t, s)
	c.initialize(nil)
	wantError(t, c.call("x/plain", nil), protocol.CodeInternalError, "No such file or directory (os error 2)")
	m := c.call("x/coded", nil)
	wantError(t, m, protocol.CodeInvalidRequest, "thread not found: x")
	if string(m.Error.Data) != `{"k":"v"}` {
		t.Errorf("data %s", m.Error.Data)
	}
	wantError(t, c.call("x/panic", nil), protocol.CodeInternalError, "internal error in x/panic")
	if m := c.call("x/nil", nil); string(m.Result) != "{}" {
		t.Errorf("nil result sent as %s", m.Result)
	}
	wantError(t, c.call("x/bad", nil), protocol.CodeInternalError, "")
	// The connection survives all of that.
	if m := c.call("x/nil", nil); m.Error != nil {
		t.Fatalf("connection broken: %s", m.raw)
	}
}

func TestOptOutSuppressesOnlyThatConnection(t *testing.T) {
	s := newTestServer(t, nil)
	a, b := connect(t, s), connect(t, s)
	a.initialize(map[string]any{"optOutNotificationMethods": []string{"thread/started", "no/such"}})
	b.initialize(nil)
	s.Broadcast("thread/started", map[string]string{"n": "1"})
	s.Broadcast("turn/started", map[string]string{"n": "2"})
	if m := a.next(); m.Method != "turn/started" {
		t.Fatalf("a got %s", m.raw)
	}
	if m := b.next(); m.Method != "thread/started" {
		t.Fatalf("b got %s", m.raw)
	}
	if m := b.next(); m.Method != "turn/started" {
		t.Fatalf("b got %s", m.raw)
	}
	for _, cn := range s.Conns() {
		cn.Notify("thread/started", nil)
	}
	if m := b.next(); m.Method != "thread/started" {
		t.Fatalf("b got %s", m.raw)
	}
	a.assertNoMessage()
}

func TestNotificationShape(t *testing.T) {
	s := newTestServer(t, nil)
	c := connect(t, s)
	c.initialize(nil)
	s.Broadcast("x/note", map[string]string{"html": "<&>"})
	m := c.next()
	if m.Method != "x/note" || string(m.Params) != `{"html":"<&>"}` {
		t.Fatalf("got %s", m.raw)
	}
	if _, ok := m.fields["jsonrpc"]; ok {
		t.Fatalf("jsonrpc member sent: %s", m.raw)
	}
	var ms int64
	if err := json.Unmarshal(m.fields["emittedAtMs"], &ms); err != nil || ms < 1_700_000_000_000 {
		t.Fatalf("emittedAtMs %s", m.fields["emittedAtMs"])
	}
}

func TestConfigWarningsFollowInitializeResult(t *testing.T) {
	s := newTestServer(t, func(cfg *config.Config) {
		cfg.Warnings = []config.Warning{{Summary: "first"}, {Summary: "second", Details: "why"}}
	})
	c := connect(t, s)
	id := c.request("initialize", map[string]any{"clientInfo": map[string]any{"name": "u", "version": "1"}})
	if m := c.next(); string(m.ID) != string(id) || m.Result == nil {
		t.Fatalf("first message %s, want the initialize result", m.raw)
	}
	m := c.next()
	if m.Method != "configWarning" || string(m.Params) != `{"summary":"first","details":null}` {
		t.Fatalf("got %s", m.raw)
	}
	m = c.next()
	if m.Method != "configWarning" || string(m.Params) != `{"summary":"second","details":"why"}` {
		t.Fatalf("got %s", m.raw)
	}
}

func TestAfterResponseOrdersResultBeforeNotification(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/start", func(ctx context.Context, c *Conn, params any) (any, error) {
		c.AfterResponse(ctx, func() { c.Notify("x/started", map[string]int{"n": 1}) })
		c.AfterResponse(ctx, func() { c.Notify("x/started", map[string]int{"n": 2}) })
		return map[string]string{"ok": "yes"}, nil
	})
	s.Handle("x/fail", func(ctx context.Context, c *Conn, params any) (any, error) {
		c.AfterResponse(ctx, func() { c.Notify("x/started", nil) })
		return nil, errors.New("no")
	})
	c := connect(t, s)
	c.initialize(nil)
	for i := 0; i < 20; i++ {
		id := c.request("x/start", nil)
		if m := c.next(); string(m.ID) != string(id) {
			t.Fatalf("first %s, want the result", m.raw)
		}
		if m := c.next(); m.Method != "x/started" || string(m.Params) != `{"n":1}` {
			t.Fatalf("got %s", m.raw)
		}
		if m := c.next(); string(m.Params) != `{"n":2}` {
			t.Fatalf("got %s", m.raw)
		}
	}
	wantError(t, c.next2(c.request("x/fail", nil)), protocol.CodeInternalError, "no")
	c.assertNoMessage()
}

// next2 returns the next message, checking it answers id.
func (c *testClient) next2(id json.RawMessage) msg {
	c.t.Helper()
	m := c.next()
	if string(m.ID) != string(id) {
		c.t.Fatalf("got %s, want the answer to %s", m.raw, id)
	}
	return m
}

func TestIDsEchoedWithTheirType(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/nil", func(ctx context.Context, c *Conn, params any) (any, error) { return nil, nil })
	c := connect(t, s)
	c.initialize(nil)
	for _, id := range []string{`"abc"`, `"7"`, `0`, `-5`, `9223372036854775807`, `"\u00e9<"`} {
		c.sendRaw(`{"jsonrpc":"2.0","id":` + id + `,"method":"x/nil","params":{}}`)
		m := c.next()
		if string(m.ID) != id {
			t.Errorf("sent id %s, got %s", id, m.raw)
		}
	}
}

func TestMalformedInputIsAnsweredAndReadingGoesOn(t *testing.T) {
	s := newTestServer(t, nil)
	s.Handle("x/nil", func(ctx context.Context, c *Conn, params any) (any, error) { return nil, nil })
	c := connect(t, s)
	c.initialize(nil)
	cases := []struct {
		in   string
		code int64
		id   string
	}{
		{`{"id":1,"method":`, protocol.CodeParseError, "null"},
		{`[{"id":1,"method":"x/nil"}]`, protocol.CodeInvalidRequest, "null"},
		{`42`, protocol.CodeInvalidRequest, "null"},
		{`null`, protocol.CodeInvalidRequest, "null"},
		{`{}`, protocol.CodeInvalidRequest, "null"},
		{`{"id":1.5,"method":"x/nil"}`, protocol.CodeInvalidRequest, "null"},
		{`{"id":true,"method":"x/nil"}`, protocol.CodeInvalidRequest, "null"},
		{`{"id":3,"method":7}`, protocol.CodeInvalidRequest, "3"},
		{`{"result":{}}`, protocol.CodeInvalidRequest, "null"},
		{`{"id":1} {"id":2}`, protocol.CodeParseError, "null"},
	}
	for _, tc := range cases {
		c.sendRaw(tc.in)
		m := c.next()
		if m.Error == nil || m.Error.Code != tc.code || string(m.ID) != tc.id {
			t.Errorf("%s: got %s", tc.in, m.raw)
		}
	}
	// id null is a notification: no answer, as in the reference.
	c.sendRaw(`{"id":null,"method":"x/nil","params":{}}`)
	// Unknown notifications and stray responses are ignored.
	c.sendRaw(`{"method":"foo/notify","params":{}}`)
	c.sendRaw(`{"id":12345,"result":{}}`)
	c.sendRaw(`{"id":"s","error":{"code":1,"message":"x"}}`)
	c.assertNoMessage()
	if m := c.call("x/nil", nil); m.Error != nil {
		t.Fatalf("connection broken: %s", m.raw)
	}
}

func TestPerConnectionOverload(t *testing.T) {
	s := newTestServer(t, func(cfg *config.Config) { cfg.Server.MaxInflightPerConnection = 2 })
	release := make(chan struct{})
	var started atomic.Int32
	s.Handle("x/block", func(ctx context.Context, c *Conn, params any) (any, error) {
		started.Add(1)
		<-release
		return "done", nil
	})
	a, b := connect(t, s), connect(t, s)
	a.initialize(nil)
	b.initialize(nil)
	id1, id2 := a.request("x/block", nil), a.request("x/block", nil)
	for i := 0; i < 5; i++ {
		m := a.call("x/block", nil)
		wantError(t, m, protocol.CodeOverloaded, "Server overloaded; retry later.")
		if string(m.Error.Data) != `{"retryable":true}` {
			t.Fatalf("data %s", m.Error.Data)
		}
	}
	// Another connection has its own budget.
	id3 := b.request("x/block", nil)
	close(release)
	for _, id := range []json.RawMessage{id1, id2} {
		if m := a.response(id); string(m.Result) != `"done"` {
			t.Fatalf("got %s", m.raw)
		}
	}
	if m := b.response(id3); string(m.Result) != `"done"` {
		t.Fatalf("got %s", m.raw)
	}
	// Slots came back.
	if m := a.call("x/block", nil); string(m.Result) != `"done"` {
		t.Fatalf("got %s", m.raw)
	}
}

func TestGlobalOverload(t *testing.T) {
	s := newTestServer(t, func(cfg *config.Config) { cfg.Server.MaxInflight = 1 })
	release, started := make(chan struct{}), make(chan struct{}, 1)
	s.Handle("x/block", func(ctx context.Context, c *Conn, params any) (any, error) {
		started <- struct{}{}
		<-release
		return "done", nil
	})
	a, b := connect(t, s), connect(t, s)
	a.initialize(nil)
	b.initialize(nil)
	id := a.request("x/block", nil)
	<-started
	wantError(t, b.call("x/block", nil), protocol.CodeOverloaded, "Server overloaded; retry later.")
	close(release)
	if m := a.response(id); m.Error != nil {
		t.Fatalf("got %s", m.raw)
	}
}

func TestExperimentalMethodGating(t *testing.T) {
	var exp *protocol.MethodInfo
	for _, m := range protocol.Methods(protocol.ClientRequest) {
		if m.Experimental {
			exp = m
			break
		}
	}
	if exp == nil {
		t.Skip("the protocol table has no experimental client request yet")
	}
	s := newTestServer(t, nil)
	s.Handle(exp.Method, func(ctx context.Context, c *Conn, params any) (any, error) { return nil, nil })
	plain, expc := connect(t, s), connect(t, s)
	plain.initialize(nil)
	expc.initialize(map[string]any{"experimentalApi": true})
	m := plain.call(exp.Method, map[string]any{})
	if m.Error == nil || m.Error.Code != protocol.CodeInvalidRequest {
		t.Fatalf("got %s", m.raw)
	}
	if m.Error.Message != exp.Method+" requires experimentalApi capability" && !strings.HasPrefix(m.Error.Message, "Invalid request: missing field") {
		t.Fatalf("got %s", m.raw)
	}
	if m := expc.call(exp.Method, map[string]any{}); m.Error != nil && strings.Contains(m.Error.Message, "requires experimentalApi") {
		t.Fatalf("experimental client was refused: %s", m.raw)
	}
}
