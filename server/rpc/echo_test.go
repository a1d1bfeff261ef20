package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// maxErrorResponse is the most an error response may take: its message
// (at most protocol.MaxErrorMessage) and the rest.
const maxErrorResponse = protocol.MaxErrorMessage + 1024

// wantSmallError checks that m is an error response of at most a few KB
// that repeats no more than protocol.MaxEcho bytes of huge, with the cut
// marker where it repeats any.
func wantSmallError(t *testing.T, m rpctest.Msg, huge string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("want an error, got %.200s", m.Raw)
	}
	if len(m.Raw) >= maxErrorResponse {
		t.Fatalf("error response of %d bytes: %.300s", len(m.Raw), m.Raw)
	}
	if strings.Contains(string(m.Raw), huge[:protocol.MaxEcho+1]) {
		t.Fatalf("more than %d bytes of the client's string echoed: %.400s", protocol.MaxEcho, m.Raw)
	}
	if strings.Contains(m.Error.Message, huge[:64]) && !strings.Contains(m.Error.Message, protocol.CutMarker) {
		t.Fatalf("echo without the cut marker: %.400s", m.Raw)
	}
}

// A huge method name comes back cut in the unknown method's error; a huge
// request id is refused.
func TestHugeMethodNameIsCut(t *testing.T) {
	s := newTestServer(t, nil)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	huge := strings.Repeat("m", 1<<20)
	m := c.Call(huge, map[string]any{})
	wantSmallError(t, m, huge)
	if !strings.Contains(m.Error.Message, protocol.CutMarker+"1048576 bytes in all]") {
		t.Fatalf("no marker in %q", m.Error.Message)
	}
	// The request id is echoed whole or refused: a huge one is refused,
	// answered to null.
	c.SendRaw(`{"id":"` + strings.Repeat("i", 1<<20) + `","method":"model/list","params":{}}`)
	got := c.ReadUntil(func(m rpctest.Msg) bool { return string(m.ID) == "null" })
	rpctest.WantError(t, got, protocol.CodeInvalidRequest, "Invalid request: id is longer than 256 bytes")
	// An id at the bound is served.
	id := `"` + strings.Repeat("i", protocol.MaxEcho-2) + `"`
	c.SendRaw(`{"id":` + id + `,"method":"no/such","params":{}}`)
	if r := c.Response(json.RawMessage(id)); r.Error == nil {
		t.Fatalf("unknown method answered %s", r.Raw)
	}
}

// Whatever a handler puts in an error, the response stays small: the
// engine cuts any message to protocol.MaxErrorMessage and drops large
// data.
func TestErrorResponsesAreBounded(t *testing.T) {
	s := newTestServer(t, nil)
	huge := strings.Repeat("e", 1<<20)
	Handle(s, "x/fail", func(ctx context.Context, r *Request, p *json.RawMessage) (any, error) {
		return nil, errors.New("wrapped: " + huge)
	})
	Handle(s, "x/failData", func(ctx context.Context, r *Request, p *json.RawMessage) (any, error) {
		return nil, protocol.InvalidRequest("bad").WithData(map[string]string{"echo": huge})
	})
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	m := c.Call("x/fail", nil)
	if len(m.Raw) >= maxErrorResponse || !strings.HasPrefix(m.Error.Message, "wrapped: eee") || !strings.Contains(m.Error.Message, protocol.CutMarker) {
		t.Fatalf("error of %d bytes: %.300s", len(m.Raw), m.Raw)
	}
	m = c.Call("x/failData", nil)
	rpctest.WantError(t, m, protocol.CodeInvalidRequest, "bad")
	if len(m.Raw) >= maxErrorResponse || m.Error.Data != nil {
		t.Fatalf("error with data of %d bytes: %.300s", len(m.Raw), m.Raw)
	}
}

// Values a client sent that the params decoder repeats (an unknown enum
// value, a string of the wrong type, a huge integer) are cut.
func TestDecodeErrorsCutWhatTheyRepeat(t *testing.T) {
	s := newTestServer(t, nil)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	huge := strings.Repeat("7", 1<<20)
	for _, params := range []string{
		`{"approvalPolicy":"` + huge + `"}`,
		`{"ephemeral":"` + huge + `"}`,
		`{"ephemeral":` + huge + `}`,
	} {
		c.SendRaw(`{"id":1,"method":"thread/start","params":` + params + `}`)
		wantSmallError(t, c.Response(json.RawMessage("1")), huge)
	}
}

// The engine's logs repeat a client's method cut, as its errors do.
func TestLogsCutClientStrings(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	s := newTestServer(t, func(o *Options) { o.Logger = zap.New(core) })
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	huge := strings.Repeat("n", 1<<20)
	c.Send(map[string]any{"method": huge})
	// A request behind it: once it is answered, the notification was
	// handled (the read loop handles messages in order).
	c.Call("no/such", nil)
	entries := logs.FilterMessage("ignoring client notification").All()
	if len(entries) != 1 {
		t.Fatalf("%d log entries for the notification", len(entries))
	}
	method := entries[0].ContextMap()["method"].(string)
	if len(method) > protocol.MaxEcho+64 || !strings.Contains(method, protocol.CutMarker) {
		t.Fatalf("logged method of %d bytes: %.100s", len(method), method)
	}
}
