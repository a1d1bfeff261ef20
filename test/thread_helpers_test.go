package test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// mockConfig is a config.toml that points agentd at the mock model, with
// no retries unless the test asks.
func mockConfig(m *mockmodel.Server, extra string) string {
	return fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
%s
[model_providers.mock]
name = "mock"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, extra, m.URL())
}

// collectUntil reads messages in order up to and including the first
// that matches.
func collectUntil(c *Client, pred func(Message) bool) []Message {
	var out []Message
	for {
		m := c.Next()
		out = append(out, m)
		if pred(m) {
			return out
		}
	}
}

func isMethod(method string) func(Message) bool {
	return func(m Message) bool { return m.Method == method }
}

func methods(ms []Message) []string {
	var out []string
	for _, m := range ms {
		switch {
		case m.Method != "" && m.ID != nil:
			out = append(out, "request:"+m.Method)
		case m.Method != "":
			out = append(out, m.Method)
		default:
			out = append(out, "response")
		}
	}
	return out
}

// unmarshal decodes raw into a generic value for assertions.
func unmarshal(t testing.TB, raw json.RawMessage) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// path digs into a decoded value: path(v, "thread", "id").
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any, keys ...any) string {
	s, _ := path(v, keys...).(string)
	return s
}

// startThread runs thread/start and returns the thread id.
func startThread(t testing.TB, c *Client, params map[string]any) string {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	m := c.Call("thread/start", params)
	id := str(unmarshal(t, WantResult(t, m)), "thread", "id")
	if id == "" {
		t.Fatalf("no thread id in %s", m.Raw)
	}
	c.ReadUntil(isMethod("thread/started"))
	return id
}

// runTurn starts a turn with text and reads until turn/completed; it
// returns the messages of the turn (the turn/start response included).
func runTurn(t testing.TB, c *Client, threadID, text string) []Message {
	t.Helper()
	c.Request("turn/start", map[string]any{"threadId": threadID, "input": []any{map[string]any{"type": "text", "text": text}}})
	return collectUntil(c, isMethod("turn/completed"))
}

func textInput(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }

func mustContain(t testing.TB, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// restarted stops d, which must exit 0 once its stdin closes, and starts a
// daemon with o on d's home; it returns that daemon and an initialized
// stdio client of it.
func restarted(t *testing.T, d *Daemon, o Options) (*Daemon, *Client) {
	t.Helper()
	d.CloseStdin()
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	o.Home = d.Home
	d2 := Start(t, o)
	c := d2.Stdio()
	c.Initialize("e2e", nil)
	return d2, c
}
