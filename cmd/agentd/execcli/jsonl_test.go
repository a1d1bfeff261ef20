package execcli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// feed runs notifications (method, params JSON) through a JSONL sink and
// ends the turn with o; it returns the lines written.
func feed(t *testing.T, o outcome, notes ...[2]string) []string {
	t.Helper()
	var buf bytes.Buffer
	s := newJSONLSink(&buf)
	for _, n := range notes {
		s.notification(n[0], json.RawMessage(n[1]))
	}
	s.finish(o)
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// The mappings the end-to-end tests do not reach through the mock model:
// a streamed patch (updated before it completes, declined shown as
// failed), an MCP call, a web search, warnings as error items, items
// still open at the turn's end, and a failed turn that takes the last
// error's text.
func TestJSONLMappings(t *testing.T) {
	got := feed(t, outcome{status: "failed", items: []wireItem{{Type: "commandExecution", ID: "c1", Command: "sleep 9", Status: "inProgress"}}},
		[2]string{"configWarning", `{"summary":"Unknown key","details":"web_search"}`},
		[2]string{"item/started", `{"threadId":"t","item":{"type":"userMessage","id":"u1","content":[]}}`},
		[2]string{"item/fileChange/patchUpdated", `{"itemId":"p1","changes":[{"path":"a.txt","kind":{"type":"add"},"diff":"+x"}]}`},
		[2]string{"item/started", `{"item":{"type":"fileChange","id":"p1","changes":[{"path":"a.txt","kind":{"type":"add"}}],"status":"inProgress"}}`},
		[2]string{"item/completed", `{"item":{"type":"fileChange","id":"p1","changes":[{"path":"a.txt","kind":{"type":"update","move_path":null}}],"status":"declined"}}`},
		[2]string{"item/started", `{"item":{"type":"mcpToolCall","id":"m1","server":"docs","tool":"search","arguments":{"q":1},"status":"inProgress","result":null,"error":null}}`},
		[2]string{"item/completed", `{"item":{"type":"mcpToolCall","id":"m1","server":"docs","tool":"search","arguments":{"q":1},"status":"completed","result":{"content":[{"type":"text","text":"hit"}],"structuredContent":null},"error":null}}`},
		[2]string{"item/completed", `{"item":{"type":"webSearch","id":"w1","query":"go yaml","action":{"type":"search","query":"go yaml"}}}`},
		[2]string{"item/completed", `{"item":{"type":"reasoning","id":"r1","summary":[" "],"content":[]}}`},
		[2]string{"item/started", `{"item":{"type":"commandExecution","id":"c1","command":"sleep 9","status":"inProgress","aggregatedOutput":null,"exitCode":null}}`},
		[2]string{"error", `{"error":{"message":"stream broke","additionalDetails":"after 3 tries"},"willRetry":false}`},
	)
	want := []string{
		`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Unknown key (web_search)"}}`,
		`{"type":"item.updated","item":{"id":"item_1","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"in_progress"}}`,
		`{"type":"item.updated","item":{"id":"item_1","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"a.txt","kind":"update"}],"status":"failed"}}`,
		`{"type":"item.started","item":{"id":"item_2","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":1},"result":null,"error":null,"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":1},"result":{"content":[{"text":"hit","type":"text"}],"structured_content":null},"error":null,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"item_3","type":"web_search","query":"go yaml","action":{"type":"search","query":"go yaml"}}}`,
		`{"type":"item.started","item":{"id":"item_4","type":"command_execution","command":"sleep 9","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
		`{"type":"error","message":"stream broke (after 3 tries)"}`,
		`{"type":"item.completed","item":{"id":"item_4","type":"command_execution","command":"sleep 9","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
		`{"type":"turn.failed","error":{"message":"stream broke (after 3 tries)"}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// An interrupted turn ends with neither turn.completed nor
	// turn.failed; a failed one without any error says "turn failed".
	if got := feed(t, outcome{status: "interrupted"}, [2]string{"turn/started", `{}`}); strings.Join(got, "\n") != `{"type":"turn.started"}` {
		t.Errorf("interrupted: %q", got)
	}
	if got := feed(t, outcome{status: "failed"}); got[0] != `{"type":"turn.failed","error":{"message":"turn failed"}}` {
		t.Errorf("failed without an error: %q", got)
	}
}

func TestReadableStatus(t *testing.T) {
	for in, want := range map[string]string{"inProgress": "in_progress", "completed": "completed", "declined": "declined"} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}
