package test

import (
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The debug log of a turn with a tool call carries the ids as fields
// with one spelling: conn and request on what handling a request logs,
// thread and turn on what the turn logs (its model stream, its tools),
// and the line "turn started" ties the request to the turn.
func TestLogsCarryIDs(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "echo hi"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"`)})
	c := d.Stdio()
	c.Initialize("logs", nil)
	thread := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	req := c.Request("turn/start", map[string]any{"threadId": thread, "input": textInput("run it")})
	turn := str(unmarshal(t, WantResult(t, c.Response(req))), "turn", "id")
	c.ReadUntil(isMethod("turn/completed"))

	for _, msg := range []string{"request started", "request finished", "turn started"} {
		line := d.WaitLog(func(l LogLine) bool { return l.Msg == msg && l.Str("request") == string(req) })
		if _, ok := line.Fields["conn"].(float64); !ok || line.Str("method") != "turn/start" {
			t.Errorf("%q without conn or method: %s", msg, line.Raw)
		}
		if msg == "turn started" && (line.Str("thread") != thread || line.Str("turn") != turn) {
			t.Errorf("%q without thread and turn: %s", msg, line.Raw)
		}
	}
	ofTurn := func(msg string) func(LogLine) bool {
		return func(l LogLine) bool { return l.Msg == msg && l.Str("thread") == thread && l.Str("turn") == turn }
	}
	d.WaitLog(ofTurn("model stream ended"))
	for _, msg := range []string{"tool call started", "tool call finished"} {
		line := d.WaitLog(ofTurn(msg))
		if line.Str("tool") != "exec_command" || line.Str("call") != "call_1" {
			t.Errorf("%q without the tool and call: %s", msg, line.Raw)
		}
	}
	// One spelling: none of the old ones is left.
	for _, old := range []string{"thread_id", "turn_id", "threadId", "turnId", "id"} {
		if d.HasLog(func(l LogLine) bool { _, ok := l.Fields[old]; return ok }) {
			t.Errorf("a log line has a field %q", old)
		}
	}
}
