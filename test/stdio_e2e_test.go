package test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeOverloaded     = -32001
)

// The stdio framing edge cases, in one session: CRLF, blank and
// whitespace lines, an over-long line and malformed JSON (answered with
// -32700 and id null, the connection keeps reading), a final line without
// a newline, and exit at stdin EOF.
func TestStdioFraming(t *testing.T) {
	d := Start(t, Options{TestHooks: true, Config: []string{"server.max_message_bytes=4096"}})
	c := d.Stdio()

	c.SendRaw([]byte("{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientInfo\":{\"name\":\"crlf\",\"version\":\"1\"}}}\r\n"))
	WantResult(t, c.Next())
	c.SendRaw([]byte("\n\r\n   \t \n\n"))
	c.SendRaw([]byte("{\"id\":\"two\",\"method\":\"test/sleep\",\"params\":{\"ms\":0}}\n"))
	if m := c.Next(); string(m.ID) != `"two"` || m.Error != nil {
		t.Fatalf("got %s", m.Raw)
	}

	c.SendRaw([]byte("{\"id\":3,\"method\":\"test/sleep\",\"params\":{\"pad\":\"" + strings.Repeat("x", 5000) + "\"}}\n"))
	m := c.Next()
	WantError(t, m, codeParse, "Parse error: message exceeds the limit of 4096 bytes")
	if string(m.ID) != "null" {
		t.Fatalf("id %s, want null", m.ID)
	}

	c.SendRaw([]byte("{\"id\":4,\"method\":\n"))
	m = c.Next()
	WantError(t, m, codeParse, "")
	if string(m.ID) != "null" {
		t.Fatalf("id %s, want null", m.ID)
	}

	// The stream is still in sync: the next line is served.
	if m := c.Call("test/sleep", map[string]any{"ms": 0}); m.Error != nil {
		t.Fatalf("after bad input: %s", m.Raw)
	}

	// A final line without a newline is processed, then EOF ends the
	// process cleanly.
	c.SendRaw([]byte(`{"id":99,"method":"test/sleep","params":{"ms":0}}`))
	d.CloseStdin()
	if m := c.Response(json.RawMessage("99")); m.Error != nil {
		t.Fatalf("final line: %s", m.Raw)
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// At stdin EOF, requests still in flight finish and are answered before
// the process exits.
func TestStdinEOFFinishesInFlightWork(t *testing.T) {
	d := Start(t, Options{TestHooks: true})
	c := d.Stdio()
	c.Initialize("eof", nil)
	id := c.Request("test/sleep", map[string]any{"ms": 300})
	d.WaitLog(func(l LogLine) bool { return l.Msg == "request started" && l.Str("method") == "test/sleep" })
	d.CloseStdin()
	if m := c.Response(id); string(m.Result) != `{"slept":300}` {
		t.Fatalf("got %s", m.Raw)
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if err := c.WaitClosed(); err == nil {
		t.Fatal("stdout still open")
	}
}

// Every line the server writes is one compact JSON message without
// "jsonrpc"; notifications carry emittedAtMs, responses and server
// requests do not.
func TestWireShapeOverStdio(t *testing.T) {
	d := Start(t, Options{TestHooks: true})
	c := d.Stdio()
	init := c.Initialize("shape", nil)
	id := c.Request("test/emit", map[string]any{"method": "x/note", "params": map[string]string{"html": "<&>"}})
	note := c.ReadUntil(func(m Message) bool { return m.Method == "x/note" })
	res := c.Response(id)
	callID := c.Request("test/call", map[string]any{"method": "x/ask", "params": map[string]int{"a": 1}})
	req := c.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
	c.Send(map[string]any{"id": req.ID, "result": map[string]string{"ok": "1"}})
	callRes := c.Response(callID)

	for _, m := range []Message{init, note, res, req, callRes} {
		if _, ok := m.Fields["jsonrpc"]; ok {
			t.Errorf("jsonrpc member in %s", m.Raw)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Raw); err != nil || compact.String() != string(m.Raw) {
			t.Errorf("not compact: %s", m.Raw)
		}
		_, hasTS := m.Fields["emittedAtMs"]
		if hasTS != m.IsNotification() {
			t.Errorf("emittedAtMs present=%v in %s", hasTS, m.Raw)
		}
	}
	if string(note.Params) != `{"html":"<&>"}` {
		t.Errorf("HTML escaped or altered: %s", note.Params)
	}
	if string(req.ID) != "0" || req.Method != "x/ask" {
		t.Errorf("first server request: %s", req.Raw)
	}
	if string(callRes.Result) != `{"result":{"ok":"1"}}` {
		t.Errorf("call result %s", callRes.Raw)
	}
}
