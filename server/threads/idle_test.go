package threads

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// idleLoops are the functions of the goroutines a loaded thread runs only
// while it has work: the pump, the deliverer, the rollout's writer and
// the session's loop.
var idleLoops = []string{
	"threads.(*thread).pump(",
	"threads.(*thread).deliverLoop(",
	"rollout.(*writer).run(",
	"core.(*Session).loop(",
}

// threadLoops returns which of idleLoops some goroutine runs now.
func threadLoops() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, f := range idleLoops {
		if bytes.Contains(buf, []byte(f)) {
			out = append(out, f)
		}
	}
	return out
}

// notifications returns the methods of c's messages up to and including
// the first turn/completed (responses are skipped).
func notifications(c *rpctest.Client) []string {
	var out []string
	for {
		m := c.Next()
		if m.Method == "" {
			continue
		}
		out = append(out, m.Method)
		if m.Method == "turn/completed" {
			return out
		}
	}
}

// A loaded thread that is idle holds no goroutine of its own, and stays
// loaded; a resume is given its turns, and its next
// turn starts them again: the model gets the whole history, and the
// second subscriber every notification the first one gets.
func TestIdleLoadedThreadHoldsNoGoroutine(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.client(), f.client()
	id := f.startThread(a, nil)
	a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("first question")})
	a.ReadUntil(method("turn/completed"))
	waitFor(t, "the idle thread's goroutines to end", func() bool { return len(threadLoops()) == 0 })
	if n := turnsRunning(f); n != 0 {
		t.Fatalf("the trimmer counts %d turns running after the turn", n)
	}
	if m := a.Call("thread/loaded/list", map[string]any{}); !strings.Contains(string(m.Result), id) {
		t.Fatalf("the idle thread is not loaded: %s", m.Raw)
	}

	r := b.Call("thread/resume", map[string]any{"threadId": id})
	if r.Error != nil || !strings.Contains(string(r.Result), "first question") {
		t.Fatalf("resume of the idle thread: %s", r.Raw)
	}
	a.DropSkipped()
	b.DropSkipped()
	if m := a.Call("turn/start", map[string]any{"threadId": id, "input": textInput("second question")}); m.Error != nil {
		t.Fatalf("turn/start: %s", m.Raw)
	}
	got, other := notifications(a), notifications(b)
	if !slices.Contains(got, "item/agentMessage/delta") || !slices.Equal(got, other) {
		t.Fatalf("the subscribers' notifications differ:\n a: %v\n b: %v", got, other)
	}
	var prompts []string
	answers := 0
	for _, it := range f.sv.threads.get(id).sess.History() {
		if it.Type() == model.TypeMessage && it.Role() == "user" && strings.HasSuffix(it.MessageText(), "question") {
			prompts = append(prompts, it.MessageText())
		}
		if it.Type() == model.TypeMessage && it.Role() == "assistant" {
			answers++
		}
	}
	if !slices.Equal(prompts, []string{"first question", "second question"}) || answers != 2 {
		t.Fatalf("the history after two turns: prompts %q, %d answers", prompts, answers)
	}
	waitFor(t, "the goroutines to end again", func() bool { return len(threadLoops()) == 0 })
	if n := turnsRunning(f); n != 0 {
		t.Fatalf("the trimmer counts %d turns running after two turns", n)
	}
}

// turnsRunning is the trimmer's count of running turns.
func turnsRunning(f *fixture) int {
	f.sv.trim.mu.Lock()
	defer f.sv.trim.mu.Unlock()
	return f.sv.trim.running
}
