package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// waitTimeout bounds every wait for something that should happen.
const waitTimeout = 15 * time.Second

// updates records a manager's updates and lets a test wait for one.
type updates struct {
	mu      sync.Mutex
	list    []Update
	changed chan struct{}
}

func newUpdates() *updates { return &updates{changed: make(chan struct{})} }

func (u *updates) add(x Update) {
	u.mu.Lock()
	u.list = append(u.list, x)
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
}

// wait returns the index of the first update from index from on that
// matches.
func (u *updates) wait(t *testing.T, from int, match func(Update) bool) int {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		u.mu.Lock()
		for i := from; i < len(u.list); i++ {
			if match(u.list[i]) {
				u.mu.Unlock()
				return i
			}
		}
		ch := u.changed
		u.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no matching update; got %+v", u.snapshot())
		}
	}
}

func (u *updates) snapshot() []Update {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Update(nil), u.list...)
}

func is(server string, st State) func(Update) bool {
	return func(u Update) bool { return u.Server == server && u.State == st }
}

type fixture struct {
	m    *Manager
	ups  *updates
	logs *observer.ObservedLogs
}

func start(t *testing.T, opts Options, servers ...ServerConfig) *fixture {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	ups := newUpdates()
	opts.Log = zap.New(core)
	opts.OnUpdate = ups.add
	if opts.StopGrace == 0 {
		opts.StopGrace = 500 * time.Millisecond
	}
	m := NewManager(servers, opts)
	m.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		m.Close(ctx)
	})
	return &fixture{m: m, ups: ups, logs: logs}
}

func testConfig(name string, args ...string) ServerConfig {
	return ServerConfig{Name: name, Command: testServer, Args: args}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func texts(t *testing.T, r *CallResult) []string {
	t.Helper()
	var out []string
	for _, c := range r.Content {
		var part struct{ Type, Text string }
		if err := json.Unmarshal(c, &part); err != nil {
			t.Fatal(err)
		}
		if part.Type == "text" {
			out = append(out, part.Text)
		}
	}
	return out
}

func TestToolsAndCall(t *testing.T) {
	f := start(t, Options{}, testConfig("test"))
	tools := f.m.Tools(ctxT(t))
	byName := map[string]Tool{}
	for _, tl := range tools {
		byName[tl.Qualified] = tl
	}
	echo, ok := byName["mcp__test__echo"]
	if !ok {
		t.Fatalf("no mcp__test__echo in %+v", tools)
	}
	if echo.Server != "test" || echo.Name != "echo" || echo.ReadOnly == nil || !*echo.ReadOnly {
		t.Errorf("echo: %+v", echo)
	}
	var params map[string]any
	if err := json.Unmarshal(echo.Parameters, &params); err != nil || params["type"] != "object" {
		t.Errorf("parameters %s", echo.Parameters)
	}
	var spec map[string]any
	_ = json.Unmarshal(echo.Spec(), &spec)
	if spec["type"] != "function" || spec["name"] != "mcp__test__echo" || spec["strict"] != false {
		t.Errorf("spec %s", echo.Spec())
	}
	if w := byName["mcp__test__write"]; w.ReadOnly == nil || *w.ReadOnly {
		t.Errorf("write is not marked read-only false: %+v", w)
	}
	if tl, ok := f.m.Lookup("mcp__test__echo", ""); !ok || tl.Server != "test" || tl.Name != "echo" || tl.ReadOnly == nil {
		t.Errorf("Lookup flat: %+v %v", tl, ok)
	}
	if tl, ok := f.m.Lookup("echo", "mcp__test"); !ok || tl.Server != "test" || tl.Name != "echo" {
		t.Errorf("Lookup namespaced: %+v %v", tl, ok)
	}
	if _, ok := f.m.Lookup("exec_command", ""); ok {
		t.Error("Lookup found a built-in tool")
	}

	// The progress the server reports comes before the answer.
	var progress []Progress
	res, err := f.m.Call(ctxT(t), "test", "echo", json.RawMessage(`{"text":"hello"}`), CallHooks{Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(t, res); len(got) != 1 || got[0] != "hello" || res.IsError {
		t.Errorf("echo answered %+v", res)
	}
	if len(progress) != 1 || progress[0].Message != "echoing" || progress[0].Progress != 1 {
		t.Errorf("progress %+v", progress)
	}
}

func TestCallContent(t *testing.T) {
	f := start(t, Options{}, testConfig("test"))
	ctx := ctxT(t)
	res, err := f.m.Call(ctx, "test", "image", nil, CallHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 2 || !strings.Contains(string(res.Content[1]), `"type":"image"`) || !strings.Contains(string(res.Content[1]), `"mimeType":"image/png"`) {
		t.Errorf("image content %s", res.Content)
	}
	res, err = f.m.Call(ctx, "test", "fail", json.RawMessage(`{}`), CallHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || texts(t, res)[0] != "the tool failed on purpose" {
		t.Errorf("fail answered %+v", res)
	}
	if _, err := f.m.Call(ctx, "nope", "echo", nil, CallHooks{}); err == nil || !strings.Contains(err.Error(), "unknown MCP server `nope`") {
		t.Errorf("unknown server: %v", err)
	}
}

// The tool timeout cancels the call: the server is told (it logs the
// cancellation) and the error says what timed out.
func TestToolTimeout(t *testing.T) {
	cfg := testConfig("test")
	cfg.ToolTimeout = 300 * time.Millisecond
	f := start(t, Options{}, cfg)
	f.m.Tools(ctxT(t))
	_, err := f.m.Call(ctxT(t), "test", "slow", nil, CallHooks{})
	if err == nil || err.Error() != "timed out awaiting tools/call after 300ms" {
		t.Fatalf("err %v", err)
	}
	waitLog(t, f.logs, "slow call cancelled")
	if n := f.logs.FilterMessage("MCP tool call failed").FilterField(zap.String("mcp_server", "test")).Len(); n != 1 {
		t.Errorf("%d log lines naming the server for the failed call", n)
	}
}

// Cancelling the caller's context (an interrupted turn) cancels the call
// at the server.
func TestCallCancelled(t *testing.T) {
	f := start(t, Options{}, testConfig("test"))
	f.m.Tools(ctxT(t))
	ctx, cancel := context.WithCancel(ctxT(t))
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := f.m.Call(ctx, "test", "slow", nil, CallHooks{Progress: func(Progress) { close(started) }})
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	waitLog(t, f.logs, "slow call cancelled")
}

func waitLog(t *testing.T, logs *observer.ObservedLogs, line string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, e := range logs.All() {
			if e.Message == "MCP server stderr" && strings.Contains(e.ContextMap()["line"].(string), line) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the log sink, which has no notification
	}
	t.Fatalf("the server never logged %q", line)
}

// A server's elicitation reaches the running call's hook and the answer
// goes back; without a hook it is declined at once.
func TestElicitation(t *testing.T) {
	f := start(t, Options{}, testConfig("test"))
	var asked Elicitation
	hooks := CallHooks{Elicit: func(ctx context.Context, e Elicitation) ElicitResult {
		asked = e
		return ElicitResult{Action: "accept", Content: json.RawMessage(`{"answer":"blue"}`)}
	}}
	res, err := f.m.Call(ctxT(t), "test", "ask", json.RawMessage(`{"question":"Which colour?"}`), hooks)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(t, res)[0]; got != "accepted: blue" {
		t.Errorf("answer %q", got)
	}
	if asked.Message != "Which colour?" || !strings.Contains(string(asked.RequestedSchema), `"answer"`) {
		t.Errorf("asked %+v", asked)
	}
	res, err = f.m.Call(ctxT(t), "test", "ask", json.RawMessage(`{"question":"Anyone?"}`), CallHooks{})
	if err != nil || texts(t, res)[0] != "decline" {
		t.Errorf("without a hook: %v %+v", err, res)
	}
}

func TestFailedStart(t *testing.T) {
	bad := ServerConfig{Name: "broken", Command: "/nonexistent/prog", Required: true}
	f := start(t, Options{}, bad, testConfig("test"))
	i := f.ups.wait(t, 0, is("broken", StateFailed))
	if e := f.ups.snapshot()[i].Error; !strings.HasPrefix(e, "MCP startup failed: ") || !strings.Contains(e, "/nonexistent/prog") {
		t.Errorf("error %q", e)
	}
	err := f.m.WaitRequired(ctxT(t))
	if err == nil || !strings.HasPrefix(err.Error(), "required MCP servers failed to initialize: broken: ") {
		t.Fatalf("WaitRequired: %v", err)
	}
	// The other server is unaffected; the failed one is listed as failed.
	if _, err := f.m.Call(ctxT(t), "test", "echo", json.RawMessage(`{"text":"x"}`), CallHooks{}); err != nil {
		t.Error(err)
	}
	for _, st := range f.m.Status() {
		if st.Name == "broken" && (st.State != StateFailed || st.Error == "") {
			t.Errorf("status %+v", st)
		}
	}
	if _, err := f.m.Call(ctxT(t), "broken", "echo", nil, CallHooks{}); err == nil || !strings.Contains(err.Error(), "MCP server `broken` is failed") {
		t.Errorf("call to a failed server: %v", err)
	}
}

// A server that never answers initialize fails at its startup timeout,
// and its process is gone.
func TestStartupTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := ServerConfig{Name: "mute", Command: "/bin/sh", Args: []string{"-c", "echo $$ > " + pidFile + "; exec sleep 3600"},
		StartupTimeout: 300 * time.Millisecond}
	f := start(t, Options{}, cfg)
	i := f.ups.wait(t, 0, is("mute", StateFailed))
	if e := f.ups.snapshot()[i].Error; !strings.Contains(e, "timed out after 0.3 seconds") {
		t.Errorf("error %q", e)
	}
	assertGone(t, readPid(t, pidFile))
}

// A server that writes garbage instead of JSON-RPC fails to start.
func TestGarbageServer(t *testing.T) {
	cfg := ServerConfig{Name: "garbage", Command: "/bin/sh", Args: []string{"-c", "while :; do echo 'this is not json'; sleep 0.05; done"},
		StartupTimeout: 2 * time.Second}
	f := start(t, Options{}, cfg)
	f.ups.wait(t, 0, is("garbage", StateFailed))
}

// A server that exits mid-call fails that call; it is started again and
// the next call works.
func TestRestartAfterCrash(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "crashed")
	f := start(t, Options{RestartBackoff: 50 * time.Millisecond}, testConfig("test", "-crash-once", marker))
	first := f.ups.wait(t, 0, is("test", StateReady))
	if _, err := f.m.Call(ctxT(t), "test", "echo", json.RawMessage(`{"text":"x"}`), CallHooks{}); err == nil {
		t.Fatal("the call to a crashing server succeeded")
	}
	failed := f.ups.wait(t, first+1, is("test", StateFailed))
	if e := f.ups.snapshot()[failed].Error; !strings.Contains(e, "MCP server exited: exit status 3") {
		t.Errorf("error %q", e)
	}
	f.ups.wait(t, failed+1, is("test", StateReady))
	res, err := f.m.Call(ctxT(t), "test", "echo", json.RawMessage(`{"text":"again"}`), CallHooks{})
	if err != nil || texts(t, res)[0] != "again" {
		t.Fatalf("after the restart: %v %+v", err, res)
	}
}

// Close ends the server and what it started in its process group.
func TestCloseKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	f := start(t, Options{}, testConfig("test", "-pidfile", pidFile, "-child-pidfile", childFile))
	f.ups.wait(t, 0, is("test", StateReady))
	pid, child := readPid(t, pidFile), readPid(t, childFile)
	ctx := ctxT(t)
	f.m.Close(ctx)
	assertGone(t, pid)
	assertGone(t, child)
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond) // the file appears when the child starts
	}
}

// assertGone checks that pid is no longer a live process (a zombie of
// someone else's counts as gone).
func assertGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 && strings.HasPrefix(s[i+1:], " Z") {
			return
		}
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // a SIGKILLed process is reaped by its parent shortly
	}
	t.Errorf("process %d is still running", pid)
}

// The server gets a small default environment, env_vars and env; nothing
// else of agentd's (the operator's API key stays out).
func TestStdioEnvironment(t *testing.T) {
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/x", "OPENAI_API_KEY": "sk-secret", "MYVAR": "mine", "OTHER": "no"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg := testConfig("test")
	cfg.EnvVars = []string{"MYVAR", "UNSET_VAR"}
	cfg.Env = map[string]string{"FOO": "bar", "HOME": "/override"}
	f := start(t, Options{LookupEnv: lookup}, cfg)
	want := map[string]string{"FOO": "bar", "MYVAR": "mine", "HOME": "/override", "OPENAI_API_KEY": "<unset>", "OTHER": "<unset>", "UNSET_VAR": "<unset>"}
	for name, w := range want {
		res, err := f.m.Call(ctxT(t), "test", "env", json.RawMessage(`{"name":"`+name+`"}`), CallHooks{})
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(t, res)[0]; got != w {
			t.Errorf("%s = %q, want %q", name, got, w)
		}
	}
}

func TestEnabledDisabledTools(t *testing.T) {
	cfg := testConfig("test")
	cfg.EnabledTools = []string{"echo", "env", "fail"}
	cfg.DisabledTools = []string{"env"}
	f := start(t, Options{}, cfg)
	var names []string
	for _, tl := range f.m.Tools(ctxT(t)) {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "echo,fail" {
		t.Errorf("tools %v", names)
	}
	if _, err := f.m.Call(ctxT(t), "test", "env", nil, CallHooks{}); err == nil || !strings.Contains(err.Error(), "disabled by the configuration") {
		t.Errorf("call to a disabled tool: %v", err)
	}
	st := f.m.Status()
	if len(st) != 1 || len(st[0].Tools) != 2 || st[0].Info == nil || st[0].State != StateReady {
		t.Errorf("status %+v", st)
	}
}

func TestDisabledServerNeverStarts(t *testing.T) {
	cfg := testConfig("off")
	cfg.Disabled = true
	f := start(t, Options{}, cfg)
	if tools := f.m.Tools(ctxT(t)); len(tools) != 0 {
		t.Errorf("tools of a disabled server: %+v", tools)
	}
	if st := f.m.Status(); len(st) != 1 || st[0].State != StateDisabled {
		t.Errorf("status %+v", st)
	}
	if n := len(f.ups.snapshot()); n != 0 {
		t.Errorf("updates for a disabled server: %+v", f.ups.snapshot())
	}
}

// A reload stops removed servers, starts new ones and leaves unchanged
// ones running.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	keepPid := filepath.Join(dir, "keep")
	keep := testConfig("keep", "-pidfile", keepPid)
	gonePid := filepath.Join(dir, "gone")
	f := start(t, Options{}, keep, testConfig("gone", "-pidfile", gonePid))
	f.m.Tools(ctxT(t))
	before := readPid(t, keepPid)
	gone := readPid(t, gonePid)
	f.m.Reload([]ServerConfig{keep, testConfig("new")})
	assertGone(t, gone)
	tools := f.m.Tools(ctxT(t))
	servers := map[string]bool{}
	for _, tl := range tools {
		servers[tl.Server] = true
	}
	if !servers["keep"] || !servers["new"] || servers["gone"] {
		t.Errorf("servers after reload: %v", servers)
	}
	if readPid(t, keepPid) != before {
		t.Error("an unchanged server was restarted")
	}
}

// A streamable HTTP server on loopback, with the configured headers.
func TestStreamableHTTP(t *testing.T) {
	cmd := exec.Command(testServer, "-http", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	cfg := ServerConfig{Name: "web", URL: url, BearerTokenEnvVar: "TOKEN", HTTPHeaders: map[string]string{"X-Test": "1"}}
	f := start(t, Options{LookupEnv: func(k string) (string, bool) { return "tok", k == "TOKEN" }}, cfg)
	res, err := f.m.Call(waitReady(t, f, "web"), "web", "echo", json.RawMessage(`{"text":"over http"}`), CallHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if texts(t, res)[0] != "over http" {
		t.Errorf("answer %+v", res)
	}
	st := f.m.Status()
	if !st[0].HTTP || !st[0].BearerToken || !strings.HasPrefix(st[0].Origin, "http://127.0.0.1:") {
		t.Errorf("status %+v", st[0])
	}
}

func waitReady(t *testing.T, f *fixture, name string) context.Context {
	t.Helper()
	f.ups.wait(t, 0, is(name, StateReady))
	return ctxT(t)
}

func TestHTTPHeaders(t *testing.T) {
	env := map[string]string{"TOKEN": "abc", "TEAM": "blue", "BLANK": "  "}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	h := httpHeaders(ServerConfig{
		BearerTokenEnvVar: "TOKEN",
		HTTPHeaders:       map[string]string{"X-Static": "s", "Bad Name": "x", "X-Bad-Value": "a\nb"},
		EnvHTTPHeaders:    map[string]string{"X-Team": "TEAM", "X-Blank": "BLANK", "X-Missing": "NOPE"},
	}, lookup)
	want := map[string]string{"Authorization": "Bearer abc", "X-Static": "s", "X-Team": "blue"}
	if len(h) != len(want) {
		t.Errorf("headers %v", h)
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
}

func TestResources(t *testing.T) {
	f := start(t, Options{}, testConfig("test"))
	ctx := ctxT(t)
	items, next, err := f.m.ListResources(ctx, "test", "", false)
	if err != nil || len(items) != 1 || next != "" || !strings.Contains(string(items[0]), `"uri":"test://greeting"`) {
		t.Fatalf("resources %s %q %v", items, next, err)
	}
	tmpl, _, err := f.m.ListResources(ctx, "test", "", true)
	if err != nil || len(tmpl) != 1 || !strings.Contains(string(tmpl[0]), `"uriTemplate":"test://item/{id}"`) {
		t.Fatalf("templates %s %v", tmpl, err)
	}
	contents, err := f.m.ReadResource(ctx, "test", "test://item/7")
	if err != nil || len(contents) != 1 || !strings.Contains(string(contents[0]), `"text":"item 7"`) {
		t.Fatalf("read %s %v", contents, err)
	}
	if _, err := f.m.ReadResource(ctx, "test", "test://nowhere"); err == nil || !strings.Contains(err.Error(), "MCP server `test`") {
		t.Errorf("missing resource: %v", err)
	}
	st := f.m.Status()
	if len(st[0].Resources) != 1 || len(st[0].ResourceTemplates) != 1 {
		t.Errorf("status resources %+v", st[0])
	}
}
