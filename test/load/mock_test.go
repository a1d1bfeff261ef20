package main

import (
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

func request(input ...map[string]any) mockmodel.Request {
	items := make([]any, len(input))
	for i, it := range input {
		items[i] = it
	}
	return mockmodel.Request{JSON: map[string]any{"input": items}}
}

func user(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

// The directive is the last prompt that has one, whatever context the
// server adds; the command has run once its output follows that prompt.
func TestLoadTurnFindsTheDirectiveAndTheToolPhase(t *testing.T) {
	first := request(user("<environment_context>…</environment_context>"), user(prompt("turn", "n", 40, "cmd", 1)))
	d, after, err := loadTurn(first)
	if err != nil || d.kind != "turn" || d.arg("n", 0) != 40 || d.arg("cmd", 0) != 1 || after {
		t.Errorf("first request: %+v, after tool %v, %v", d, after, err)
	}
	output := map[string]any{"type": "function_call_output", "call_id": "c", "output": "load-ok"}
	call := map[string]any{"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": "{}"}
	if _, after, _ := loadTurn(request(user(prompt("turn")), call, output)); !after {
		t.Errorf("the request after the command is not seen as such")
	}
	// An earlier turn's command does not count for the next prompt.
	if d, after, _ := loadTurn(request(user(prompt("turn")), call, output, user(prompt("short")))); after || d.kind != "short" {
		t.Errorf("next turn: %+v, after tool %v", d, after)
	}
	for _, bad := range []mockmodel.Request{request(user("hello")), request(user(directivePrefix + "turn n=x"))} {
		if _, _, err := loadTurn(bad); err == nil {
			t.Errorf("no error for %v", bad.JSON)
		}
	}
}

// A long turn streams unpaced unless its directive names a rate; the
// fan-out's rate is its deltas a second.
func TestLongTurnPacedOnlyWhenAsked(t *testing.T) {
	rs := &responder{}
	for _, c := range []struct {
		prompt string
		want   time.Duration
	}{
		{prompt("long", "items", 2, "n", 10), 0},
		{prompt("long", "items", 2, "n", 10, "rate", 0), 0},
		{prompt("long", "items", 2, "n", 10, "rate", 500), 2 * time.Millisecond},
		{prompt("fanout", "n", 10, "rate", 200), 5 * time.Millisecond},
	} {
		resp := rs.respond(request(user(c.prompt)))
		if got := resp.Paced(); got != c.want {
			t.Errorf("%s: paced %v, want %v", c.prompt, got, c.want)
		}
		if len(resp.Events()) == 0 {
			t.Errorf("%s: no events", c.prompt)
		}
	}
}
