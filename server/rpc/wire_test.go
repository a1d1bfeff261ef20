package rpc

import (
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

func TestEncodeShapes(t *testing.T) {
	data, ps, pe, err := encodeNotification("a/b", map[string]string{"x": "<&>"}, 42)
	if err != nil || string(data) != `{"method":"a/b","params":{"x":"<&>"},"emittedAtMs":42}` || string(data[ps:pe]) != `{"x":"<&>"}` {
		t.Fatalf("notification %s %v", data, err)
	}
	data, _, pe, _ = encodeNotification("a/\"q\"", nil, 1)
	if string(data) != `{"method":"a/\"q\"","emittedAtMs":1}` || pe != 0 {
		t.Fatalf("notification without params %s", data)
	}
	data, _ = encodeResponse(json.RawMessage(`"id-1"`), json.RawMessage(`{ "a" : 1 }`))
	if string(data) != `{"id":"id-1","result":{"a":1}}` {
		t.Fatalf("response %s", data)
	}
	data = encodeError(json.RawMessage(`7`), protocol.ErrOverloaded)
	if string(data) != `{"error":{"code":-32001,"message":"Server overloaded; retry later.","data":{"retryable":true}},"id":7}` {
		t.Fatalf("error %s", data)
	}
	data, _ = encodeRequest(0, "item/tool/call", map[string]int{"a": 1})
	if string(data) != `{"id":0,"method":"item/tool/call","params":{"a":1}}` {
		t.Fatalf("request %s", data)
	}
	if _, err := encodeResponse(json.RawMessage(`1`), json.RawMessage(`{bad`)); err == nil {
		t.Fatalf("invalid raw result accepted")
	}
}

func TestDecodeMessageKinds(t *testing.T) {
	cases := []struct {
		in   string
		kind msgKind
		id   string
	}{
		{`{"id":1,"method":"m","params":{}}`, kindRequest, "1"},
		{`{"jsonrpc":"2.0","id":"x","method":"m"}`, kindRequest, `"x"`},
		{`{"method":"initialized"}`, kindNotification, ""},
		{`{"id":null,"method":"m"}`, kindNotification, ""},
		{`{"id":3,"result":null}`, kindResponse, "3"},
		{`{"id":3,"error":{"code":1,"message":"m"}}`, kindResponse, "3"},
		{"\t{\"id\":-9,\"method\":\"m\"} ", kindRequest, "-9"},
	}
	for _, tc := range cases {
		m, perr, _ := decodeMessage([]byte(tc.in))
		if perr != nil || m.kind != tc.kind || string(m.id) != tc.id {
			t.Errorf("%s: kind %d id %s err %v", tc.in, m.kind, m.id, perr)
		}
	}
}

// FuzzDecodeMessage checks that no input makes the decoder panic, that a
// rejected message is answered with a valid error message, and that an
// accepted request's id encodes back to valid JSON.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}`,
		`{"id":"x","result":{}}`, `{"method":"n"}`, `[1]`, `{"id":1e3,"method":"m"}`, `{"id":"\ud800","method":"m"}`,
		`{"id":1,"error":{"code":"x"}}`, `null`, `{`, "\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, perr, answerTo := decodeMessage(data)
		if perr != nil {
			out := encodeError(answerTo, perr)
			if !json.Valid(out) {
				t.Fatalf("invalid error answer %q for %q", out, data)
			}
			if perr.Code != protocol.CodeParseError && perr.Code != protocol.CodeInvalidRequest {
				t.Fatalf("code %d", perr.Code)
			}
			return
		}
		switch m.kind {
		case kindRequest, kindResponse:
			out, err := encodeResponse(m.id, nil)
			if err != nil || !json.Valid(out) {
				t.Fatalf("id %q does not echo: %q %v", m.id, out, err)
			}
		case kindNotification:
		default:
			t.Fatalf("no kind for %q", data)
		}
	})
}
