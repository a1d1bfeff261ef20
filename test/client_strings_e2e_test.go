package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
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

// config/value/write refuses a keyPath past 1 KiB or with a control
// character (an unknown key is kept and warned about to every new
// connection), naming it cut; config.toml is left as it was. An unknown
// key written by hand, however long and whatever it holds, reaches a new
// connection's configWarning cut and escaped.
func TestConfigKeysAreBounded(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	hand := "model = \"demo\"\n\"" + long + "\" = 1\n\"nul\\u0000key\" = 2\n"
	d := Start(t, Options{ConfigTOML: hand})
	c := d.Stdio()
	id := c.Request("initialize", map[string]any{"clientInfo": map[string]any{"name": "w", "version": "1"}})
	if m := c.Next(); string(m.ID) != string(id) {
		t.Fatalf("first message %s, want the initialize result", protocol.Cut(string(m.Raw)))
	}
	var w struct{ Summary string }
	if m := c.Next(); m.Method != "configWarning" || json.Unmarshal(m.Params, &w) != nil {
		t.Fatalf("got %s, want the configWarning", protocol.Cut(string(m.Raw)))
	}
	if len(w.Summary) > 1024 || !strings.Contains(w.Summary, "`nul\\u0000key`") || !strings.Contains(w.Summary, protocol.CutMarker) {
		t.Fatalf("configWarning of %d bytes: %q", len(w.Summary), protocol.Cut(w.Summary))
	}
	c.Notify("initialized", nil)
	file := filepath.Join(d.Home, "config.toml")
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Call("config/value/write", map[string]any{"keyPath": long, "value": 1, "mergeStrategy": "replace"})
	WantError(t, m, codeInvalidRequest, "")
	if !strings.HasPrefix(m.Error.Message, "Invalid configuration edit: keyPath is 1048576 bytes, more than the limit of 1024: kkk") || len(m.Error.Message) > 512 {
		t.Fatalf("message %q", protocol.Cut(m.Error.Message))
	}
	WantError(t, c.Call("config/value/write", map[string]any{"keyPath": "a\x00b", "value": 1, "mergeStrategy": "replace"}), codeInvalidRequest,
		`Invalid configuration edit: keyPath has a control character: a\u0000b`)
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatal("a refused write changed config.toml")
	}
}
