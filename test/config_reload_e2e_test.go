package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// reloadConfig is a config.toml for the mock model with the model and
// developer instructions given.
func reloadConfig(m *mockmodel.Server, model, instructions string) string {
	return strings.Replace(mockConfig(m, `developer_instructions = "`+instructions+`"`), `model = "mock-model"`, `model = "`+model+`"`, 1)
}

// threadModel starts a thread and returns its id and the model it runs.
func threadModel(t *testing.T, c *Client) (string, string) {
	t.Helper()
	res := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": t.TempDir()})))
	c.ReadUntil(isMethod("thread/started"))
	return str(res, "thread", "id"), str(res, "model")
}

// SIGHUP reloads config.toml for new threads: a thread started after it
// runs the new model and instructions, while a thread started before it
// keeps its own for its next turn. A config.toml that no longer loads
// leaves the configuration in use (the error logged, naming the file),
// and the daemon serves on.
func TestSIGHUPReloadsConfigForNewThreads(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one")),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "two")),
	)
	d := Start(t, Options{ConfigTOML: reloadConfig(m, "model-a", "instructions A")})
	file := filepath.Join(d.Home, "config.toml")
	c := d.Stdio()
	c.Initialize("reload", nil)
	first, model := threadModel(t, c)
	if model != "model-a" {
		t.Fatalf("first thread runs %q, want model-a", model)
	}

	if err := os.WriteFile(file, []byte(reloadConfig(m, "model-b", "instructions B")+"\n[server]\nmax_inflight = 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGHUP)
	l := d.WaitLog(LogMsg("reloaded the configuration"))
	if l.Str("file") != file || l.Str("trigger") != "SIGHUP" || l.Str("model") != "model-b" {
		t.Fatalf("reload logged %s", l.Raw)
	}
	changed, _ := l.Fields["changed"].([]any)
	if !slices.Contains(changed, any("Model")) || !slices.Contains(changed, any("DeveloperInstructions")) || slices.Contains(changed, any("Server")) {
		t.Fatalf("changed settings %v", changed)
	}
	// [server] changes only at a restart, and the log says so.
	d.WaitLog(func(l LogLine) bool {
		return strings.Contains(l.Msg, "take effect only at a restart") && strings.Contains(l.Raw, `"[server]"`)
	})

	second, model := threadModel(t, c)
	if model != "model-b" {
		t.Fatalf("a thread started after the reload runs %q, want model-b", model)
	}
	runTurn(t, c, second, "hello")
	runTurn(t, c, first, "hello again")
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if reqs[0].Model() != "model-b" || !strings.Contains(string(reqs[0].Body), "instructions B") {
		t.Fatalf("the new thread's turn asked for %q (instructions B: %v)", reqs[0].Model(), strings.Contains(string(reqs[0].Body), "instructions B"))
	}
	if reqs[1].Model() != "model-a" || !strings.Contains(string(reqs[1].Body), "instructions A") || strings.Contains(string(reqs[1].Body), "instructions B") {
		t.Fatalf("the first thread's next turn asked for %q, want its own model-a and instructions A", reqs[1].Model())
	}
	var r readResult
	validResult(t, "config/read", c.Call("config/read", map[string]any{}), &r)
	if r.Config["model"] != "model-b" {
		t.Fatalf("config/read model %v, want model-b", r.Config["model"])
	}

	// A broken file: the configuration in use stays.
	if err := os.WriteFile(file, []byte("model = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Signal(syscall.SIGHUP)
	l = d.WaitLog(LogMsg("could not reload the configuration"))
	if l.Level != "error" || l.Str("file") != file || !strings.Contains(l.Str("error"), file) {
		t.Fatalf("failed reload logged %s", l.Raw)
	}
	if _, model := threadModel(t, c); model != "model-b" {
		t.Fatalf("after a failed reload a new thread runs %q, want model-b", model)
	}
}

// A config write reloads the configuration the same way: the next thread
// runs what was written, without a SIGHUP.
func TestConfigWriteReloadsForNewThreads(t *testing.T) {
	m := mockmodel.New(t)
	d := Start(t, Options{ConfigTOML: reloadConfig(m, "model-a", "instructions A")})
	c := d.Stdio()
	c.Initialize("writer", nil)
	var w writeResult
	id := c.Request("config/value/write", map[string]any{"keyPath": "model", "value": "model-c", "mergeStrategy": "replace"})
	validResult(t, "config/value/write", c.Response(id), &w)
	l := d.WaitLog(LogMsg("reloaded the configuration"))
	// Logged as the write's: with its connection and request ids.
	if l.Str("trigger") != "config write" || l.Str("model") != "model-c" || l.Str("request") != string(id) || l.Fields["conn"] == nil {
		t.Fatalf("reload logged %s", l.Raw)
	}
	if _, model := threadModel(t, c); model != "model-c" {
		t.Fatalf("a thread started after the write runs %q, want model-c", model)
	}
	var r readResult
	validResult(t, "config/read", c.Call("config/read", map[string]any{}), &r)
	if r.Config["model"] != "model-c" {
		t.Fatalf("config/read model %v, want model-c", r.Config["model"])
	}
}

// An edit of config.toml reaches the next new thread with no SIGHUP and
// no restart: thread/start reads the file again when it changed (the
// startup --config overrides still apply on top), while a thread
// already loaded keeps its snapshot. An edit that does not load leaves
// the configuration in use: the client that starts a thread is told
// with a configWarning, and the failure is logged naming the file.
func TestConfigEditReachesNewThreadsWithoutARestart(t *testing.T) {
	m := mockmodel.New(t)
	for i := range 3 {
		m.Enqueue(mockmodel.Reply(fmt.Sprintf("resp_%d", i), mockmodel.Text(fmt.Sprintf("msg_%d", i), "ok")))
	}
	d := Start(t, Options{ConfigTOML: reloadConfig(m, "model-a", "instructions A"), Config: []string{`model_reasoning_effort="low"`}})
	file := filepath.Join(d.Home, "config.toml")
	c := d.Stdio()
	c.Initialize("edit", nil)
	first, _ := threadModel(t, c)

	if err := os.WriteFile(file, []byte(reloadConfig(m, "model-b", "instructions B")), 0o600); err != nil {
		t.Fatal(err)
	}
	second, model := threadModel(t, c)
	if model != "model-b" {
		t.Fatalf("a thread started after the edit runs %q, want model-b", model)
	}
	l := d.WaitLog(LogMsg("reloaded the configuration"))
	if l.Str("trigger") != "config.toml changed" || l.Str("file") != file {
		t.Fatalf("reload logged %s", l.Raw)
	}
	runTurn(t, c, second, "hello")
	runTurn(t, c, first, "hello again")
	reqs := m.Requests()
	if dev := reqs[0].MessageTexts("developer"); !slices.Contains(dev, "instructions B") || reqs[0].Model() != "model-b" {
		t.Fatalf("the new thread's request: model %q, developer messages %q", reqs[0].Model(), dev)
	}
	if effort := path(reqs[0].JSON, "reasoning", "effort"); effort != "low" {
		t.Fatalf("the startup -c override was lost: effort %v", effort)
	}
	if dev := reqs[1].MessageTexts("developer"); !slices.Contains(dev, "instructions A") || slices.Contains(dev, "instructions B") || reqs[1].Model() != "model-a" {
		t.Fatalf("the loaded thread's next turn: model %q, developer messages %q", reqs[1].Model(), dev)
	}

	if err := os.WriteFile(file, []byte("developer_instructions = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := c.Request("thread/start", map[string]any{"cwd": t.TempDir()})
	w := c.ReadUntil(isMethod("configWarning"))
	if !strings.Contains(str(unmarshal(t, w.Params), "details"), file) {
		t.Fatalf("configWarning %s does not name the file", w.Raw)
	}
	third := str(unmarshal(t, WantResult(t, c.Response(id))), "thread", "id")
	l = d.WaitLog(LogMsg("could not reload the configuration"))
	if l.Str("file") != file || l.Str("trigger") != "config.toml changed" {
		t.Fatalf("failed reload logged %s", l.Raw)
	}
	c.ReadUntil(isMethod("thread/started"))
	runTurn(t, c, third, "still B")
	if dev := m.Requests()[2].MessageTexts("developer"); !slices.Contains(dev, "instructions B") {
		t.Fatalf("after a broken edit the new thread's developer messages are %q, want instructions B kept", dev)
	}
}
