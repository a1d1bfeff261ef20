package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

func execCall(callID, cmd string, extra map[string]any) model.ResponseItem {
	args := map[string]any{"cmd": cmd}
	for k, v := range extra {
		args[k] = v
	}
	return functionCall(callID, "exec_command", args)
}

func customCall(callID, name, input string) model.ResponseItem {
	return model.NewResponseItem(map[string]any{"type": "custom_tool_call", "id": "ctc_" + callID, "status": "completed", "call_id": callID, "name": name, "input": input})
}

// outputOf returns the output text the model got for callID.
func outputOf(t *testing.T, req *model.Request, callID string) string {
	t.Helper()
	for _, it := range req.Input {
		if it.IsToolOutput() && it.CallID() == callID {
			var f struct{ Output string }
			it.Decode(&f)
			return f.Output
		}
	}
	t.Fatalf("no output for %s in %s", callID, rawList(req.Input))
	return ""
}

func withPolicy(ap policy.ApprovalPolicy, sp policy.SandboxPolicy) func(*Config) {
	return func(c *Config) { c.ApprovalPolicy, c.Sandbox = ap, sp }
}

// events of one kind, in order.
func eventsOf[T EventMsg](evs []Event) []T {
	var out []T
	for _, ev := range evs {
		if m, ok := ev.Msg.(T); ok {
			out = append(out, m)
		}
	}
	return out
}

func commandItems(evs []Event) (started, completed []CommandExecutionItem) {
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if it, ok := m.Item.(CommandExecutionItem); ok {
				started = append(started, it)
			}
		case ItemCompleted:
			if it, ok := m.Item.(CommandExecutionItem); ok {
				completed = append(completed, it)
			}
		}
	}
	return
}

// A command that needs no approval runs at once and streams its output.
func TestExecNoApproval(t *testing.T) {
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "echo out; echo err >&2; exit 3", nil))}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	if len(eventsOf[ExecApprovalRequest](evs)) != 0 {
		t.Fatal("asked for approval")
	}
	started, completed := commandItems(evs)
	if len(started) != 1 || started[0].Source != SourceUnifiedExecStart || started[0].Status != StatusInProgress {
		t.Fatalf("started = %+v", started)
	}
	if len(completed) != 1 || completed[0].Status != StatusFailed || *completed[0].ExitCode != 3 || !strings.Contains(*completed[0].AggregatedOutput, "err") {
		t.Fatalf("completed = %+v", completed)
	}
	var streamed string
	for _, d := range eventsOf[ExecCommandOutputDelta](evs) {
		streamed += string(d.Chunk)
	}
	if !strings.Contains(streamed, "out") || !strings.Contains(streamed, "err") {
		t.Fatalf("streamed %q", streamed)
	}
	out := outputOf(t, c.requests()[1], "call_1")
	if !strings.Contains(out, "Process exited with code 3") || !strings.Contains(out, "Output:\n") {
		t.Fatalf("model output %q", out)
	}
}

// Each decision on a command approval, under untrusted (which asks for a
// command that is not known to be safe).
func TestExecApprovalDecisions(t *testing.T) {
	cases := []struct {
		decision   Decision
		wantStatus ItemStatus
		ran        bool
		aborted    bool
		modelSays  string
	}{
		{Decision{Kind: DecisionAccept}, StatusCompleted, true, false, "Process exited with code 0"},
		{Decision{Kind: DecisionAcceptForSession}, StatusCompleted, true, false, "Process exited with code 0"},
		{Decision{Kind: DecisionAcceptWithAmendment, ExecPolicyAmendment: []string{"touch"}}, StatusCompleted, true, false, "Process exited with code 0"},
		{Decision{Kind: DecisionDecline}, StatusDeclined, false, false, "the user declined it"},
		{Decision{Kind: DecisionCancel}, StatusDeclined, false, true, ""},
		{Decision{Kind: DecisionFailed, Message: "boom"}, StatusFailed, false, false, "approval request failed: boom"},
	}
	for _, tc := range cases {
		t.Run(string(tc.decision.Kind), func(t *testing.T) {
			dir := t.TempDir()
			scripts := []script{{events: callEvents(execCall("call_1", "touch made", nil))}}
			if !tc.aborted {
				scripts = append(scripts, script{events: textEvents("msg_1", "ok")})
			}
			c := newFakeClient(t, scripts...)
			s := newTestSession(t, c, func(cfg *Config) {
				cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalUntrusted, policy.FullAccess()
			})
			col := collect(t, s, nil)
			s.Call(ctx10(t), userInput("go"))
			evs := col.waitFor(isMsg[ExecApprovalRequest])
			req := eventsOf[ExecApprovalRequest](evs)[0]
			if req.CallID != "call_1" || req.Cwd != dir || len(req.Actions) == 0 || len(req.AvailableDecisions) == 0 {
				t.Fatalf("request = %+v", req)
			}
			// The request comes before the item it is about (the
			// projection sends them in the reference's order).
			if started, _ := commandItems(col.all()); len(started) > 0 {
				waitStatus(t, s, StatusWaiting)
			}
			col.waitFor(func(ev Event) bool {
				m, ok := ev.Msg.(ItemStarted)
				return ok && m.Item.ItemID() == "call_1"
			})
			if _, err := s.Call(ctx10(t), OpExecApproval{CallID: "call_1", Decision: tc.decision}); err != nil {
				t.Fatal(err)
			}
			evs = col.waitFor(turnEnded)
			started, completed := commandItems(evs)
			if started[0].Source != SourceAgent {
				t.Fatalf("item/started source %s", started[0].Source)
			}
			if len(completed) != 1 || completed[0].Status != tc.wantStatus {
				t.Fatalf("completed = %+v", completed)
			}
			_, err := os.Stat(filepath.Join(dir, "made"))
			if ran := err == nil; ran != tc.ran {
				t.Fatalf("command ran = %v, want %v", ran, tc.ran)
			}
			_, isAbort := evs[len(evs)-1].Msg.(TurnAborted)
			if isAbort != tc.aborted {
				t.Fatalf("turn ended with %s", typeName(evs[len(evs)-1].Msg))
			}
			if tc.modelSays != "" {
				if out := outputOf(t, c.requests()[1], "call_1"); !strings.Contains(out, tc.modelSays) {
					t.Fatalf("model got %q, want %q", out, tc.modelSays)
				}
			}
		})
	}
}

// Accept-for-session and amendments stop later identical (or prefixed)
// commands from asking again.
func TestExecApprovalRemembered(t *testing.T) {
	for _, d := range []Decision{{Kind: DecisionAcceptForSession}, {Kind: DecisionAcceptWithAmendment, ExecPolicyAmendment: []string{"touch"}}} {
		t.Run(string(d.Kind), func(t *testing.T) {
			dir := t.TempDir()
			second := "touch a"
			if d.Kind == DecisionAcceptWithAmendment {
				second = "touch b"
			}
			c := newFakeClient(t,
				script{events: callEvents(execCall("call_1", "touch a", nil))},
				script{events: callEvents(execCall("call_2", second, nil))},
				script{events: textEvents("msg_1", "ok")})
			s := newTestSession(t, c, func(cfg *Config) {
				cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalUntrusted, policy.FullAccess()
			})
			col := collect(t, s, nil)
			s.Call(ctx10(t), userInput("go"))
			col.waitFor(func(ev Event) bool { m, ok := ev.Msg.(ItemStarted); return ok && m.Item.ItemID() == "call_1" })
			s.Call(ctx10(t), OpExecApproval{CallID: "call_1", Decision: d})
			evs := col.waitFor(turnEnded)
			if n := len(eventsOf[ExecApprovalRequest](evs)); n != 1 {
				t.Fatalf("%d approval requests, want 1", n)
			}
			if _, completed := commandItems(evs); len(completed) != 2 || completed[1].Status != StatusCompleted {
				t.Fatalf("completed = %+v", completed)
			}
		})
	}
}

// A known-safe command never asks, even under untrusted.
func TestExecKnownSafeDoesNotAsk(t *testing.T) {
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "ls", nil))}, script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, withPolicy(policy.ApprovalUntrusted, policy.FullAccess()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	if len(eventsOf[ExecApprovalRequest](evs)) != 0 {
		t.Fatal("known-safe command asked for approval")
	}
}

// Escalation under never is refused back to the model.
func TestExecEscalationRefusedUnderNever(t *testing.T) {
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "touch x", map[string]any{"sandbox_permissions": "require_escalated"}))}, script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.WorkspaceWrite()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	if started, _ := commandItems(evs); len(started) != 0 {
		t.Fatalf("refused command got an item: %+v", started)
	}
	if out := outputOf(t, c.requests()[1], "call_1"); !strings.Contains(out, "refused") {
		t.Fatalf("model got %q", out)
	}
}

// With no sandbox on the host, a command that should be sandboxed asks
// rather than running unsandboxed silently.
func TestExecWithoutSandboxAsks(t *testing.T) {
	none := policy.Capabilities{}
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "touch x", nil))}, script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.ApprovalPolicy, cfg.Sandbox, cfg.SandboxCapabilities = policy.ApprovalOnRequest, policy.WorkspaceWrite(), &none
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(isMsg[ExecApprovalRequest])
	if r := eventsOf[ExecApprovalRequest](evs)[0]; r.Reason == "" {
		t.Fatalf("request without a reason: %+v", r)
	}
	s.Call(ctx10(t), OpExecApproval{CallID: "call_1", Decision: Decision{Kind: DecisionDecline}})
	col.waitFor(turnEnded)
}

// Commands run sandboxed cannot write outside the writable roots.
func TestExecSandboxBlocksWritesOutsideRoots(t *testing.T) {
	caps := policy.Detect()
	if !caps.Supports(policy.WorkspaceWrite()) {
		t.Skipf("no sandbox on this host: %s", caps)
	}
	work, outside := t.TempDir(), t.TempDir()
	c := newFakeClient(t,
		script{events: callEvents(execCall("call_1", "touch inside && touch "+outside+"/escaped", nil))},
		script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.Cwd, cfg.ApprovalPolicy = work, policy.ApprovalNever
		cfg.Sandbox = policy.SandboxPolicy{Mode: policy.SandboxWorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	if _, err := os.Stat(filepath.Join(work, "inside")); err != nil {
		t.Fatalf("write inside the workspace failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Fatal("sandboxed command wrote outside the writable roots")
	}
	if _, completed := commandItems(evs); completed[0].Status != StatusFailed {
		t.Fatalf("completed = %+v", completed)
	}
}

// A command still running at its yield time becomes a session that
// write_stdin talks to; its item completes when it ends.
func TestExecSessionWriteStdin(t *testing.T) {
	c := newFakeClient(t,
		script{events: callEvents(execCall("call_1", "read line; echo got:$line", map[string]any{"yield_time_ms": 300}))},
		script{events: callEvents(functionCall("call_2", "write_stdin", map[string]any{"session_id": 1, "chars": "hello\n", "yield_time_ms": 2000}))},
		script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	first := outputOf(t, c.requests()[1], "call_1")
	if !strings.Contains(first, "Process running with session ID 1") {
		t.Fatalf("first output %q", first)
	}
	second := outputOf(t, c.requests()[2], "call_2")
	if !strings.Contains(second, "got:hello") || !strings.Contains(second, "Process exited with code 0") {
		t.Fatalf("write_stdin output %q", second)
	}
	_, completed := commandItems(evs)
	if len(completed) != 1 || completed[0].ID != "call_1" || completed[0].Status != StatusCompleted || !strings.Contains(*completed[0].AggregatedOutput, "got:hello") {
		t.Fatalf("completed = %+v", completed)
	}
}

const addPatch = "*** Begin Patch\n*** Add File: hello.txt\n+hello world\n*** End Patch"

// A patch inside the writable roots applies without asking (on-request),
// with the item, the file written, and the turn diff.
func TestPatchAutoApplied(t *testing.T) {
	dir := t.TempDir()
	c := newFakeClient(t, script{events: callEvents(customCall("call_1", "apply_patch", addPatch))}, script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalOnRequest, policy.WorkspaceWrite()
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	if err != nil || string(b) != "hello world\n" {
		t.Fatalf("file = %q, %v", b, err)
	}
	var kinds []string
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if fc, ok := m.Item.(FileChangeItem); ok {
				kinds = append(kinds, "started:"+string(fc.Status))
				if len(fc.Changes) != 1 || fc.Changes[0].Path != filepath.Join(dir, "hello.txt") || fc.Changes[0].Kind != ChangeAdd || fc.Changes[0].Diff != "hello world\n" {
					t.Fatalf("changes %+v", fc.Changes)
				}
			}
		case ItemCompleted:
			if fc, ok := m.Item.(FileChangeItem); ok {
				kinds = append(kinds, "completed:"+string(fc.Status))
			}
		case PatchApprovalRequest:
			kinds = append(kinds, "request")
		case TurnDiff:
			kinds = append(kinds, "diff")
			if !strings.Contains(m.UnifiedDiff, "diff --git a/hello.txt b/hello.txt\nnew file mode 100644") {
				t.Fatalf("turn diff %q", m.UnifiedDiff)
			}
		}
	}
	if !slices.Equal(kinds, []string{"started:inProgress", "completed:completed", "diff"}) {
		t.Fatalf("patch events %v", kinds)
	}
	// The reference's shape: the time to a tenth, without a trailing ".0".
	if out := outputOf(t, c.requests()[1], "call_1"); !regexp.MustCompile(`^Exit code: 0\nWall time: \d+(\.[1-9])? seconds\nOutput:\nSuccess. Updated the following files:\nA hello.txt\n$`).MatchString(out) {
		t.Fatalf("model got %q", out)
	}
}

// Under untrusted a patch asks; the item is started before the request.
func TestPatchApprovalDecisions(t *testing.T) {
	for _, d := range []DecisionKind{DecisionAccept, DecisionDecline, DecisionCancel} {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			scripts := []script{{events: callEvents(customCall("call_1", "apply_patch", addPatch))}}
			if d != DecisionCancel {
				scripts = append(scripts, script{events: textEvents("msg_1", "ok")})
			}
			c := newFakeClient(t, scripts...)
			s := newTestSession(t, c, func(cfg *Config) {
				cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalUntrusted, policy.WorkspaceWrite()
			})
			col := collect(t, s, nil)
			s.Call(ctx10(t), userInput("go"))
			evs := col.waitFor(isMsg[PatchApprovalRequest])
			if _, ok := evs[len(evs)-2].Msg.(ItemStarted); !ok {
				t.Fatalf("request not right after item/started: %s", kinds(evs))
			}
			s.Call(ctx10(t), OpPatchApproval{CallID: "call_1", Decision: Decision{Kind: d}})
			evs = col.waitFor(turnEnded)
			_, err := os.Stat(filepath.Join(dir, "hello.txt"))
			if applied := err == nil; applied != (d == DecisionAccept) {
				t.Fatalf("applied = %v", applied)
			}
			if d == DecisionDecline {
				if out := outputOf(t, c.requests()[1], "call_1"); !strings.Contains(out, "declined") {
					t.Fatalf("model got %q", out)
				}
			}
			if _, ok := evs[len(evs)-1].Msg.(TurnAborted); ok != (d == DecisionCancel) {
				t.Fatalf("turn ended with %s", typeName(evs[len(evs)-1].Msg))
			}
		})
	}
}

// Under never, a patch outside the writable roots is refused; a bad patch
// gets the parser's error.
func TestPatchRefusedAndInvalid(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	outPatch := "*** Begin Patch\n*** Add File: " + filepath.Join(outside, "x.txt") + "\n+x\n*** End Patch"
	c := newFakeClient(t,
		script{events: callEvents(customCall("call_1", "apply_patch", outPatch), customCall("call_2", "apply_patch", "*** Begin Patch\nnonsense\n*** End Patch"))},
		script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.Cwd, cfg.ApprovalPolicy = dir, policy.ApprovalNever
		cfg.Sandbox = policy.SandboxPolicy{Mode: policy.SandboxWorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(turnEnded)
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Fatal("patch outside the roots was applied")
	}
	if out := outputOf(t, c.requests()[1], "call_1"); !strings.Contains(out, "outside the writable roots") {
		t.Fatalf("refusal %q", out)
	}
	if out := outputOf(t, c.requests()[1], "call_2"); !strings.Contains(out, "invalid patch: line 2") {
		t.Fatalf("parse error %q", out)
	}
}

// The patch preview streams while the model writes the patch.
func TestPatchPreviewStreams(t *testing.T) {
	dir := t.TempDir()
	call := customCall("call_1", "apply_patch", addPatch)
	added := model.NewResponseItem(map[string]any{"type": "custom_tool_call", "id": "ctc_call_1", "call_id": "call_1", "name": "apply_patch", "input": ""})
	evs := []model.StreamEvent{evCreated(), {Kind: model.EventOutputItemAdded, Item: added}}
	for _, piece := range []string{"*** Begin Patch\n*** Add", " File: hello.txt\n+hel", "lo world\n*** End Patch"} {
		evs = append(evs, model.StreamEvent{Kind: model.EventCustomToolCallInputDelta, ItemID: "ctc_call_1", Delta: piece})
	}
	evs = append(evs, model.StreamEvent{Kind: model.EventOutputItemDone, Item: call}, evCompleted(nil))
	c := newFakeClient(t, script{events: evs}, script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalOnRequest, policy.WorkspaceWrite()
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	got := col.waitFor(turnEnded)
	previews := eventsOf[PatchPreview](got)
	if len(previews) == 0 {
		t.Fatal("no preview")
	}
	last := previews[len(previews)-1]
	if last.CallID != "call_1" || len(last.Changes) != 1 || last.Changes[0].Path != "hello.txt" || !strings.Contains(last.Changes[0].Diff, "hello world") {
		t.Fatalf("last preview %+v", last)
	}
	var firstStarted int
	for i, ev := range got {
		if m, ok := ev.Msg.(ItemStarted); ok && m.Item.ItemID() == "call_1" {
			firstStarted = i
			break
		}
	}
	for i, ev := range got {
		if _, ok := ev.Msg.(PatchPreview); ok && i > firstStarted {
			t.Fatal("preview after item/started")
		}
	}
}

// The tools the model is offered.
func TestToolSpecsOffered(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(turnEnded)
	var names []string
	for _, raw := range c.requests()[0].Tools {
		var m struct{ Type, Name string }
		json.Unmarshal(raw, &m)
		names = append(names, m.Type+":"+m.Name)
	}
	want := []string{"function:exec_command", "function:write_stdin", "custom:apply_patch", "function:update_plan", "function:request_user_input", "function:view_image"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v", names)
	}
}

// touchOutsideSandboxed starts a turn whose command creates a file outside
// the workspace, under the workspace-write sandbox and approval; it
// returns the session, its events and the file's path. It skips where the
// host has no sandbox.
func touchOutsideSandboxed(t *testing.T, approval policy.ApprovalPolicy) (*Session, *collector, string) {
	t.Helper()
	caps := policy.Detect()
	if !caps.Supports(policy.WorkspaceWrite()) {
		t.Skipf("no sandbox on this host: %s", caps)
	}
	work, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "made")
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "touch "+target, nil))}, script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.Cwd, cfg.ApprovalPolicy = work, approval
		cfg.Sandbox = policy.SandboxPolicy{Mode: policy.SandboxWorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	return s, col, target
}

// on-failure: a command the sandbox stops asks to run again without it.
func TestExecOnFailureRetriesUnsandboxed(t *testing.T) {
	s, col, target := touchOutsideSandboxed(t, policy.ApprovalOnFailure)
	evs := col.waitFor(isMsg[ExecApprovalRequest])
	if r := eventsOf[ExecApprovalRequest](evs)[0]; r.Reason == "" {
		t.Fatalf("retry request without a reason: %+v", r)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the sandboxed first run wrote outside the roots")
	}
	s.Call(ctx10(t), OpExecApproval{CallID: "call_1", Decision: Decision{Kind: DecisionAccept}})
	evs = col.waitFor(turnEnded)
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the approved rerun did not run: %v", err)
	}
	if _, completed := commandItems(evs); len(completed) != 1 || completed[0].Status != StatusCompleted {
		t.Fatalf("completed = %+v", completed)
	}
}

// A command the user approved and the sandbox then stopped runs again
// without the sandbox, without a second prompt: one approval per command.
func TestApprovedCommandIsRetriedWithoutASecondPrompt(t *testing.T) {
	s, col, target := touchOutsideSandboxed(t, policy.ApprovalUntrusted)
	col.waitFor(isMsg[ExecApprovalRequest])
	s.Call(ctx10(t), OpExecApproval{CallID: "call_1", Decision: Decision{Kind: DecisionAccept}})
	evs := col.waitFor(turnEnded)
	if n := len(eventsOf[ExecApprovalRequest](evs)); n != 1 {
		t.Fatalf("%d approval requests for one command, want 1", n)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the approved command did not run outside the sandbox: %v", err)
	}
}

// An interrupt kills a running command and its children.
func TestInterruptKillsRunningCommand(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "sleep 300 & echo $! > "+pidFile+"; wait", nil))})
	s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(isMsg[ExecCommandBegin])
	var pid string
	for i := 0; i < 100 && pid == ""; i++ {
		b, _ := os.ReadFile(pidFile)
		pid = strings.TrimSpace(string(b))
		if pid == "" {
			waitStatus(t, s, StatusRunning)
			time.Sleep(20 * time.Millisecond)
		}
	}
	if pid == "" {
		t.Fatal("the command did not start its child")
	}
	s.Call(ctx10(t), OpInterrupt{})
	evs := col.waitFor(turnEnded)
	if _, ok := evs[len(evs)-1].Msg.(TurnAborted); !ok {
		t.Fatalf("turn ended with %s", typeName(evs[len(evs)-1].Msg))
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat("/proc/" + pid); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("child %s still alive after the interrupt", pid)
}

// Accepting a patch for the session stops later patches under the same
// root from asking.
func TestPatchAcceptForSession(t *testing.T) {
	dir := t.TempDir()
	second := "*** Begin Patch\n*** Add File: second.txt\n+again\n*** End Patch"
	c := newFakeClient(t,
		script{events: callEvents(customCall("call_1", "apply_patch", addPatch))},
		script{events: callEvents(customCall("call_2", "apply_patch", second))},
		script{events: textEvents("msg_1", "ok")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.Cwd, cfg.ApprovalPolicy, cfg.Sandbox = dir, policy.ApprovalUntrusted, policy.WorkspaceWrite()
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(isMsg[PatchApprovalRequest])
	s.Call(ctx10(t), OpPatchApproval{CallID: "call_1", Decision: Decision{Kind: DecisionAcceptForSession}})
	evs := col.waitFor(turnEnded)
	if n := len(eventsOf[PatchApprovalRequest](evs)); n != 1 {
		t.Fatalf("%d patch approval requests, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "second.txt")); err != nil {
		t.Fatalf("second patch not applied: %v", err)
	}
}

// A command's streamed deltas stop at the per-call caps, while its whole
// output still reaches the item and the model.
func TestExecOutputDeltasBounded(t *testing.T) {
	defer func(n, b int) { maxOutputDeltas, maxOutputDeltaBytes = n, b }(maxOutputDeltas, maxOutputDeltaBytes)
	maxOutputDeltaBytes = 10
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "printf '%0100d' 7", nil))}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	var streamed string
	for _, d := range eventsOf[ExecCommandOutputDelta](evs) {
		streamed += string(d.Chunk)
	}
	if streamed != "0000000000" {
		t.Fatalf("streamed %q, want the first 10 bytes", streamed)
	}
	_, completed := commandItems(evs)
	if len(completed) != 1 || len(*completed[0].AggregatedOutput) != 100 {
		t.Fatalf("completed = %+v", completed)
	}
	if out := outputOf(t, c.requests()[1], "call_1"); !strings.Contains(out, strings.Repeat("0", 99)+"7") {
		t.Fatalf("model output %q", out)
	}
}

func TestDeltaBudget(t *testing.T) {
	defer func(n, b int) { maxOutputDeltas, maxOutputDeltaBytes = n, b }(maxOutputDeltas, maxOutputDeltaBytes)
	maxOutputDeltas, maxOutputDeltaBytes = 3, 8
	var b deltaBudget
	var got []string
	for _, chunk := range []string{"ab", "cd", "efghij", "k"} {
		got = append(got, string(b.take([]byte(chunk))))
	}
	if want := []string{"ab", "cd", "efgh", ""}; !slices.Equal(got, want) {
		t.Fatalf("byte cap: %q, want %q", got, want)
	}
	maxOutputDeltaBytes = 100
	b = deltaBudget{}
	got = got[:0]
	for _, chunk := range []string{"a", "b", "c", "d"} {
		got = append(got, string(b.take([]byte(chunk))))
	}
	if want := []string{"a", "b", "c", ""}; !slices.Equal(got, want) {
		t.Fatalf("count cap: %q, want %q", got, want)
	}
}

// A huge invalid dynamic tool name is cut in the error, with a marker.
func TestDynamicToolNameCutInError(t *testing.T) {
	for _, spec := range []DynamicToolSpec{{Name: strings.Repeat("é", 1<<19)}, {Name: "ok", Namespace: strings.Repeat("x y", 1<<18)}} {
		err := ValidateDynamicTools([]DynamicToolSpec{spec})
		if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "bytes in all]") || !utf8.ValidString(err.Error()) {
			t.Fatalf("error of %d bytes: %.200v", len(fmt.Sprint(err)), err)
		}
	}
}

// A dynamic tool with deferLoading is not in the model's tool list (the
// reference offers it only once loaded); one without a namespace is
// refused with the reference's text.
func TestDeferredDynamicToolsAreNotOffered(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")})
	s := newTestSession(t, c, func(cfg *Config) {
		cfg.DynamicTools = []DynamicToolSpec{
			{Name: "shown"},
			{Name: "also_shown", Namespace: "ns"},
			{Name: "hidden", Namespace: "ns", DeferLoading: true},
		}
	})
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(turnEnded)
	names := strings.Split(toolNames(c.requests()[0]), ",")
	if !slices.Contains(names, "shown") || !slices.Contains(names, "ns__also_shown") || slices.Contains(names, "ns__hidden") {
		t.Fatalf("tools offered: %s", names)
	}

	err := ValidateDynamicTools([]DynamicToolSpec{{Name: "lonely", DeferLoading: true}})
	var deferred *DeferredWithoutNamespaceError
	if !errors.As(err, &deferred) || err.Error() != "deferred dynamic tool must include a namespace: lonely" {
		t.Fatalf("deferred tool without a namespace: %v", err)
	}
	if err := ValidateDynamicTools([]DynamicToolSpec{{Name: "fine", Namespace: "ns", DeferLoading: true}}); err != nil {
		t.Fatalf("deferred tool with a namespace: %v", err)
	}
}

// validToolName accepts exactly what the regexp it replaced,
// ^[a-zA-Z0-9_-]{1,64}$, matched: every byte value alone, the lengths
// around the bound, and names with a newline or a multi-byte rune.
func TestValidToolNameMatchesTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	cases := []string{"", "a", "exec_command", "my-tool_2", "a b", "a.b", "a\n", "\na", "é", "tool\x00",
		strings.Repeat("x", 63), strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("-", 64) + "é"}
	for b := 0; b < 256; b++ {
		cases = append(cases, string([]byte{byte(b)}), "ab"+string([]byte{byte(b)}))
	}
	for _, s := range cases {
		if got, want := validToolName(s), re.MatchString(s); got != want {
			t.Errorf("validToolName(%q) = %v, the regexp says %v", s, got, want)
		}
	}
}

// Without tool_output_token_limit, a client's tool that answers 200 KB
// gives the model about the default tool output limit and a fifth (12,000
// tokens), head and tail kept, in a text answer as in the text parts of one
// with an image; the image is kept.
func TestDynamicToolOutputCutByDefault(t *testing.T) {
	big := "HEAD" + strings.Repeat("-", 200_000) + "TAIL"
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "lookup", map[string]any{}), functionCall("call_2", "lookup", map[string]any{}))},
		script{events: textEvents("msg_1", "ok")},
	)
	s := newTestSession(t, c, func(cfg *Config) { cfg.DynamicTools = []DynamicToolSpec{{Name: "lookup"}} })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	for _, call := range []string{"call_1", "call_2"} {
		col.waitFor(func(ev Event) bool {
			r, ok := ev.Msg.(DynamicToolCallRequest)
			return ok && r.CallID == call
		})
	}
	answer := func(call string, items ...DynamicContentItem) {
		if _, err := s.Call(ctx10(t), OpDynamicToolResponse{CallID: call, Success: true, ContentItems: items}); err != nil {
			t.Fatal(err)
		}
	}
	answer("call_1", DynamicContentItem{Type: "inputText", Text: big})
	answer("call_2", DynamicContentItem{Type: "inputText", Text: big}, DynamicContentItem{Type: "inputImage", ImageURL: "data:image/png;base64,AAAA"})
	col.waitFor(turnEnded)
	cut := func(what, text string) {
		if len(text) > 48_100 || len(text) < 47_000 || !strings.HasPrefix(text, "HEAD") || !strings.HasSuffix(text, "TAIL") || !strings.Contains(text, "tokens truncated") {
			t.Errorf("%s: %d bytes: %.60q", what, len(text), text)
		}
	}
	cut("text answer", outputOf(t, c.requests()[1], "call_1"))
	var parts []model.ContentPart
	if err := json.Unmarshal([]byte(rawOutput(t, c.requests()[1], "call_2")), &parts); err != nil || len(parts) != 2 || parts[1].ImageURL != "data:image/png;base64,AAAA" {
		t.Fatalf("parts %+v: %v", parts, err)
	}
	cut("text part", parts[0].Text)
}

// The default cap leaves a command's output as its tool made it: cut to
// the default limit once, with a header that fits in the fifth more.
func TestCommandOutputCutOnce(t *testing.T) {
	c := newFakeClient(t, script{events: callEvents(execCall("call_1", "head -c 300000 /dev/zero | tr '\\0' x", nil))}, script{events: textEvents("msg_1", "done")})
	s := newTestSession(t, c, withPolicy(policy.ApprovalNever, policy.FullAccess()))
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	col.waitFor(turnEnded)
	out := outputOf(t, c.requests()[1], "call_1")
	// 300,000 bytes printed: 40,000 kept, 65,000 tokens' worth cut.
	_, body, ok := strings.Cut(out, "Output:\n")
	if !ok || !strings.HasPrefix(out, "Chunk ID: ") || strings.Count(body, "x") != 40_000 || !strings.Contains(out, "[… 65000 tokens truncated …]") {
		t.Fatalf("model output of %d bytes, %d notes: %.200q", len(out), strings.Count(out, "tokens truncated"), out)
	}
}

// A text budget with less than a token left drops the next part rather
// than cut it to the default limit (a limit of 0 tokens is read as the
// default).
func TestTextBudgetNearlySpent(t *testing.T) {
	b := newTextBudget(10) // 40 bytes
	if text, ok := b.cut(strings.Repeat("a", 37)); !ok || len(text) != 37 {
		t.Fatalf("first part: %d bytes, %v", len(text), ok)
	}
	if text, ok := b.cut(strings.Repeat("z", 100_000)); ok {
		t.Fatalf("with 3 bytes left, a part of %d bytes was kept", len(text))
	}
}
