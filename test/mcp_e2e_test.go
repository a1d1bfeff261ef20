package test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/schema/refschema"
	"github.com/agentd-dev/agentd/test/mockmodel"
	"github.com/agentd-dev/agentd/test/proc"
)

// mcpServerTOML configures the test MCP server as [mcp_servers.NAME],
// with more keys when given.
func mcpServerTOML(name string, args []string, extra string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("\n[mcp_servers.%s]\ncommand = %q\nargs = [%s]\n%s\n", name, MCPServer(), strings.Join(quoted, ", "), extra)
}

// mcpItem finds the mcpToolCall item of a notification.
func mcpItem(t *testing.T, msgs []Message, method, id string) map[string]any {
	t.Helper()
	for _, m := range msgs {
		if m.Method != method {
			continue
		}
		p := unmarshal(t, m.Params)
		if str(p, "item", "type") == "mcpToolCall" && str(p, "item", "id") == id {
			return p["item"].(map[string]any)
		}
	}
	t.Fatalf("no %s for mcpToolCall %s: %v", method, id, methods(msgs))
	return nil
}

// The vertical slice: a configured stdio server starts with the daemon;
// the model sees its tools under qualified names and calls one; the call
// is an mcpToolCall item (started, progress, completed, each valid against
// the reference schema); the model's next request carries the output; and
// mcpServerStatus/list shows the server ready with its tools.
func TestMCPToolCallEndToEnd(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.FunctionCall("call_echo", "mcp__test__echo", `{"text":"hello from mcp"}`), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "") + mcpServerTOML("test", nil, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	c.Request("thread/start", map[string]any{"cwd": t.TempDir()})
	started := collectUntil(c, isMethod("thread/started"))
	res := unmarshal(t, WantResult(t, started[len(started)-2]))
	threadID := str(res, "thread", "id")

	// After thread/started, the server's state, with the thread's id.
	st := c.ReadUntil(isMethod("mcpServer/startupStatus/updated"))
	validNotification(t, st)
	p := unmarshal(t, st.Params)
	if str(p, "name") != "test" || str(p, "threadId") != threadID || (str(p, "status") != "starting" && str(p, "status") != "ready") {
		t.Fatalf("startup status %s", st.Raw)
	}

	msgs := runTurn(t, c, threadID, "echo something")
	var seq []string
	for _, msg := range msgs {
		switch msg.Method {
		case "item/started", "item/completed":
			if str(unmarshal(t, msg.Params), "item", "type") == "mcpToolCall" {
				seq = append(seq, msg.Method)
				validNotification(t, msg)
			}
		case "item/mcpToolCall/progress":
			seq = append(seq, msg.Method)
			validNotification(t, msg)
			pp := unmarshal(t, msg.Params)
			if str(pp, "itemId") != "call_echo" || str(pp, "message") != "echoing" || str(pp, "threadId") != threadID || str(pp, "turnId") == "" {
				t.Errorf("progress %s", msg.Raw)
			}
		}
	}
	if want := []string{"item/started", "item/mcpToolCall/progress", "item/completed"}; !slices.Equal(seq, want) {
		t.Fatalf("sequence %v, want %v (all: %v)", seq, want, methods(msgs))
	}
	begin := mcpItem(t, msgs, "item/started", "call_echo")
	if begin["server"] != "test" || begin["tool"] != "echo" || begin["status"] != "inProgress" || begin["readOnlyHint"] != true ||
		str(begin, "arguments", "text") != "hello from mcp" || begin["result"] != nil {
		t.Errorf("item/started %v", begin)
	}
	end := mcpItem(t, msgs, "item/completed", "call_echo")
	if end["status"] != "completed" || end["error"] != nil || end["durationMs"] == nil ||
		str(end, "result", "content", 0, "type") != "text" || str(end, "result", "content", 0, "text") != "hello from mcp" {
		t.Errorf("item/completed %v", end)
	}

	reqs := m.Requests()
	if !slices.Contains(reqs[0].ToolNames(), "mcp__test__echo") || !slices.Contains(reqs[0].ToolNames(), "mcp__test__image") {
		t.Errorf("tools offered: %v", reqs[0].ToolNames())
	}
	out, ok := reqs[1].ToolOutput("call_echo")
	if !ok || !strings.Contains(out, `"text":"hello from mcp"`) || !strings.Contains(out, "Wall time: ") {
		t.Errorf("the model read %q", out)
	}

	// The call is part of the thread's record: thread/read shows it.
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})))
	var stored map[string]any
	for _, it := range path(read, "thread", "turns", 0, "items").([]any) {
		if str(it, "type") == "mcpToolCall" {
			stored = it.(map[string]any)
		}
	}
	if stored == nil || stored["status"] != "completed" || stored["server"] != "test" || str(stored, "result", "content", 0, "text") != "hello from mcp" {
		t.Errorf("thread/read item %v", stored)
	}

	list := c.Call("mcpServerStatus/list", map[string]any{})
	var status struct {
		Data []struct {
			Name          string                    `json:"name"`
			AuthStatus    string                    `json:"authStatus"`
			RuntimeStatus string                    `json:"runtimeStatus"`
			ServerInfo    struct{ Name string }     `json:"serverInfo"`
			Tools         map[string]map[string]any `json:"tools"`
		} `json:"data"`
		NextCursor *string `json:"nextCursor"`
	}
	validResult(t, "mcpServerStatus/list", list, &status)
	if len(status.Data) != 1 || status.NextCursor != nil {
		t.Fatalf("status %s", list.Raw)
	}
	s := status.Data[0]
	if s.Name != "test" || s.RuntimeStatus != "connected" || s.ServerInfo.Name != "agentd-test" || s.AuthStatus != "unsupported" {
		t.Errorf("status %s", list.Raw)
	}
	if s.Tools["echo"]["name"] != "echo" || s.Tools["echo"]["inputSchema"] == nil || len(s.Tools) != 7 {
		t.Errorf("tools %v", s.Tools)
	}
}

// Text and image content reach the model (the image as a data URL); a
// tool error fails the item with its result; the tool timeout fails it
// with the error.
func TestMCPContentErrorsAndTimeout(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1",
			mockmodel.FunctionCall("call_img", "mcp__test__image", `{}`),
			mockmodel.FunctionCall("call_fail", "mcp__test__fail", `{}`),
			mockmodel.FunctionCall("call_slow", "mcp__test__slow", `{}`),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "") + mcpServerTOML("test", nil, "tool_timeout_sec = 0.5")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	msgs := runTurn(t, c, id, "go")

	img := mcpItem(t, msgs, "item/completed", "call_img")
	if img["status"] != "completed" || str(img, "result", "content", 1, "type") != "image" || str(img, "result", "content", 1, "mimeType") != "image/png" {
		t.Errorf("image item %v", img)
	}
	fail := mcpItem(t, msgs, "item/completed", "call_fail")
	if fail["status"] != "failed" || str(fail, "result", "content", 0, "text") != "the tool failed on purpose" || fail["error"] != nil {
		t.Errorf("failing item %v", fail)
	}
	slow := mcpItem(t, msgs, "item/completed", "call_slow")
	if slow["status"] != "failed" || slow["result"] != nil ||
		str(slow, "error", "message") != "tool call error: tool call failed for `test/slow`: timed out awaiting tools/call after 500ms" {
		t.Errorf("timed out item %v", slow)
	}
	for _, msg := range msgs {
		if msg.Method == "item/completed" {
			validNotification(t, msg)
		}
	}
	req := m.Requests()[1]
	out, _ := req.ToolOutput("call_img")
	if !strings.Contains(out, `"type":"input_image"`) || !strings.Contains(out, `"image_url":"data:image/png;base64,iVBORw0KGgo`) || !strings.Contains(out, "a red dot") {
		t.Errorf("image output %s", out)
	}
	if out, _ := req.ToolOutput("call_slow"); !strings.Contains(out, "timed out awaiting tools/call after 500ms") {
		t.Errorf("timeout output %s", out)
	}
	d.WaitLog(func(l LogLine) bool {
		return l.Msg == "MCP server stderr" && strings.Contains(l.Str("line"), "slow call cancelled")
	})
}

// A required server that fails to start fails thread/start, naming it;
// an optional one is reported failed and listed with the error.
func TestMCPRequiredServerFailsThreadStart(t *testing.T) {
	m := mockmodel.New(t)
	cfg := mockConfig(m, "") + "\n[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\nrequired = true\n"
	d := Start(t, Options{ConfigTOML: cfg})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	resp := c.Call("thread/start", map[string]any{"cwd": t.TempDir()})
	if resp.Error == nil || resp.Error.Code != -32603 ||
		!strings.HasPrefix(resp.Error.Message, "error creating thread: required MCP servers failed to initialize: broken: MCP startup failed: ") ||
		!strings.Contains(resp.Error.Message, "/nonexistent/mcp-server") {
		t.Fatalf("thread/start answered %s", resp.Raw)
	}
	list := c.Call("mcpServerStatus/list", map[string]any{})
	var status struct {
		Data []struct {
			Name          string `json:"name"`
			RuntimeStatus string `json:"runtimeStatus"`
			ToolsError    string `json:"toolsError"`
		} `json:"data"`
	}
	validResult(t, "mcpServerStatus/list", list, &status)
	if len(status.Data) != 1 || status.Data[0].RuntimeStatus != "failed" || !strings.HasPrefix(status.Data[0].ToolsError, "MCP startup failed: ") {
		t.Errorf("status %s", list.Raw)
	}
}

// Optional servers never hold a thread back; a reload starts a server
// added to config.toml, and every client hears it start and become ready.
func TestMCPStartupStatusAndReload(t *testing.T) {
	m := mockmodel.New(t)
	base := mockConfig(m, "") + "\n[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n"
	d := Start(t, Options{ConfigTOML: base})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	started := c.Request("thread/start", map[string]any{"cwd": t.TempDir()})
	st := c.ReadUntil(isMethod("mcpServer/startupStatus/updated"))
	validNotification(t, st)
	// "starting" if the client was quick, else "failed" with the cause.
	if p := unmarshal(t, st.Params); str(p, "name") != "broken" || (str(p, "status") == "failed" && !strings.HasPrefix(str(p, "error"), "MCP client for `broken` failed to start: MCP startup failed: ")) {
		t.Fatalf("startup status %s", st.Raw)
	}
	// The thread is started before the reload: a thread/start still
	// running would tell its thread of the added server too.
	WantResult(t, c.Response(started))

	if err := os.WriteFile(filepath.Join(d.Home, "config.toml"), []byte(base+mcpServerTOML("added", nil, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	WantResult(t, c.Call("config/mcpServer/reload", nil))
	var seen []string
	for !slices.Contains(seen, "ready") {
		n := c.ReadUntil(isMethod("mcpServer/startupStatus/updated"))
		validNotification(t, n)
		p := unmarshal(t, n.Params)
		if str(p, "name") != "added" {
			continue
		}
		if path(p, "threadId") != nil {
			t.Errorf("a daemon-wide update names a thread: %s", n.Raw)
		}
		seen = append(seen, str(p, "status"))
	}
	if !slices.Equal(seen, []string{"starting", "ready"}) {
		t.Errorf("added server went %v", seen)
	}
	list := c.Call("mcpServerStatus/list", map[string]any{"limit": 1})
	var page struct {
		Data       []struct{ Name string } `json:"data"`
		NextCursor *string                 `json:"nextCursor"`
	}
	validResult(t, "mcpServerStatus/list", list, &page)
	if len(page.Data) != 1 || page.Data[0].Name != "added" || page.NextCursor == nil {
		t.Fatalf("first page %s", list.Raw)
	}
	list = c.Call("mcpServerStatus/list", map[string]any{"limit": 1, "cursor": *page.NextCursor})
	validResult(t, "mcpServerStatus/list", list, &page)
	if len(page.Data) != 1 || page.Data[0].Name != "broken" || page.NextCursor != nil {
		t.Fatalf("second page %s", list.Raw)
	}
}

// A server that crashes mid-call fails that call; it is started again
// (every client hears it fail, start and become ready) and the next call
// works.
func TestMCPRestartAfterCrash(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.FunctionCall("call_1", "mcp__test__echo", `{"text":"one"}`), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "it crashed"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.FunctionCall("call_2", "mcp__test__echo", `{"text":"two"}`), mockmodel.Completed("resp_3", usage())),
		mockmodel.Reply("resp_4", mockmodel.Text("msg_4", "it works"), mockmodel.Completed("resp_4", usage())),
	)
	marker := filepath.Join(t.TempDir(), "crashed")
	d := Start(t, Options{ConfigTOML: mockConfig(m, "") + mcpServerTOML("test", []string{"-crash-once", marker}, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	msgs := runTurn(t, c, id, "one")
	first := mcpItem(t, msgs, "item/completed", "call_1")
	if first["status"] != "failed" || !strings.HasPrefix(str(first, "error", "message"), "tool call error: tool call failed for `test/echo`: ") {
		t.Fatalf("the crashed call: %v", first)
	}
	// The daemon-wide updates from the crash on (they race the turn's
	// end: some may have come with it).
	var seen []string
	note := func(n Message) {
		validNotification(t, n)
		p := unmarshal(t, n.Params)
		if path(p, "threadId") != nil || (len(seen) == 0 && str(p, "status") != "failed") {
			return // the thread's view, or the first start
		}
		seen = append(seen, str(p, "status"))
		if str(p, "status") == "failed" {
			mustContain(t, str(p, "error"), "MCP server exited: exit status 3")
		}
	}
	for _, n := range msgs {
		if n.Method == "mcpServer/startupStatus/updated" {
			note(n)
		}
	}
	for !slices.Contains(seen, "ready") {
		note(c.ReadUntil(isMethod("mcpServer/startupStatus/updated")))
	}
	if !slices.Equal(seen, []string{"failed", "starting", "ready"}) {
		t.Errorf("the server went %v", seen)
	}
	msgs = runTurn(t, c, id, "two")
	if second := mcpItem(t, msgs, "item/completed", "call_2"); second["status"] != "completed" || str(second, "result", "content", 0, "text") != "two" {
		t.Errorf("after the restart: %v", second)
	}
}

// No MCP server, nor what it started, outlives the daemon: after stdin
// EOF, and after SIGTERM.
func TestMCPNoOrphans(t *testing.T) {
	for _, how := range []string{"stdin EOF", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			m := mockmodel.New(t)
			dir := t.TempDir()
			pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
			d := Start(t, Options{ConfigTOML: mockConfig(m, "") + mcpServerTOML("test", []string{"-pidfile", pidFile, "-child-pidfile", childFile}, "")})
			c := d.Stdio()
			c.Initialize("e2e", nil)
			d.WaitLog(LogMsg("MCP server ready"))
			pid, child := waitPidFile(t, pidFile), waitPidFile(t, childFile)
			if !proc.Alive(pid) || !proc.Alive(child) {
				t.Fatal("the server is not running")
			}
			if how == "SIGTERM" {
				d.Signal(syscall.SIGTERM)
			} else {
				d.CloseStdin()
			}
			if code := d.Wait(); code != 0 {
				t.Errorf("exit code %d", code)
			}
			// The daemon has sent SIGKILL to each group before it
			// exited; the kernel delivers it a moment later.
			for _, p := range []int{pid, child} {
				if !diesWithin(p, WaitTimeout) {
					t.Errorf("process %d outlived the daemon", p)
				}
			}
		})
	}
}

func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond) // the server writes it as it starts
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// diesWithin reports whether the process is seen dead within d. Once seen
// dead it is not looked at again: its pid may be reused.
func diesWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for proc.Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// A tool not marked read-only asks first, through the reference's
// mcpServer/elicitation/request; a server's own question (elicitation)
// reaches the client the same way, and the answer goes back to the
// server. Each request ends with serverRequest/resolved.
func TestMCPApprovalAndElicitation(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.FunctionCall("call_write", "mcp__test__write", `{"path":"notes.txt"}`), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.FunctionCall("call_ask", "mcp__test__ask", `{"question":"Which colour?"}`), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "done"), mockmodel.Completed("resp_3", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "on-request"`) + mcpServerTOML("test", nil, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("go")})

	approval := c.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
	if err := refschema.Validator(t).ValidateServerRequest(approval.Method, approval.Raw); err != nil {
		t.Fatalf("%v\n%s", err, approval.Raw)
	}
	p := unmarshal(t, approval.Params)
	if approval.Method != "mcpServer/elicitation/request" || str(p, "serverName") != "test" || str(p, "threadId") != id ||
		str(p, "_meta", "codex_approval_kind") != "mcp_tool_call" || str(p, "_meta", "tool_params", "path") != "notes.txt" ||
		str(p, "message") != `Allow the test MCP server to run tool "write"?` {
		t.Fatalf("approval request %s", approval.Raw)
	}
	c.Send(map[string]any{"id": approval.ID, "result": map[string]any{"action": "accept", "content": map[string]any{}}})
	c.ReadUntil(isMethod("serverRequest/resolved"))

	form := c.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
	if err := refschema.Validator(t).ValidateServerRequest(form.Method, form.Raw); err != nil {
		t.Fatalf("%v\n%s", err, form.Raw)
	}
	p = unmarshal(t, form.Params)
	if form.Method != "mcpServer/elicitation/request" || str(p, "message") != "Which colour?" || str(p, "mode") != "form" ||
		path(p, "requestedSchema", "properties", "answer") == nil || path(p, "_meta", "codex_approval_kind") != nil {
		t.Fatalf("elicitation %s", form.Raw)
	}
	c.Send(map[string]any{"id": form.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"answer": "green"}}})
	msgs := collectUntil(c, isMethod("turn/completed"))
	if !slices.ContainsFunc(msgs, func(m Message) bool { return m.Method == "serverRequest/resolved" }) {
		t.Errorf("no serverRequest/resolved for the form: %v", methods(msgs))
	}
	if it := mcpItem(t, msgs, "item/completed", "call_ask"); it["status"] != "completed" || str(it, "result", "content", 0, "text") != "accepted: green" {
		t.Errorf("ask %v", it)
	}
	reqs := m.Requests()
	if out, _ := reqs[1].ToolOutput("call_write"); !strings.Contains(out, "would write notes.txt") {
		t.Errorf("write output %s", out)
	}
}

// A config write that adds a server starts it, without a restart; one
// that removes it stops it. An invalid server table is refused by the
// write itself.
func TestMCPConfigWriteApplies(t *testing.T) {
	m := mockmodel.New(t)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	bad := c.Call("config/value/write", map[string]any{"keyPath": "mcp_servers.bad", "value": map[string]any{"args": []string{"x"}}, "mergeStrategy": "replace"})
	if bad.Error == nil || !strings.Contains(bad.Error.Message, "invalid transport") {
		t.Fatalf("invalid server written: %s", bad.Raw)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	WantResult(t, c.Call("config/value/write", map[string]any{"keyPath": "mcp_servers.added", "mergeStrategy": "replace",
		"value": map[string]any{"command": MCPServer(), "args": []string{"-pidfile", pidFile}}}))
	for {
		n := c.ReadUntil(isMethod("mcpServer/startupStatus/updated"))
		if p := unmarshal(t, n.Params); str(p, "name") == "added" && str(p, "status") == "ready" {
			break
		}
	}
	pid := waitPidFile(t, pidFile)
	WantResult(t, c.Call("config/value/write", map[string]any{"keyPath": "mcp_servers.added", "value": nil, "mergeStrategy": "replace"}))
	d.WaitLog(LogMsg("reloading MCP servers"))
	if !diesWithin(pid, WaitTimeout) { // the stop is not reported to clients
		t.Error("the removed server still runs")
	}
}

// turn/interrupt cancels a running call at the server.
func TestMCPInterruptCancelsCall(t *testing.T) {
	m := mockmodel.New(t, mockmodel.AllowUnused())
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.FunctionCall("call_slow", "mcp__test__slow", `{}`), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "never read"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "") + mcpServerTOML("test", nil, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	res := unmarshal(t, WantResult(t, c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("go")})))
	c.ReadUntil(isMethod("item/mcpToolCall/progress")) // the server is in the call
	WantResult(t, c.Call("turn/interrupt", map[string]any{"threadId": id, "turnId": str(res, "turn", "id")}))
	done := c.ReadUntil(isMethod("turn/completed"))
	if str(unmarshal(t, done.Params), "turn", "status") != "interrupted" {
		t.Fatalf("turn ended %s", done.Raw)
	}
	d.WaitLog(func(l LogLine) bool {
		return l.Msg == "MCP server stderr" && strings.Contains(l.Str("line"), "slow call cancelled")
	})
}

// A streamable HTTP server on loopback, configured by url with a bearer
// token from the environment, serves the model's call.
func TestMCPStreamableHTTPServer(t *testing.T) {
	srv := exec.Command(MCPServer(), "-http", "127.0.0.1:0", "-require-bearer", "secret")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.FunctionCall("call_1", "mcp__web__echo", `{"text":"over http"}`), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	cfg := mockConfig(m, "") + fmt.Sprintf("\n[mcp_servers.web]\nurl = %q\nbearer_token_env_var = \"WEB_TOKEN\"\n", url)
	d := Start(t, Options{ConfigTOML: cfg, Env: []string{"WEB_TOKEN=secret"}})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	msgs := runTurn(t, c, id, "go")
	if it := mcpItem(t, msgs, "item/completed", "call_1"); it["status"] != "completed" || str(it, "result", "content", 0, "text") != "over http" {
		t.Errorf("item %v", it)
	}
	list := c.Call("mcpServerStatus/list", map[string]any{})
	var status struct {
		Data []struct {
			AuthStatus string `json:"authStatus"`
			HTTPOrigin string `json:"httpOrigin"`
		} `json:"data"`
	}
	validResult(t, "mcpServerStatus/list", list, &status)
	if len(status.Data) != 1 || status.Data[0].AuthStatus != "bearerToken" || !strings.HasPrefix(status.Data[0].HTTPOrigin, "http://127.0.0.1:") {
		t.Errorf("status %s", list.Raw)
	}
}

// The model lists and reads the servers' resources with the reference's
// resource tools; a client reads a resource (mcpServer/resource/read) and
// calls a tool itself (mcpServer/tool/call, in a loaded thread's name).
func TestMCPResourcesAndClientCalls(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1",
			mockmodel.FunctionCall("call_list", "list_mcp_resources", `{}`),
			mockmodel.FunctionCall("call_read", "read_mcp_resource", `{"server":"test","uri":"test://greeting"}`),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "") + mcpServerTOML("test", nil, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "read")
	reqs := m.Requests()
	for _, name := range []string{"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"} {
		if !slices.Contains(reqs[0].ToolNames(), name) {
			t.Errorf("%s not offered: %v", name, reqs[0].ToolNames())
		}
	}
	if out, _ := reqs[1].ToolOutput("call_list"); !strings.Contains(out, `"uri":"test://greeting"`) || !strings.Contains(out, `"server":"test"`) {
		t.Errorf("list output %s", out)
	}
	if out, _ := reqs[1].ToolOutput("call_read"); !strings.Contains(out, "hello from a resource") {
		t.Errorf("read output %s", out)
	}

	read := c.Call("mcpServer/resource/read", map[string]any{"server": "test", "uri": "test://item/42"})
	var contents struct {
		Contents []struct{ URI, Text string } `json:"contents"`
	}
	validResult(t, "mcpServer/resource/read", read, &contents)
	if len(contents.Contents) != 1 || contents.Contents[0].Text != "item 42" {
		t.Errorf("resource read %s", read.Raw)
	}
	call := c.Call("mcpServer/tool/call", map[string]any{"threadId": id, "server": "test", "tool": "echo", "arguments": map[string]any{"text": "direct"}})
	var result struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	validResult(t, "mcpServer/tool/call", call, &result)
	if len(result.Content) != 1 || result.Content[0].Text != "direct" || result.IsError {
		t.Errorf("tool call %s", call.Raw)
	}
	WantError(t, c.Call("mcpServer/tool/call", map[string]any{"threadId": "00000000-0000-0000-0000-000000000000", "server": "test", "tool": "echo"}),
		-32600, "thread not found: 00000000-0000-0000-0000-000000000000")
	bad := c.Call("mcpServer/resource/read", map[string]any{"server": "nope", "uri": "x://y"})
	if bad.Error == nil || !strings.Contains(bad.Error.Message, "unknown MCP server `nope`") {
		t.Errorf("unknown server: %s", bad.Raw)
	}
}

// A resource of 300 KB reaches the model cut to the default tool output
// limit (about 12,000 tokens: 48 KB), its head and tail kept, as the
// reference cuts every tool output it records; a client reading it
// itself gets it whole.
func TestMCPBigResourceCutForTheModel(t *testing.T) {
	const size = 300_000
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1",
			mockmodel.FunctionCall("call_read", "read_mcp_resource", `{"server":"test","uri":"test://big"}`),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "") + mcpServerTOML("test", []string{"-big-resource", strconv.Itoa(size)}, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "read")
	out, ok := m.Requests()[1].ToolOutput("call_read")
	if !ok || len(out) > 48_500 || len(out) < 40_000 || !strings.Contains(out, `"text":"BEGIN`) || !strings.Contains(out, `END"`) || !strings.Contains(out, "tokens truncated") {
		t.Errorf("the model read %d bytes: %.100q … %.100q", len(out), out, out[max(len(out)-100, 0):])
	}
	read := c.Call("mcpServer/resource/read", map[string]any{"server": "test", "uri": "test://big"})
	var contents struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	validResult(t, "mcpServer/resource/read", read, &contents)
	if len(contents.Contents) != 1 || len(contents.Contents[0].Text) != size {
		t.Errorf("the client read %d contents", len(contents.Contents))
	}
}

// An optional server that is slow to start holds no thread back
// (openai/codex#29376): thread/start answers while the server has not
// even begun to speak, and the server becomes ready afterwards.
func TestMCPSlowOptionalServerHoldsNoThread(t *testing.T) {
	m := mockmodel.New(t)
	gate := filepath.Join(t.TempDir(), "go")
	script := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; exec %s", gate, MCPServer())
	cfg := mockConfig(m, "") + fmt.Sprintf("\n[mcp_servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", %q]\n", script)
	d := Start(t, Options{ConfigTOML: cfg})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	// The server waits for the gate, which opens only once the thread
	// has started: a thread/start that waited for it would never answer.
	startThread(t, c, map[string]any{"cwd": t.TempDir()})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		n := c.ReadUntil(isMethod("mcpServer/startupStatus/updated"))
		p := unmarshal(t, n.Params)
		if str(p, "name") != "slow" || str(p, "status") == "starting" {
			continue
		}
		if str(p, "status") != "ready" {
			t.Fatalf("the slow server: %s", n.Raw)
		}
		break
	}
}
