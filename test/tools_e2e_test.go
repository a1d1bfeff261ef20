package test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// shellPath is the shell agentd runs command lines through: the test's
// $SHELL when it is an executable, else bash or sh, as exec.DetectShell.
func shellPath(t *testing.T) string {
	t.Helper()
	if sh := os.Getenv("SHELL"); filepath.IsAbs(sh) {
		if fi, err := os.Stat(sh); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return sh
		}
	}
	for _, p := range []string{"/bin/bash", "/usr/bin/bash", "/bin/sh"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "/bin/sh"
}

// commandItem finds the commandExecution item of a notification.
func commandItem(t *testing.T, msgs []Message, method, id string) map[string]any {
	t.Helper()
	for _, m := range msgs {
		if m.Method != method {
			continue
		}
		p := unmarshal(t, m.Params)
		if str(p, "item", "type") == "commandExecution" && str(p, "item", "id") == id {
			return p["item"].(map[string]any)
		}
	}
	t.Fatalf("no %s for commandExecution %s: %v", method, id, methods(msgs))
	return nil
}

// Every shell form a model calls runs through the real daemon as a
// commandExecution item, after the approval the policy asks for, and the
// model reads the form's own output format in its next request.
func TestShellFormsEndToEnd(t *testing.T) {
	work := t.TempDir()
	sh := shellPath(t)
	forms := []struct {
		name    string
		call    mockmodel.Events
		callID  string
		command string // as the item shows it
		source  string // of the completed item
		file    string
		output  func(string) bool
	}{
		{"shell", mockmodel.Shell("c_shell", "touch", "by-shell"), "c_shell", "touch by-shell", "agent", "by-shell",
			func(o string) bool {
				var v struct {
					Output   string         `json:"output"`
					Metadata map[string]any `json:"metadata"`
				}
				return json.Unmarshal([]byte(o), &v) == nil && v.Output == "" && v.Metadata["exit_code"] == 0.0 && v.Metadata["duration_seconds"] != nil
			}},
		{"shell_command", mockmodel.ShellCommand("c_sc", "touch by-shell-command && echo made"), "c_sc",
			sh + " -lc 'touch by-shell-command && echo made'", "agent", "by-shell-command",
			func(o string) bool {
				return strings.HasPrefix(o, "Exit code: 0\nWall time: ") && strings.HasSuffix(o, " seconds\nOutput:\nmade\n")
			}},
		{"local_shell_call", mockmodel.LocalShellCall("c_local", "touch", "by-local-shell"), "c_local", "touch by-local-shell", "agent", "by-local-shell",
			func(o string) bool {
				return strings.HasPrefix(o, `{"output":"","metadata":{"exit_code":0,"duration_seconds":`)
			}},
		{"exec_command", mockmodel.ExecCommand("c_exec", "touch by-exec-command"), "c_exec",
			sh + " -lc 'touch by-exec-command'", "unifiedExecStartup", "by-exec-command",
			func(o string) bool { return strings.Contains(o, "Process exited with code 0\n") }},
	}
	m := mockmodel.New(t)
	for i, f := range forms {
		m.Enqueue(
			mockmodel.Reply("resp_a", f.call, mockmodel.Completed("resp_a", usage())),
			mockmodel.Reply("resp_b", mockmodel.Text("msg_"+string(rune('a'+i)), "done"), mockmodel.Completed("resp_b", usage())),
		)
	}
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "untrusted"
sandbox_mode = "danger-full-access"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	for i, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("run it")})
			var msgs []Message
			for {
				msg := c.Next()
				msgs = append(msgs, msg)
				if msg.IsServerRequest() {
					p := unmarshal(t, msg.Params)
					if msg.Method != "item/commandExecution/requestApproval" || str(p, "itemId") != f.callID || str(p, "command") != f.command {
						t.Fatalf("approval request %s", msg.Raw)
					}
					c.Send(map[string]any{"id": json.RawMessage(msg.ID), "result": map[string]any{"decision": "accept"}})
				}
				if msg.Method == "turn/completed" {
					break
				}
			}
			if n := len(slices.DeleteFunc(slices.Clone(msgs), func(m Message) bool { return !m.IsServerRequest() })); n != 1 {
				t.Fatalf("%d approval requests", n)
			}
			started := commandItem(t, msgs, "item/started", f.callID)
			if started["command"] != f.command || started["cwd"] != work || started["source"] != "agent" || started["status"] != "inProgress" {
				t.Fatalf("item/started %v", started)
			}
			done := commandItem(t, msgs, "item/completed", f.callID)
			if done["command"] != f.command || done["source"] != f.source || done["status"] != "completed" || done["exitCode"] != 0.0 {
				t.Fatalf("item/completed %v", done)
			}
			if _, err := os.Stat(filepath.Join(work, f.file)); err != nil {
				t.Fatalf("the command did not run: %v", err)
			}
			req := m.Requests()[2*i+1]
			out, ok := req.ToolOutput(f.callID)
			if !ok || !f.output(out) {
				t.Fatalf("the model read %q", out)
			}
			// The call goes back to the model as it came, answered by a
			// function_call_output.
			var kinds []string
			for _, it := range req.Input() {
				if it["call_id"] == f.callID {
					kinds = append(kinds, it["type"].(string))
				}
			}
			if len(kinds) != 2 || kinds[1] != "function_call_output" {
				t.Fatalf("history for %s: %v", f.callID, kinds)
			}
		})
	}
}

// apply_patch called as a JSON function edits files like the freeform
// tool; so does apply_patch run as a command through a shell tool.
func TestApplyPatchJSONFunction(t *testing.T) {
	work := t.TempDir()
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ApplyPatchFunction("c_patch", "*** Begin Patch\n*** Add File: notes.txt\n+from the function form\n*** End Patch\n"),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "patched"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Shell("c_shell_patch", "apply_patch", "*** Begin Patch\n*** Add File: more.txt\n+through the shell\n*** End Patch\n"),
			mockmodel.Completed("resp_3", usage())),
		mockmodel.Reply("resp_4", mockmodel.Text("msg_4", "patched again"), mockmodel.Completed("resp_4", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "never"
sandbox_mode = "workspace-write"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	msgs := runTurn(t, c, id, "write notes")
	if got := readFile(t, filepath.Join(work, "notes.txt")); got != "from the function form\n" {
		t.Fatalf("notes.txt = %q", got)
	}
	i := slices.IndexFunc(msgs, func(m Message) bool {
		return m.Method == "item/completed" && str(unmarshal(t, m.Params), "item", "type") == "fileChange"
	})
	if i < 0 || str(unmarshal(t, msgs[i].Params), "item", "status") != "completed" {
		t.Fatalf("no completed fileChange item: %v", methods(msgs))
	}
	out, _ := m.Requests()[1].ToolOutput("c_patch")
	if !strings.HasPrefix(out, "Exit code: 0\nWall time: ") {
		t.Fatalf("the model read %q", out)
	}

	msgs = runTurn(t, c, id, "write more")
	if got := readFile(t, filepath.Join(work, "more.txt")); got != "through the shell\n" {
		t.Fatalf("more.txt = %q", got)
	}
	for _, msg := range msgs {
		if msg.Method == "item/started" && str(unmarshal(t, msg.Params), "item", "type") == "commandExecution" {
			t.Fatalf("apply_patch through the shell ran as a command: %s", msg.Raw)
		}
	}
	if out, _ := m.Requests()[3].ToolOutput("c_shell_patch"); !strings.Contains(out, "Success. Updated the following files:\nA more.txt") {
		t.Fatalf("the model read %q", out)
	}
}

// toolNamesFor runs one turn on a new thread of model and returns the
// tools its request offered.
func toolNamesFor(t *testing.T, c *Client, m *mockmodel.Server, model string) []string {
	t.Helper()
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok"), mockmodel.Completed("resp_1", usage())))
	id := startThread(t, c, map[string]any{"cwd": t.TempDir(), "model": model})
	runTurn(t, c, id, "hi")
	reqs := m.Requests()
	r := reqs[len(reqs)-1]
	if r.Model() != model {
		t.Fatalf("request for %q, want %q", r.Model(), model)
	}
	return r.ToolNames()
}

// The tools offered follow the model's catalogue entry and the feature
// flags: exec_command unless unified_exec is off, then the entry's own
// family; shell_tool off offers none; a model the catalogue does not know
// gets exec_command and no apply_patch unless apply_patch_freeform.
func TestToolFamiliesOffered(t *testing.T) {
	base := []string{"update_plan", "request_user_input", "view_image", "web_search"}
	want := func(names ...string) []string { return append(names, base...) }
	catalogue := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(catalogue, []byte(`{"models":[
		{"slug":"m-shell","shell_type":"default","apply_patch_tool_type":"function","display_name":"ignored"},
		{"slug":"m-local","shell_type":"local","apply_patch_tool_type":null},
		{"slug":"m-cmd","shell_type":"shell_command","apply_patch_tool_type":"freeform"},
		{"slug":"m-exec","shell_type":"unified_exec","apply_patch_tool_type":"freeform"},
		{"slug":"m-none","shell_type":"disabled"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		config string
		args   []string
		models map[string][]string
	}{
		{"built-in catalogue", "", nil, map[string][]string{
			"gpt-5.5":            want("exec_command", "write_stdin", "apply_patch"),
			"gpt-5.5-2026-01-01": want("exec_command", "write_stdin", "apply_patch"),
			"mock-model":         want("exec_command", "write_stdin"),
		}},
		{"built-in without unified_exec", "[features]\nunified_exec = false\napply_patch_freeform = true", nil, map[string][]string{
			"gpt-5.5":    want("shell_command", "apply_patch"),
			"mock-model": want("exec_command", "write_stdin", "apply_patch"),
		}},
		{"shell_tool disabled", "", []string{"--disable", "shell_tool"}, map[string][]string{
			"gpt-5.5": want("apply_patch"),
		}},
		{"model_catalog_json", "model_catalog_json = " + strconv.Quote(catalogue) + "\n[features]\nunified_exec = false", nil, map[string][]string{
			"m-shell": want("shell", "apply_patch"),
			"m-local": want("local_shell"),
			"m-cmd":   want("shell_command", "apply_patch"),
			"m-exec":  want("exec_command", "write_stdin", "apply_patch"),
			"m-none":  want(),
			"gpt-5.5": want("exec_command", "write_stdin"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mockmodel.New(t)
			d := Start(t, Options{ConfigTOML: mockConfig(m, tc.config), Args: tc.args})
			c := d.Stdio()
			c.Initialize("e2e", nil)
			for _, model := range slices.Sorted(maps.Keys(tc.models)) {
				if got := toolNamesFor(t, c, m, model); !slices.Equal(got, tc.models[model]) {
					t.Errorf("%s: tools %v, want %v", model, got, tc.models[model])
				}
			}
		})
	}
}

// A client's dynamic tool with deferLoading is not offered to the model
// (the reference loads such tools on demand); one without a namespace is
// refused as the reference refuses it.
func TestDeferredDynamicToolsHidden(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "done"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	fn := func(name string, deferred bool) map[string]any {
		return map[string]any{"type": "function", "name": name, "description": "d", "inputSchema": schema, "deferLoading": deferred}
	}
	WantError(t, c.Call("thread/start", map[string]any{"cwd": t.TempDir(), "dynamicTools": []any{fn("lonely", true)}}),
		codeInvalidRequest, "deferred dynamic tool must include a namespace: lonely")
	id := startThread(t, c, map[string]any{"cwd": t.TempDir(), "dynamicTools": []any{
		fn("plain", false),
		map[string]any{"type": "namespace", "name": "ns", "description": "tools", "tools": []any{fn("shown", false), fn("hidden", true)}},
	}})
	runTurn(t, c, id, "go")
	names := m.Requests()[0].ToolNames()
	if !slices.Contains(names, "plain") || !slices.Contains(names, "ns__shown") || slices.Contains(names, "ns__hidden") {
		t.Fatalf("tools offered: %v", names)
	}
}

// A model_catalog_json the daemon cannot use stops it at startup with
// the reason.
func TestBadModelCatalogue(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(bad, []byte(`{"models":[{"slug":"x","shell_type":"bash"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := mockmodel.New(t, mockmodel.AllowUnused())
	d := Start(t, Options{ConfigTOML: mockConfig(m, "model_catalog_json = "+strconv.Quote(bad)), NoWait: true})
	code := d.Wait()
	if code == 0 || !strings.Contains(d.Stderr(), "model_catalog_json") || !strings.Contains(d.Stderr(), `unknown shell_type`) {
		t.Fatalf("exit %d, stderr:\n%s", code, d.Stderr())
	}
}

// A command accepted for the session is not asked about again in a later
// turn of the thread, whichever shell form runs it; another command still
// asks.
func TestAcceptForSessionAcrossTurns(t *testing.T) {
	work := t.TempDir()
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("c1", "touch remembered"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "one"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.ShellCommand("c2", "touch remembered"), mockmodel.Completed("resp_3", usage())),
		mockmodel.Reply("resp_4", mockmodel.Text("msg_4", "two"), mockmodel.Completed("resp_4", usage())),
		mockmodel.Reply("resp_5", mockmodel.Shell("c3", "touch", "other"), mockmodel.Completed("resp_5", usage())),
		mockmodel.Reply("resp_6", mockmodel.Text("msg_6", "three"), mockmodel.Completed("resp_6", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "untrusted"
sandbox_mode = "danger-full-access"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	turn := func(decision string) (asked []string) {
		t.Helper()
		c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("go")})
		for {
			msg := c.Next()
			if msg.IsServerRequest() {
				asked = append(asked, str(unmarshal(t, msg.Params), "itemId"))
				c.Send(map[string]any{"id": json.RawMessage(msg.ID), "result": map[string]any{"decision": decision}})
			}
			if msg.Method == "turn/completed" {
				return asked
			}
		}
	}
	if asked := turn("acceptForSession"); !slices.Equal(asked, []string{"c1"}) {
		t.Fatalf("turn 1 asked for %v", asked)
	}
	if asked := turn("decline"); len(asked) != 0 {
		t.Fatalf("turn 2 asked again for %v", asked)
	}
	if out, _ := m.Requests()[3].ToolOutput("c2"); !strings.HasPrefix(out, "Exit code: 0\n") {
		t.Fatalf("the remembered command did not run: %q", out)
	}
	if asked := turn("decline"); !slices.Equal(asked, []string{"c3"}) {
		t.Fatalf("turn 3 asked for %v", asked)
	}
	if _, err := os.Stat(filepath.Join(work, "other")); err == nil {
		t.Fatal("the declined command ran")
	}
}

// A local_shell_call and its answer are kept in the rollout: after a
// restart and a resume, the model's next request replays the call as it
// came and its function_call_output, and thread/resume shows the command.
func TestLocalShellCallReplayedAfterRestart(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.LocalShellAction("c_local", map[string]any{
			"type": "exec", "command": []string{"sh", "-c", "echo from-local"}, "timeout_ms": 5000, "env": map[string]any{}}),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "first done"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "second done"), mockmodel.Completed("resp_3", usage())),
	)
	home, work := shortTempDir(t), t.TempDir()
	cfg := mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"`)
	d := Start(t, Options{Home: home, ConfigTOML: cfg})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	runTurn(t, c, id, "run it")
	_, c2 := restarted(t, d, Options{})
	res := unmarshal(t, WantResult(t, c2.Call("thread/resume", map[string]any{"threadId": id})))
	items, _ := path(res, "thread", "turns", 0, "items").([]any)
	i := slices.IndexFunc(items, func(it any) bool { return str(it, "type") == "commandExecution" && str(it, "id") == "c_local" })
	if i < 0 || str(items[i], "command") != "sh -c 'echo from-local'" || str(items[i], "aggregatedOutput") != "from-local\n" {
		t.Fatalf("resumed items %v", items)
	}
	runTurn(t, c2, id, "again")
	reqs := m.Requests()
	first, last := reqs[1].Input(), reqs[2].Input()
	call := slices.IndexFunc(last, func(it map[string]any) bool { return it["type"] == "local_shell_call" })
	if call < 0 || call+1 >= len(last) {
		t.Fatalf("no local_shell_call in the request after the restart: %v", last)
	}
	want, _ := json.Marshal(first[slices.IndexFunc(first, func(it map[string]any) bool { return it["type"] == "local_shell_call" })])
	if got, _ := json.Marshal(last[call]); string(got) != string(want) {
		t.Fatalf("call replayed as %s, sent as %s", got, want)
	}
	if out := last[call+1]; out["type"] != "function_call_output" || out["call_id"] != "c_local" ||
		!strings.HasPrefix(out["output"].(string), `{"output":"from-local\n"`) {
		t.Fatalf("answer after the call: %v", out)
	}
}

// turnAnswering runs a turn on thread id, answering every approval
// request with decision, and returns the turn's messages and the
// approval requests among them.
func turnAnswering(t *testing.T, c *Client, id, decision string) (msgs, asked []Message) {
	t.Helper()
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("go")})
	for {
		msg := c.Next()
		msgs = append(msgs, msg)
		if msg.IsServerRequest() {
			asked = append(asked, msg)
			c.Send(map[string]any{"id": json.RawMessage(msg.ID), "result": map[string]any{"decision": decision}})
		}
		if msg.Method == "turn/completed" {
			return msgs, asked
		}
	}
}

// One approval per command: a command the user approved that the
// Landlock sandbox then stops is run again outside it, where the policy
// allows that (untrusted here), without a second prompt. Under "never"
// the denied command is not retried.
func TestApprovedCommandDeniedBySandboxIsAskedOnce(t *testing.T) {
	if caps := policy.Detect(); caps.LandlockABI == 0 || !caps.Seccomp {
		t.Skipf("the kernel offers no Landlock sandbox here (%s)", caps)
	}
	work, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "made")
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("c_denied", "touch "+target), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.ExecCommand("c_never", "touch "+target+"-never"), mockmodel.Completed("resp_3", usage())),
		mockmodel.Reply("resp_4", mockmodel.Text("msg_4", "done"), mockmodel.Completed("resp_4", usage())),
	)
	// /tmp is not writable in the sandbox: outside is denied, work (the
	// cwd, a writable root) is not.
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "untrusted"
sandbox_mode = "workspace-write"
[sandbox_workspace_write]
exclude_slash_tmp = true
exclude_tmpdir_env_var = true
`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	msgs, asked := turnAnswering(t, c, id, "accept")
	if len(asked) != 1 || asked[0].Method != "item/commandExecution/requestApproval" {
		t.Fatalf("%d approval requests for one command, want 1: %v", len(asked), methods(msgs))
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the approved command did not run outside the sandbox: %v", err)
	}
	done := commandItem(t, msgs, "item/completed", "c_denied")
	if done["status"] != "completed" || done["exitCode"] != 0.0 {
		t.Fatalf("item/completed %v", done)
	}
	if out, _ := m.Requests()[1].ToolOutput("c_denied"); !strings.Contains(out, "Process exited with code 0\n") {
		t.Fatalf("the model read %q", out)
	}

	// Under "never" (set on the turn) nothing asks and nothing retries.
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("again"), "approvalPolicy": "never"})
	msgs = collectUntil(c, isMethod("turn/completed"))
	for _, msg := range msgs {
		if msg.IsServerRequest() {
			t.Fatalf("asked under never: %s", msg.Raw)
		}
	}
	if _, err := os.Stat(target + "-never"); err == nil {
		t.Fatal("under never the denied command was retried outside the sandbox")
	}
	if done := commandItem(t, msgs, "item/completed", "c_never"); done["exitCode"] == 0.0 {
		t.Fatalf("the denied command succeeded: %v", done)
	}
}

// exec_command leaves a command running when it outlives its yield
// time, and the model's write_stdin feeds it: the first output says the
// session id, the second carries what the command printed after reading
// its input and its exit; the item completes once, with that output.
func TestExecCommandWriteStdinEndToEnd(t *testing.T) {
	work := t.TempDir()
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.FunctionCall("c_exec", "exec_command", `{"cmd":"read line; echo got:$line","yield_time_ms":300}`),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.FunctionCall("c_stdin", "write_stdin", `{"session_id":1,"chars":"hello\n","yield_time_ms":5000}`),
			mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "done"), mockmodel.Completed("resp_3", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	msgs := runTurn(t, c, id, "talk to it")
	reqs := m.Requests()
	if first, _ := reqs[1].ToolOutput("c_exec"); !strings.Contains(first, "Process running with session ID 1") {
		t.Fatalf("exec_command's output %q", first)
	}
	second, _ := reqs[2].ToolOutput("c_stdin")
	if !strings.Contains(second, "got:hello") || !strings.Contains(second, "Process exited with code 0") {
		t.Fatalf("write_stdin's output %q", second)
	}
	var completed, typed []map[string]any
	turnID := ""
	for _, msg := range msgs {
		if msg.Method == "turn/started" {
			turnID = str(unmarshal(t, msg.Params), "turn", "id")
		}
		if msg.Method == "item/completed" && str(unmarshal(t, msg.Params), "item", "type") == "commandExecution" {
			completed = append(completed, unmarshal(t, msg.Params)["item"].(map[string]any))
		}
		if msg.Method == "item/commandExecution/terminalInteraction" {
			if len(completed) > 0 {
				t.Fatal("the terminal interaction came after the command's item/completed")
			}
			typed = append(typed, unmarshal(t, msg.Params))
		}
	}
	// What was typed into the command is shown on its item, in the turn.
	if len(typed) != 1 || typed[0]["itemId"] != "c_exec" || typed[0]["processId"] != "1" ||
		typed[0]["stdin"] != "hello\n" || typed[0]["threadId"] != id || typed[0]["turnId"] != turnID || turnID == "" {
		t.Fatalf("terminal interactions %v", typed)
	}
	if len(completed) != 1 || completed[0]["id"] != "c_exec" || completed[0]["status"] != "completed" ||
		!strings.Contains(completed[0]["aggregatedOutput"].(string), "got:hello") {
		t.Fatalf("completed command items %v", completed)
	}
}

// shell_command runs in its workdir (relative to the thread's cwd, or
// absolute), which the item shows as its cwd.
func TestShellCommandWorkdir(t *testing.T) {
	work := t.TempDir()
	sub, abs := filepath.Join(work, "sub"), t.TempDir()
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1",
			mockmodel.FunctionCall("c_rel", "shell_command", `{"command":"pwd","workdir":"sub"}`),
			mockmodel.FunctionCall("c_abs", "shell_command", jsonArgs(map[string]any{"command": "pwd", "workdir": abs})),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	msgs := runTurn(t, c, id, "where")
	for call, dir := range map[string]string{"c_rel": sub, "c_abs": abs} {
		if got := commandItem(t, msgs, "item/started", call)["cwd"]; got != dir {
			t.Fatalf("%s ran in %v, want %s", call, got, dir)
		}
		if out, _ := m.Requests()[1].ToolOutput(call); !strings.HasSuffix(out, "Output:\n"+dir+"\n") {
			t.Fatalf("%s: the model read %q", call, out)
		}
	}
}

// jsonArgs are a tool call's arguments as JSON text.
func jsonArgs(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Two commands of one model response that both need approval are asked
// about at once, and each answer settles its own command whatever the
// order of the answers: the second accepted first runs, the first
// declined does not, each request is resolved, and the model gets both
// outputs in the order it made the calls (openai/codex#10844).
func TestTwoApprovalsWaitingAtOnce(t *testing.T) {
	work := t.TempDir()
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("c1", "touch first"), mockmodel.ExecCommand("c2", "touch second"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "untrusted"
sandbox_mode = "danger-full-access"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("go")})
	asked := map[string]Message{}
	for len(asked) < 2 {
		msg := c.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
		asked[str(unmarshal(t, msg.Params), "itemId")] = msg
	}
	if _, ok := asked["c1"]; !ok {
		t.Fatalf("asked about %v", asked)
	}
	c.Send(map[string]any{"id": asked["c2"].ID, "result": map[string]any{"decision": "accept"}})
	c.Send(map[string]any{"id": asked["c1"].ID, "result": map[string]any{"decision": "decline"}})
	msgs := collectUntil(c, isMethod("turn/completed"))
	resolved := map[string]bool{}
	for _, msg := range msgs {
		if msg.Method == "serverRequest/resolved" {
			resolved[fmt.Sprint(unmarshal(t, msg.Params)["requestId"])] = true
		}
	}
	for call, req := range asked {
		var rid any
		if err := json.Unmarshal(req.ID, &rid); err != nil || !resolved[fmt.Sprint(rid)] {
			t.Fatalf("the request about %s (id %s) was not resolved: %v", call, req.ID, resolved)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "second")); err != nil {
		t.Fatalf("the accepted command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "first")); err == nil {
		t.Fatal("the declined command ran")
	}
	next := m.Requests()[1]
	first, ok1 := next.ToolOutput("c1")
	second, ok2 := next.ToolOutput("c2")
	if !ok1 || !ok2 || !strings.Contains(first, "declined") || !strings.Contains(second, "Process exited with code 0\n") {
		t.Fatalf("outputs to the model: c1 %q (%v), c2 %q (%v)", first, ok1, second, ok2)
	}
	order := []string{}
	for _, it := range next.Input() {
		if it["type"] == "function_call_output" {
			order = append(order, it["call_id"].(string))
		}
	}
	if !slices.Equal(order, []string{"c1", "c2"}) {
		t.Fatalf("outputs in the order %v", order)
	}
}

// turn/interrupt sent twice at once for one turn gets two answers: the
// first stops the turn, the second finds it ending (openai/codex#36926:
// the reference left the second unanswered). The turn ends interrupted,
// once.
func TestRepeatedInterruptAnswered(t *testing.T) {
	m := mockmodel.New(t, mockmodel.AllowUnused())
	g := mockmodel.NewGate()
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "never finished"), mockmodel.Completed("resp_1", usage())).GateAfter(1, g))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	turnID := str(unmarshal(t, WantResult(t, c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("go")}))), "turn", "id")
	<-g.Reached()
	params := map[string]any{"threadId": id, "turnId": turnID}
	first, second := c.Request("turn/interrupt", params), c.Request("turn/interrupt", params)
	WantResult(t, c.Response(first))
	// The reference's answer when it does answer: the turn is ending.
	WantError(t, c.Response(second), codeInvalidRequest, "no active turn to interrupt")
	msgs := collectUntil(c, isMethod("turn/completed"))
	if done := msgs[len(msgs)-1]; str(unmarshal(t, done.Params), "turn", "status") != "interrupted" {
		t.Fatalf("turn ended %s", done.Raw)
	}
	g.Open()
	// Up to the answer to a request made once the model's stream could
	// go on: one turn/completed in all.
	c.Response(c.Request("thread/loaded/list", map[string]any{}))
	completed := 0
	for _, raw := range c.Received() {
		if strings.Contains(string(raw), `"method":"turn/completed"`) {
			completed++
		}
	}
	if completed != 1 {
		t.Fatalf("%d turn/completed", completed)
	}
}
