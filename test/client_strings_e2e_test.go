package test

import (
	"strings"
	"testing"
)

// A client named with a megabyte (clientInfo.name, the thread's
// originator) still makes threads that a restarted daemon reads: the name
// is cut at initialize, so the rollout's first line stays within what a
// reader takes.
func TestHugeClientNameKeepsThreadsReadable(t *testing.T) {
	home := shortTempDir(t)
	d := Start(t, Options{Home: home})
	c := d.Stdio()
	c.Initialize(strings.Repeat("n", 1<<20), nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir(), "config": map[string]any{"persist_on_start": true}})
	d.CloseStdin()
	d.Wait()

	d2 := Start(t, Options{Home: home})
	c2 := d2.Stdio()
	c2.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c2.Call("thread/resume", map[string]any{"threadId": id})))
	if str(res, "thread", "id") != id {
		t.Fatalf("resume %v", res)
	}
}

// thread/start refuses instructions that would make the thread's
// session_meta, the rollout's first line, longer than a reader takes
// (1 MiB): -32600 naming the size and the limit, rather than a thread
// whose file cannot be read back.
func TestThreadStartRefusesMetaPastTheLimit(t *testing.T) {
	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	m := c.Call("thread/start", map[string]any{"cwd": t.TempDir(), "baseInstructions": strings.Repeat("b", 600<<10), "developerInstructions": strings.Repeat("d", 600<<10)})
	WantError(t, m, codeInvalidRequest, "")
	if !strings.HasPrefix(m.Error.Message, "thread/start: the thread's session metadata would be ") ||
		!strings.HasSuffix(m.Error.Message, " bytes, more than the limit of 1 MiB (baseInstructions, developerInstructions and threadSource are in it)") {
		t.Fatalf("message %q", m.Error.Message)
	}
	// Within the limit, the same instructions are fine.
	startThread(t, c, map[string]any{"cwd": t.TempDir(), "baseInstructions": strings.Repeat("b", 600<<10)})
}
