package core

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/catalog"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/tools/exec"
)

func localShellCall(id, callID string, action map[string]any) model.ResponseItem {
	it := map[string]any{"type": "local_shell_call", "id": id, "status": "completed", "action": action}
	if callID != "" {
		it["call_id"] = callID
	}
	return model.NewResponseItem(it)
}

// Each one-shot shell form runs its command as a commandExecution item
// (source agent, the argv it ran), and the model reads the form's output
// format; a local_shell_call is answered with a function_call_output.
func TestShellForms(t *testing.T) {
	sh := exec.DetectShell().Path
	cases := []struct {
		name     string
		call     model.ResponseItem
		callID   string
		argv     []string
		output   func(string) bool
		exitCode int
	}{
		// Both lines on one stream: two pipes have no order between them.
		{"shell", functionCall("c1", "shell", map[string]any{"command": []string{"sh", "-c", "echo out >&2; echo err >&2; exit 3"}}),
			"c1", []string{"sh", "-c", "echo out >&2; echo err >&2; exit 3"},
			func(o string) bool {
				var v struct {
					Output   string
					Metadata struct {
						ExitCode        int     `json:"exit_code"`
						DurationSeconds float64 `json:"duration_seconds"`
					}
				}
				return json.Unmarshal([]byte(o), &v) == nil && v.Output == "out\nerr\n" && v.Metadata.ExitCode == 3 &&
					strings.Contains(o, `"duration_seconds":`)
			}, 3},
		{"shell_command", functionCall("c2", "shell_command", map[string]any{"command": "echo hi", "login": false}),
			"c2", []string{sh, "-c", "echo hi"},
			func(o string) bool {
				return strings.HasPrefix(o, "Exit code: 0\nWall time: ") && strings.HasSuffix(o, " seconds\nOutput:\nhi\n")
			}, 0},
		{"local_shell_call", localShellCall("lsh_1", "c3", map[string]any{"type": "exec", "command": []string{"sh", "-c", "echo $LS_VAR"}, "env": map[string]string{"LS_VAR": "from-env"}}),
			"c3", []string{"sh", "-c", "echo $LS_VAR"},
			// action.env is dropped, as the reference drops it.
			func(o string) bool { return strings.HasPrefix(o, `{"output":"\n","metadata":{"exit_code":0,`) }, 0},
		{"local_shell_call without call_id", localShellCall("lsh_2", "", map[string]any{"type": "exec", "command": []string{"true"}}),
			"lsh_2", []string{"true"},
			func(o string) bool { return strings.HasPrefix(o, `{"output":"","metadata":{"exit_code":0,`) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClient(t, script{events: callEvents(tc.call)}, script{events: textEvents("msg_1", "done")})
			s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
			col := collect(t, s, nil)
			s.Call(ctx10(t), userInput("go"))
			evs := col.waitFor(turnEnded)
			started, completed := commandItems(evs)
			if len(started) != 1 || len(completed) != 1 {
				t.Fatalf("items: %s", kinds(evs))
			}
			if it := started[0]; it.ID != tc.callID || it.Source != SourceAgent || !slices.Equal(it.Argv, tc.argv) ||
				it.Command != policy.ShellQuote(tc.argv) || it.Status != StatusInProgress {
				t.Fatalf("started %+v", it)
			}
			if it := completed[0]; it.Source != SourceAgent || *it.ExitCode != tc.exitCode || it.ProcessID != "" {
				t.Fatalf("completed %+v", it)
			}
			req := c.requests()[1]
			if out := outputOf(t, req, tc.callID); !tc.output(out) {
				t.Fatalf("model output %q", out)
			}
			// The call is replayed as the model sent it, and answered by a
			// function_call_output.
			var types []string
			for _, it := range req.Input {
				if it.IsToolCall() || it.IsToolOutput() {
					types = append(types, it.Type())
				}
			}
			if want := []string{tc.call.Type(), model.TypeFunctionCallOutput}; !slices.Equal(types, want) {
				t.Fatalf("history %v, want %v", types, want)
			}
			if string(req.Input[len(req.Input)-2].Raw()) != string(tc.call.Raw()) {
				t.Fatalf("call replayed as %s", req.Input[len(req.Input)-2].Raw())
			}
		})
	}
}

// A malformed call of each form gets a clear error as its output, runs
// nothing, and the turn goes on.
func TestShellFormsBadArguments(t *testing.T) {
	cases := []struct {
		call   model.ResponseItem
		callID string
		want   string
	}{
		{functionCall("c1", "shell", map[string]any{"command": "ls -la"}), "c1",
			`failed to parse function arguments: "command" must be an array of strings`},
		{functionCall("c2", "shell", map[string]any{}), "c2", `failed to parse function arguments: missing required argument "command"`},
		{model.NewResponseItem(map[string]any{"type": "function_call", "id": "fc_c3", "name": "shell", "arguments": "{not json", "call_id": "c3"}), "c3",
			"failed to parse function arguments: arguments are not a valid JSON object"},
		{functionCall("c4", "shell_command", map[string]any{"command": []string{"ls"}}), "c4",
			`failed to parse function arguments: "command" must be a string`},
		{functionCall("c5", "shell", map[string]any{"command": []string{"ls"}, "timeout_ms": "soon"}), "c5",
			`failed to parse function arguments: timeout_ms must be a number, not "soon"`},
		{localShellCall("l6", "c6", map[string]any{"type": "click"}), "c6", `local_shell_call: unsupported action type "click"`},
		{localShellCall("l7", "c7", nil), "c7", `local_shell_call: the call has no "action"`},
	}
	for _, tc := range cases {
		t.Run(tc.callID, func(t *testing.T) {
			c := newFakeClient(t, script{events: callEvents(tc.call)}, script{events: textEvents("msg_1", "done")})
			s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
			col := collect(t, s, nil)
			s.Call(ctx10(t), userInput("go"))
			evs := col.waitFor(turnEnded)
			if started, _ := commandItems(evs); len(started) != 0 {
				t.Fatalf("a command item for a malformed call: %+v", started)
			}
			if out := outputOf(t, c.requests()[1], tc.callID); !strings.HasPrefix(out, tc.want) {
				t.Fatalf("output %q, want prefix %q", out, tc.want)
			}
		})
	}
}

// A one-shot command is killed at its timeout, and the model is told.
func TestShellCommandTimeout(t *testing.T) {
	c := newFakeClient(t, script{events: callEvents(functionCall("c1", "shell_command",
		map[string]any{"command": "sleep 30", "login": false, "timeout_ms": 300}))}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	if _, completed := commandItems(evs); len(completed) != 1 || *completed[0].ExitCode != 124 || completed[0].Status != StatusFailed {
		t.Fatalf("completed %+v", completed)
	}
	out := outputOf(t, c.requests()[1], "c1")
	if !strings.HasPrefix(out, "Exit code: 124\n") || !strings.Contains(out, "\nOutput:\ncommand timed out after ") {
		t.Fatalf("output %q", out)
	}
}

// The new forms go through the same approvals as exec_command: a
// declined shell call runs nothing, and a command accepted for the
// session with one form is not asked about again with another.
func TestShellFormsApprovals(t *testing.T) {
	dir := t.TempDir()
	c := newFakeClient(t,
		script{events: callEvents(functionCall("c1", "shell", map[string]any{"command": []string{"touch", "declined"}}))},
		script{events: callEvents(functionCall("c2", "shell_command", map[string]any{"command": "touch accepted"}))},
		script{events: callEvents(execCall("c3", "touch accepted", nil))},
		script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalUntrusted, policy.FullAccess()
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(func(ev Event) bool { m, ok := ev.Msg.(ExecApprovalRequest); return ok && m.CallID == "c1" })
	s.Call(ctx10(t), OpExecApproval{CallID: "c1", Decision: Decision{Kind: DecisionDecline}})
	col.waitFor(func(ev Event) bool { m, ok := ev.Msg.(ExecApprovalRequest); return ok && m.CallID == "c2" })
	s.Call(ctx10(t), OpExecApproval{CallID: "c2", Decision: Decision{Kind: DecisionAcceptForSession}})
	evs := col.waitFor(turnEnded)
	if n := len(eventsOf[ExecApprovalRequest](evs)); n != 2 {
		t.Fatalf("%d approval requests, want 2 (exec_command of the accepted command must not ask)", n)
	}
	started, completed := commandItems(evs)
	if len(completed) != 3 || completed[0].Status != StatusDeclined || completed[1].Status != StatusCompleted || completed[2].Status != StatusCompleted {
		t.Fatalf("completed %+v", completed)
	}
	if started[0].Source != SourceAgent || started[1].Source != SourceAgent || started[2].Source != SourceUnifiedExecStart {
		t.Fatalf("sources %s %s %s", started[0].Source, started[1].Source, started[2].Source)
	}
	if out := outputOf(t, c.requests()[1], "c1"); out != "shell was not run: the user declined it" {
		t.Fatalf("declined output %q", out)
	}
	if !strings.HasPrefix(outputOf(t, c.requests()[2], "c2"), "Exit code: 0\n") {
		t.Fatal("the accepted shell_command did not run")
	}
}

// What is offered follows ToolFamily, for the turn's model.
func TestToolSpecsFollowFamily(t *testing.T) {
	cases := []struct {
		fam  catalog.Tools
		want []string
	}{
		{catalog.Tools{Shell: catalog.ShellUnifiedExec, ApplyPatch: catalog.ApplyPatchFreeform},
			[]string{"function:exec_command", "function:write_stdin", "custom:apply_patch"}},
		{catalog.Tools{Shell: catalog.ShellDefault, ApplyPatch: catalog.ApplyPatchFunction},
			[]string{"function:shell", "function:apply_patch"}},
		{catalog.Tools{Shell: catalog.ShellCommand, ApplyPatch: catalog.ApplyPatchFreeform},
			[]string{"function:shell_command", "custom:apply_patch"}},
		{catalog.Tools{Shell: catalog.ShellLocal}, []string{"local_shell:"}},
		{catalog.Tools{Shell: catalog.ShellDisabled}, nil},
	}
	for _, tc := range cases {
		t.Run(string(tc.fam.Shell), func(t *testing.T) {
			c := newFakeClient(t, script{events: textEvents("msg_1", "ok")})
			var asked string
			s := newTestSession(t, c, func(cfg *Config) {
				cfg.Model = "family-model"
				cfg.ToolFamily = func(m string) catalog.Tools { asked = m; return tc.fam }
			})
			col := collect(t, s, nil)
			s.Call(ctx10(t), userInput("go"))
			col.waitFor(turnEnded)
			var names []string
			for _, raw := range c.requests()[0].Tools {
				var m struct{ Type, Name string }
				json.Unmarshal(raw, &m)
				names = append(names, m.Type+":"+m.Name)
			}
			want := append(tc.want, "function:update_plan", "function:request_user_input", "function:view_image")
			if !slices.Equal(names, want) || asked != "family-model" {
				t.Fatalf("tools %v (asked for %q), want %v", names, asked, want)
			}
		})
	}
}

// A dynamic tool named like the offered shell tool takes its place.
func TestDynamicToolShadowsShellSpec(t *testing.T) {
	for _, tc := range []struct {
		fam  catalog.Tools
		name string
	}{
		{catalog.Tools{Shell: catalog.ShellDefault}, "shell"},
		{catalog.Tools{Shell: catalog.ShellCommand}, "shell_command"},
	} {
		c := newFakeClient(t, script{events: textEvents("msg_1", "ok")})
		s := newTestSession(t, c, func(cfg *Config) {
			cfg.ToolFamily = func(string) catalog.Tools { return tc.fam }
			cfg.DynamicTools = []DynamicToolSpec{{Name: tc.name, Description: "the client's"}}
		})
		col := collect(t, s, nil)
		s.Call(ctx10(t), userInput("go"))
		col.waitFor(turnEnded)
		n := 0
		for _, raw := range c.requests()[0].Tools {
			var m struct{ Name, Description string }
			json.Unmarshal(raw, &m)
			if m.Name == tc.name {
				n++
				if m.Description != "the client's" {
					t.Fatalf("built-in %s offered: %s", tc.name, raw)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%d tools named %s", n, tc.name)
		}
	}
}

// A shell form that runs apply_patch is the apply_patch tool: a
// fileChange item (no command item), the file written, the tool's output.
func TestShellFormsRunApplyPatch(t *testing.T) {
	body := func(name string) string { return "*** Begin Patch\n*** Add File: " + name + "\n+made\n*** End Patch\n" }
	heredoc := func(name string) string { return "apply_patch <<'EOF'\n" + body(name) + "EOF\n" }
	cases := []struct {
		call model.ResponseItem
		file string
	}{
		{functionCall("c1", "shell", map[string]any{"command": []string{"apply_patch", body("one.txt")}}), "one.txt"},
		{functionCall("c1", "shell", map[string]any{"command": []string{"bash", "-lc", heredoc("two.txt")}}), "two.txt"},
		{functionCall("c1", "shell_command", map[string]any{"command": "cd sub && " + heredoc("three.txt")}), "sub/three.txt"},
		{execCall("c1", heredoc("four.txt"), nil), "four.txt"},
		{localShellCall("l1", "c1", map[string]any{"type": "exec", "command": []string{"applypatch", body("five.txt")}}), "five.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			c := newFakeClient(t, script{events: callEvents(tc.call)}, script{events: textEvents("msg_1", "done")})
			s := newTestSession(t, c, func(cfg *Config) {
				cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalNever, policy.WorkspaceWrite()
			})
			col := collect(t, s, nil)
			s.Call(ctx10(t), userInput("go"))
			evs := col.waitFor(turnEnded)
			if started, _ := commandItems(evs); len(started) != 0 {
				t.Fatalf("command items for an apply_patch invocation: %+v", started)
			}
			if len(eventsOf[PatchApplyEnd](evs)) != 1 {
				t.Fatalf("no patch applied: %s", kinds(evs))
			}
			if b, err := os.ReadFile(filepath.Join(dir, tc.file)); err != nil || string(b) != "made\n" {
				t.Fatalf("%s: %q, %v", tc.file, b, err)
			}
			// exec_command wraps the patch's output in its own, as the
			// reference does.
			want := regexp.MustCompile(`^Exit code: 0\nWall time: \d+(\.[1-9])? seconds\nOutput:\nSuccess. Updated the following files:\nA `)
			if tc.call.Name() == "exec_command" {
				want = regexp.MustCompile(`^Wall time: \d+\.\d{4} seconds\nOutput:\nExit code: 0\nWall time: \d+(\.[1-9])? seconds\nOutput:\nSuccess`)
			}
			if out := outputOf(t, c.requests()[1], "c1"); !want.MatchString(out) {
				t.Fatalf("output %q", out)
			}
		})
	}
}

// With the shell disabled (features.shell_tool = false, or the model's
// catalogue entry), no form runs a command, whatever the model calls.
func TestShellDisabledRunsNoForm(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	cmd := "touch " + marker
	calls := map[string]model.ResponseItem{
		"c1": functionCall("c1", "exec_command", map[string]any{"cmd": cmd}),
		"c2": functionCall("c2", "shell", map[string]any{"command": []string{"sh", "-c", cmd}}),
		"c3": functionCall("c3", "shell_command", map[string]any{"command": cmd}),
		"c4": localShellCall("l4", "c4", map[string]any{"type": "exec", "command": []string{"sh", "-c", cmd}}),
	}
	for id, call := range calls {
		c := newFakeClient(t, script{events: callEvents(call)}, script{events: textEvents("msg_1", "done")})
		s := newTestSession(t, c, func(cfg *Config) {
			withPolicy(policy.ApprovalNever, policy.FullAccess())(cfg)
			cfg.ToolFamily = func(string) catalog.Tools { return catalog.Tools{Shell: catalog.ShellDisabled} }
		})
		col := collect(t, s, nil)
		s.Call(ctx10(t), userInput("go"))
		evs := col.waitFor(turnEnded)
		if started, _ := commandItems(evs); len(started) != 0 {
			t.Fatalf("%s: a command item started", id)
		}
		if out := outputOf(t, c.requests()[1], id); !strings.HasPrefix(out, "unsupported call: ") {
			t.Fatalf("%s: output %q", id, out)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a command ran with the shell disabled")
	}
}

// A local_shell_call item is the hosted tool's, even when a client's
// dynamic tool is named local_shell: it runs as a command.
func TestLocalShellCallIsNeverADynamicTool(t *testing.T) {
	call := localShellCall("l1", "c1", map[string]any{"type": "exec", "command": []string{"true"}})
	c := newFakeClient(t, script{events: callEvents(call)}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, func(cfg *Config) {
		withPolicy(policy.ApprovalNever, policy.FullAccess())(cfg)
		cfg.DynamicTools = []DynamicToolSpec{{Name: "local_shell", Description: "the client's"}}
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	if started, _ := commandItems(evs); len(started) != 1 {
		t.Fatalf("the call did not run as a command: %s", kinds(evs))
	}
}
