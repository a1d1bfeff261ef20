package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/schema/refschema"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

func TestInitializeResultAndGate(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/echo", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) { return params, nil })
	c := rpctest.Connect(t, s.ServeStream)

	rpctest.WantError(t, c.Call("x/echo", map[string]any{}), protocol.CodeInvalidRequest, "Not initialized")

	m := c.Initialize(nil)
	if string(m.Result) != `{"userAgent":"unit/1.2.3"}` {
		t.Errorf("result %s, want what Options.Initialize made", m.Result)
	}
	if _, ok := m.Fields["emittedAtMs"]; ok {
		t.Errorf("response carries emittedAtMs: %s", m.Raw)
	}

	m = c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": "unit", "version": "1"}})
	rpctest.WantError(t, m, protocol.CodeInvalidRequest, "Already initialized")

	// Sent raw: encoding/json on the client side would escape it.
	c.SendRaw(`{"id":99,"method":"x/echo","params":{"a":"<b>&"}}`)
	m = c.Response(json.RawMessage("99"))
	if string(m.Result) != `{"a":"<b>&"}` {
		t.Errorf("result %s: want compact JSON without HTML escaping", m.Result)
	}
}

func TestInitializeValidation(t *testing.T) {
	s := newTestServer(t, nil)
	c := rpctest.Connect(t, s.ServeStream)
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
		rpctest.WantError(t, c.Call("initialize", tc.params), protocol.CodeInvalidRequest, tc.want)
	}
	// A failed initialize leaves the connection uninitialized; a good
	// one still works.
	c.Initialize(nil)
}

func TestConnectionsAreIndependent(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/id", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		return r.Conn().ID(), nil
	})
	a, b := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	a.Initialize(nil)
	rpctest.WantError(t, b.Call("x/id", nil), protocol.CodeInvalidRequest, "Not initialized")
	b.Initialize(nil)
	ra, rb := a.Call("x/id", nil), b.Call("x/id", nil)
	if string(ra.Result) == string(rb.Result) || ra.Error != nil || rb.Error != nil {
		t.Fatalf("same connection? %s %s", ra.Raw, rb.Raw)
	}
	if len(s.Conns()) != 2 {
		t.Fatalf("Conns: %d", len(s.Conns()))
	}
}

func TestUnknownMethod(t *testing.T) {
	s := newTestServer(t, nil)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	m := c.Call("foo/bar", map[string]any{})
	rpctest.WantError(t, m, protocol.CodeInvalidRequest, "")
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
		rpctest.WantError(t, c.Call(m, map[string]any{}), protocol.CodeMethodNotFound, "`"+m+"` is not implemented by agentd")
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
	plain, exp := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	plain.Initialize(nil)
	exp.Initialize(map[string]any{"experimentalApi": true})
	rpctest.WantError(t, plain.Call("thread/start", map[string]any{"experimentalRawEvents": true}),
		protocol.CodeInvalidRequest, "thread/start.experimentalRawEvents requires experimentalApi capability")
	rpctest.WantError(t, plain.Call("thread/start", map[string]any{"cwd": 123}), protocol.CodeInvalidRequest, "Invalid request: invalid type: integer `123`, expected a string")
	rpctest.WantError(t, plain.Call("collaborationMode/list", map[string]any{}),
		protocol.CodeInvalidRequest, "collaborationMode/list requires experimentalApi capability")
	for _, m := range []rpctest.Msg{
		exp.Call("thread/start", map[string]any{"experimentalRawEvents": true}),
		exp.Call("collaborationMode/list", map[string]any{}),
	} {
		if m.Error != nil && strings.Contains(m.Error.Message, "requires experimentalApi") {
			t.Errorf("experimental client refused: %s", m.Raw)
		}
	}
}

func TestHandlerErrorsAndPanics(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/plain", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		return nil, errors.New("No such file or directory (os error 2)")
	})
	Handle(s, "x/coded", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		return nil, fmt.Errorf("wrapped: %w", protocol.InvalidRequest("thread not found: x").WithData(map[string]string{"k": "v"}))
	})
	Handle(s, "x/panic", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) { panic("boom") })
	Handle(s, "x/nil", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) { return nil, nil })
	Handle(s, "x/bad", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) { return func() {}, nil })
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	rpctest.WantError(t, c.Call("x/plain", nil), protocol.CodeInternalError, "No such file or directory (os error 2)")
	m := c.Call("x/coded", nil)
	rpctest.WantError(t, m, protocol.CodeInvalidRequest, "thread not found: x")
	if string(m.Error.Data) != `{"k":"v"}` {
		t.Errorf("data %s", m.Error.Data)
	}
	rpctest.WantError(t, c.Call("x/panic", nil), protocol.CodeInternalError, "internal error in x/panic")
	if m := c.Call("x/nil", nil); string(m.Result) != "{}" {
		t.Errorf("nil result sent as %s", m.Result)
	}
	rpctest.WantError(t, c.Call("x/bad", nil), protocol.CodeInternalError, "")
	// The connection survives all of that.
	if m := c.Call("x/nil", nil); m.Error != nil {
		t.Fatalf("connection broken: %s", m.Raw)
	}
}

func TestOptOutSuppressesOnlyThatConnection(t *testing.T) {
	s := newTestServer(t, nil)
	a, b := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	a.Initialize(map[string]any{"optOutNotificationMethods": []string{"thread/started", "no/such"}})
	b.Initialize(nil)
	s.Broadcast("thread/started", map[string]string{"n": "1"})
	s.Broadcast("turn/started", map[string]string{"n": "2"})
	if m := a.Next(); m.Method != "turn/started" {
		t.Fatalf("a got %s", m.Raw)
	}
	if m := b.Next(); m.Method != "thread/started" {
		t.Fatalf("b got %s", m.Raw)
	}
	if m := b.Next(); m.Method != "turn/started" {
		t.Fatalf("b got %s", m.Raw)
	}
	for _, cn := range s.Conns() {
		cn.Notify("thread/started", nil)
	}
	if m := b.Next(); m.Method != "thread/started" {
		t.Fatalf("b got %s", m.Raw)
	}
	a.AssertNoMessage()
}

func TestNotificationShape(t *testing.T) {
	s := newTestServer(t, nil)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	s.Broadcast("x/note", map[string]string{"html": "<&>"})
	m := c.Next()
	if m.Method != "x/note" || string(m.Params) != `{"html":"<&>"}` {
		t.Fatalf("got %s", m.Raw)
	}
	if _, ok := m.Fields["jsonrpc"]; ok {
		t.Fatalf("jsonrpc member sent: %s", m.Raw)
	}
	var ms int64
	if err := json.Unmarshal(m.Fields["emittedAtMs"], &ms); err != nil || ms < 1_700_000_000_000 {
		t.Fatalf("emittedAtMs %s", m.Fields["emittedAtMs"])
	}
}

func TestGreetingFollowsInitializeResult(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Initialize = func(ClientInfo) (any, []Notification) {
			why := "why"
			first, _ := NewNotification("configWarning", protocol.ConfigWarningNotification{Summary: "first"})
			second, _ := NewNotification("configWarning", protocol.ConfigWarningNotification{Summary: "second", Details: &why})
			return protocol.Empty{}, []Notification{first, second}
		}
	})
	c := rpctest.Connect(t, s.ServeStream)
	id := c.Request("initialize", map[string]any{"clientInfo": map[string]any{"name": "u", "version": "1"}})
	if m := c.Next(); string(m.ID) != string(id) || m.Result == nil {
		t.Fatalf("first message %s, want the initialize result", m.Raw)
	}
	m := c.Next()
	if m.Method != "configWarning" || string(m.Params) != `{"summary":"first","details":null}` {
		t.Fatalf("got %s", m.Raw)
	}
	m = c.Next()
	if m.Method != "configWarning" || string(m.Params) != `{"summary":"second","details":"why"}` {
		t.Fatalf("got %s", m.Raw)
	}
}

func TestThenFollowsTheResultOnly(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/start", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		r.Then("x/started", map[string]int{"n": 1})
		r.Then("x/started", map[string]int{"n": 2})
		r.ThenBroadcast("x/all", nil)
		return map[string]string{"ok": "yes"}, nil
	})
	Handle(s, "x/fail", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		r.Then("x/started", nil)
		r.ThenBroadcast("x/all", nil)
		return nil, errors.New("no")
	})
	c := rpctest.Connect(t, s.ServeStream)
	other := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	other.Initialize(nil)
	for i := 0; i < 20; i++ {
		id := c.Request("x/start", nil)
		if m := c.Next(); string(m.ID) != string(id) {
			t.Fatalf("first %s, want the result", m.Raw)
		}
		if m := c.Next(); m.Method != "x/started" || string(m.Params) != `{"n":1}` {
			t.Fatalf("got %s", m.Raw)
		}
		if m := c.Next(); string(m.Params) != `{"n":2}` {
			t.Fatalf("got %s", m.Raw)
		}
		if m := c.Next(); m.Method != "x/all" {
			t.Fatalf("got %s, want the broadcast", m.Raw)
		}
		if m := other.Next(); m.Method != "x/all" {
			t.Fatalf("other connection got %s, want the broadcast", m.Raw)
		}
	}
	rpctest.WantError(t, c.Response(c.Request("x/fail", nil)), protocol.CodeInternalError, "no")
	c.AssertNoMessage()
	other.AssertNoMessage()
}

func TestIDsEchoedWithTheirType(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/nil", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) { return nil, nil })
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	for _, id := range []string{`"abc"`, `"7"`, `0`, `-5`, `9223372036854775807`, `"\u00e9<"`} {
		c.SendRaw(`{"jsonrpc":"2.0","id":` + id + `,"method":"x/nil","params":{}}`)
		m := c.Next()
		if string(m.ID) != id {
			t.Errorf("sent id %s, got %s", id, m.Raw)
		}
	}
}

func TestMalformedInputIsAnsweredAndReadingGoesOn(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/nil", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) { return nil, nil })
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
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
		c.SendRaw(tc.in)
		m := c.Next()
		if m.Error == nil || m.Error.Code != tc.code || string(m.ID) != tc.id {
			t.Errorf("%s: got %s", tc.in, m.Raw)
		}
	}
	// id null is a notification: no answer, as in the reference.
	c.SendRaw(`{"id":null,"method":"x/nil","params":{}}`)
	// Unknown notifications and stray responses are ignored.
	c.SendRaw(`{"method":"foo/notify","params":{}}`)
	c.SendRaw(`{"id":12345,"result":{}}`)
	c.SendRaw(`{"id":"s","error":{"code":1,"message":"x"}}`)
	c.AssertNoMessage()
	if m := c.Call("x/nil", nil); m.Error != nil {
		t.Fatalf("connection broken: %s", m.Raw)
	}
}

// With no room for waiting requests (MaxQueuedRequestBytes 0), a request
// past the connection's in-flight limit is answered -32001 at once.
func TestPerConnectionOverload(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Limits.MaxInflightPerConnection = 2
		o.Limits.MaxQueuedRequestBytes = 0
	})
	release := make(chan struct{})
	var started atomic.Int32
	Handle(s, "x/block", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		started.Add(1)
		<-release
		return "done", nil
	})
	a, b := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	a.Initialize(nil)
	b.Initialize(nil)
	id1, id2 := a.Request("x/block", nil), a.Request("x/block", nil)
	for i := 0; i < 5; i++ {
		m := a.Call("x/block", nil)
		rpctest.WantError(t, m, protocol.CodeOverloaded, "Server overloaded; retry later.")
		if string(m.Error.Data) != `{"retryable":true}` {
			t.Fatalf("data %s", m.Error.Data)
		}
	}
	// Another connection has its own budget.
	id3 := b.Request("x/block", nil)
	close(release)
	for _, id := range []json.RawMessage{id1, id2} {
		if m := a.Response(id); string(m.Result) != `"done"` {
			t.Fatalf("got %s", m.Raw)
		}
	}
	if m := b.Response(id3); string(m.Result) != `"done"` {
		t.Fatalf("got %s", m.Raw)
	}
	// Slots came back.
	if m := a.Call("x/block", nil); string(m.Result) != `"done"` {
		t.Fatalf("got %s", m.Raw)
	}
}

func TestGlobalOverload(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Limits.MaxInflight = 1
		o.Limits.MaxQueuedRequestBytes = 0
	})
	release, started := make(chan struct{}), make(chan struct{}, 1)
	Handle(s, "x/block", func(ctx context.Context, r *Request, params *json.RawMessage) (any, error) {
		started <- struct{}{}
		<-release
		return "done", nil
	})
	a, b := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	a.Initialize(nil)
	b.Initialize(nil)
	id := a.Request("x/block", nil)
	<-started
	rpctest.WantError(t, b.Call("x/block", nil), protocol.CodeOverloaded, "Server overloaded; retry later.")
	close(release)
	if m := a.Response(id); m.Error != nil {
		t.Fatalf("got %s", m.Raw)
	}
}

func TestExperimentalMethodGating(t *testing.T) {
	exp, ok := protocol.Lookup(protocol.ClientRequest, "collaborationMode/list")
	if !ok || !exp.Experimental {
		t.Fatal("collaborationMode/list is no longer an experimental method: pick another")
	}
	s := newTestServer(t, nil)
	Handle(s, exp.Method, func(context.Context, *Request, *protocol.Empty) (*protocol.CollaborationModeListResponse, error) {
		return &protocol.CollaborationModeListResponse{}, nil
	})
	plain, expc := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	plain.Initialize(nil)
	expc.Initialize(map[string]any{"experimentalApi": true})
	m := plain.Call(exp.Method, map[string]any{})
	if m.Error == nil || m.Error.Code != protocol.CodeInvalidRequest {
		t.Fatalf("got %s", m.Raw)
	}
	if m.Error.Message != exp.Method+" requires experimentalApi capability" && !strings.HasPrefix(m.Error.Message, "Invalid request: missing field") {
		t.Fatalf("got %s", m.Raw)
	}
	if m := expc.Call(exp.Method, map[string]any{}); m.Error != nil && strings.Contains(m.Error.Message, "requires experimentalApi") {
		t.Fatalf("experimental client was refused: %s", m.Raw)
	}
}

// Handle refuses, when the daemon is built, a handler whose types are not
// the protocol table's: a typo is never a runtime error for a client.
func TestHandleChecksTypesAgainstTheTable(t *testing.T) {
	s := newTestServer(t, nil)
	mustPanic := func(name string, register func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: registered without a panic", name)
			}
		}()
		register()
	}
	mustPanic("params", func() {
		Handle(s, "thread/start", func(context.Context, *Request, *protocol.ThreadIDParams) (*protocol.ThreadStartResponse, error) {
			return nil, nil
		})
	})
	mustPanic("result", func() {
		Handle(s, "thread/start", func(context.Context, *Request, *protocol.ThreadStartParams) (*protocol.Empty, error) {
			return nil, nil
		})
	})
	mustPanic("result by value", func() {
		Handle(s, "thread/start", func(context.Context, *Request, *protocol.ThreadStartParams) (protocol.ThreadStartResponse, error) {
			return protocol.ThreadStartResponse{}, nil
		})
	})
	mustPanic("initialize", func() {
		Handle(s, "initialize", func(context.Context, *Request, *protocol.InitializeParams) (*protocol.InitializeResponse, error) {
			return nil, nil
		})
	})
	Handle(s, "thread/start", func(context.Context, *Request, *protocol.ThreadStartParams) (*protocol.ThreadStartResponse, error) {
		return nil, nil
	})
}

// clientInfo's name, title and version are cut to MaxClientInfoBytes at
// initialize, in whole characters and without a marker: what the server
// makes of them (userAgent, a thread's originator) stays bounded and is
// the client's own prefix.
func TestInitializeCutsClientInfo(t *testing.T) {
	var got ClientInfo
	s := newTestServer(t, func(o *Options) {
		o.Initialize = func(ci ClientInfo) (any, []Notification) {
			got = ci
			return map[string]string{"userAgent": ci.Name + "/" + ci.Version}, nil
		}
	})
	c := rpctest.Connect(t, s.ServeStream)
	name := strings.Repeat("n", 1<<20)
	version := strings.Repeat("1", 1<<20)
	// One byte, then 2-byte characters: byte 256 is inside one, which
	// goes whole.
	title := "x" + strings.Repeat("ü", 1<<19)
	m := c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": name, "title": title, "version": version}})
	if m.Error != nil {
		t.Fatalf("initialize: %s", protocol.Cut(string(m.Raw)))
	}
	want := ClientInfo{Name: name[:MaxClientInfoBytes], Title: title[:MaxClientInfoBytes-1], Version: version[:MaxClientInfoBytes], Originator: name[:MaxClientInfoBytes]}
	if got != want {
		t.Fatalf("client info %d/%d/%d bytes, want each cut to %d", len(got.Name), len(got.Title), len(got.Version), MaxClientInfoBytes)
	}
	var r struct{ UserAgent string }
	if err := json.Unmarshal(m.Result, &r); err != nil || r.UserAgent != want.Name+"/"+want.Version {
		t.Fatalf("userAgent of %d bytes: %v", len(r.UserAgent), err)
	}
	if !utf8.ValidString(got.Name) || !utf8.ValidString(got.Title) {
		t.Fatal("cut inside a character")
	}
}

// Options.Originator, when set, is every client's originator instead of
// its name; one that could not be a header value is ignored.
func TestOriginatorOption(t *testing.T) {
	for _, cs := range []struct{ option, want string }{
		{"", "client_x"},
		{"my_origin", "my_origin"},
		{"bad\rorigin", "client_x"},
	} {
		var got ClientInfo
		s := newTestServer(t, func(o *Options) {
			o.Originator = cs.option
			o.Initialize = func(ci ClientInfo) (any, []Notification) {
				got = ci
				return protocol.Empty{}, nil
			}
		})
		c := rpctest.Connect(t, s.ServeStream)
		if m := c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": "client_x", "version": "1"}}); m.Error != nil {
			t.Fatalf("initialize: %s", m.Raw)
		}
		if got.Originator != cs.want || got.Name != "client_x" {
			t.Errorf("option %q: originator %q, name %q; want %q", cs.option, got.Originator, got.Name, cs.want)
		}
	}
}

// Every client request of the reference's bundles (read by path) is known:
// one agentd does not serve (here, none has a handler) is answered -32601,
// after its params are decoded and, for one only the experimental bundle
// has, after the experimentalApi gate; never "unknown variant".
func TestEveryReferenceClientRequestIsKnown(t *testing.T) {
	stable, err := refschema.LoadBundle(refschema.Dir(), "stable.schemas.json")
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("reference schema not found: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	exp, err := refschema.LoadBundle(refschema.Dir(), "experimental.schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, nil)
	plain, expc := rpctest.Connect(t, s.ServeStream), rpctest.Connect(t, s.ServeStream)
	plain.Initialize(nil)
	expc.Initialize(map[string]any{"experimentalApi": true})
	// check reports what m's answer on c is not: -32601, a params decoding
	// error, or (want) the gating error.
	check := func(c *rpctest.Client, name, m string, gated bool) (notImplemented bool) {
		t.Helper()
		a := c.Call(m, map[string]any{})
		switch {
		case a.Error == nil:
			t.Errorf("%s on a %s connection: served by a server without handlers: %s", m, name, a.Raw)
		case gated:
			if a.Error.Code != protocol.CodeInvalidRequest || (a.Error.Message != m+" requires experimentalApi capability" &&
				!strings.HasPrefix(a.Error.Message, "Invalid request: missing field ")) {
				t.Errorf("%s on a %s connection: want the experimentalApi gate, got %s", m, name, a.Raw)
			}
		case a.Error.Code == protocol.CodeMethodNotFound:
			if want := "`" + m + "` is not implemented by agentd"; a.Error.Message != want {
				t.Errorf("%s on a %s connection: message %q, want %q", m, name, a.Error.Message, want)
			}
			return true
		case a.Error.Code != protocol.CodeInvalidRequest || strings.Contains(a.Error.Message, "unknown variant `"+m+"`") ||
			!strings.HasPrefix(a.Error.Message, "Invalid request: missing field "):
			t.Errorf("%s on a %s connection: want -32601 or a params error, got %s", m, name, a.Raw)
		}
		return false
	}
	n, gated := 0, 0
	for _, m := range exp.Methods("ClientRequest") {
		if m == "initialize" {
			continue
		}
		if check(expc, "experimental", m, false) {
			n++
		}
		expOnly := !stable.Has("ClientRequest", m)
		if expOnly {
			gated++
		}
		check(plain, "plain", m, expOnly)
	}
	// Most have params that {} decodes, or none agentd knows of.
	if n < 100 || gated < 70 {
		t.Errorf("%d methods answered -32601, %d gated: the bundles were not read whole", n, gated)
	}
}
