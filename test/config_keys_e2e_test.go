package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// Config keys that change what agentd does: model_context_window and
// model_auto_compact_token_limit (compaction inside the turn once crossed),
// model_verbosity, env_http_headers, notify (run with the turn's JSON) and
// hide_agent_reasoning (accepted without a warning).
func TestTurnConfigKeys(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "seq 1 5000"), mockmodel.Completed("resp_1", mockmodel.Usage{Input: 400, Output: 100})),
		mockmodel.Reply("resp_c", mockmodel.Text("msg_c", "a short summary"), mockmodel.Completed("resp_c", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "all done"), mockmodel.Completed("resp_2", usage())),
	)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "notice.json")
	script := filepath.Join(tmp, "notify.sh")
	// Each notice is one line appended (one small write).
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$2\" >> \""+out+"\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"
model_context_window = 1000
model_auto_compact_token_limit = 300
model_verbosity = "low"
tool_output_token_limit = 100
hide_agent_reasoning = true
notify = ["`+script+`", "first-arg"]
`), "[model_providers.mock]\n", "[model_providers.mock]\nenv_http_headers = { \"X-From-Env\" = \"E2E_HEADER_VALUE\", \"X-Unset\" = \"E2E_UNSET_VAR\" }\n", 1)
	d := Start(t, Options{ConfigTOML: cfg, Env: []string{"E2E_HEADER_VALUE=header-secret"}})
	c := d.Stdio()
	c.Initialize("notify-client", nil)
	if d.HasLog(func(l LogLine) bool { return strings.Contains(l.Msg, "unknown") }) {
		t.Fatalf("a key was reported unknown:\n%s", d.Stderr())
	}
	id := startThread(t, c, map[string]any{"cwd": tmp})
	// A user shell command's turn is not told about (nor a compaction's),
	// as the reference does.
	c.Request("thread/shellCommand", map[string]any{"threadId": id, "command": "true"})
	collectUntil(c, isMethod("turn/completed"))
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("do it")})
	msgs := collectUntil(c, isMethod("turn/completed"))

	var turnID string
	var compactions int
	for _, msg := range msgs {
		if msg.Method == "" {
			continue
		}
		p := unmarshal(t, msg.Params)
		switch msg.Method {
		case "turn/started":
			turnID = str(p, "turn", "id")
		case "item/completed":
			if str(p, "item", "type") == "contextCompaction" {
				compactions++
			}
		case "thread/tokenUsage/updated":
			if w, _ := path(p, "tokenUsage", "modelContextWindow").(float64); w != 1000 {
				t.Fatalf("modelContextWindow %v, want 1000", path(p, "tokenUsage", "modelContextWindow"))
			}
		}
	}
	if compactions != 1 {
		t.Fatalf("%d compactions in the turn, want 1: %v", compactions, methods(msgs))
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (call, compaction, follow-up)", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Header.Get("X-From-Env"); got != "header-secret" {
			t.Fatalf("request %d: X-From-Env %q", i, got)
		}
		if _, ok := r.Header["X-Unset"]; ok {
			t.Fatalf("request %d sent a header whose variable is unset", i)
		}
	}
	// The compaction request carries the call's output, cut to about 100
	// tokens, head and tail kept.
	toolOut, ok := reqs[1].ToolOutput("call_1")
	if !ok || len(toolOut) > 100*4+100 || !strings.Contains(toolOut, "tokens truncated") || !strings.HasSuffix(toolOut, "5000\n") {
		t.Fatalf("tool output (%d bytes) %q", len(toolOut), toolOut)
	}
	if v := path(reqs[0].JSON, "text", "verbosity"); v != "low" {
		t.Fatalf("text.verbosity %v, want low", v)
	}

	// notify ran with the reference's notice as its last argument.
	raw := waitFile(t, out)
	if n := strings.Count(string(raw), "\n"); n != 1 {
		t.Fatalf("%d notices, want 1 (the model's turn only):\n%s", n, raw)
	}
	var notice map[string]any
	if err := json.Unmarshal(raw, &notice); err != nil {
		t.Fatalf("notice %q: %v", raw, err)
	}
	inputs, _ := notice["input-messages"].([]any)
	if notice["type"] != "agent-turn-complete" || notice["thread-id"] != id || notice["turn-id"] != turnID ||
		notice["cwd"] != tmp || notice["client"] != "notify-client" || notice["last-assistant-message"] != "all done" ||
		!slices.Equal(inputs, []any{"do it"}) {
		t.Fatalf("notice %s", raw)
	}
	if strings.Contains(d.Stderr(), "header-secret") {
		t.Fatal("an env_http_headers value reached the log")
	}
}

// A project's trust_level sets a new thread's defaults, as the reference
// does: trusted or untrusted projects (the cwd itself, or the git
// repository holding it) get the workspace-write sandbox, untrusted ones
// the untrusted approval policy; explicit settings win.
func TestProjectTrustLevels(t *testing.T) {
	tmp := t.TempDir()
	dirs := map[string]string{}
	for _, name := range []string{"trusted", "untrusted", "plain", "repo/.git", "repo/deep", "trusted/sub"} {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs[name] = p
	}
	cfg := `model_provider = "demo"
[projects."` + dirs["trusted"] + `"]
trust_level = "trusted"
[projects."` + dirs["untrusted"] + `"]
trust_level = "untrusted"
[projects."` + filepath.Join(tmp, "repo") + `"]
trust_level = "trusted"
`
	d := Start(t, Options{ConfigTOML: cfg})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	for _, tc := range []struct {
		dir, approval, sandbox string
		params                 map[string]any
	}{
		{"trusted", "on-request", "workspaceWrite", nil},
		{"untrusted", "untrusted", "workspaceWrite", nil},
		{"plain", "on-request", "readOnly", nil},
		{"repo/deep", "on-request", "workspaceWrite", nil},
		{"trusted/sub", "on-request", "readOnly", nil},
		{"untrusted", "never", "readOnly", map[string]any{"approvalPolicy": "never", "sandbox": "read-only"}},
	} {
		params := map[string]any{"cwd": dirs[tc.dir]}
		for k, v := range tc.params {
			params[k] = v
		}
		res := unmarshal(t, WantResult(t, c.Call("thread/start", params)))
		if str(res, "approvalPolicy") != tc.approval || str(res, "sandbox", "type") != tc.sandbox {
			t.Fatalf("%s %v: approval %s sandbox %s, want %s %s", tc.dir, tc.params, str(res, "approvalPolicy"), str(res, "sandbox", "type"), tc.approval, tc.sandbox)
		}
		c.ReadUntil(isMethod("thread/started"))
	}

	// An explicit sandbox_mode is not changed by trust.
	d2 := Start(t, Options{ConfigTOML: cfg + "\n", Config: []string{`sandbox_mode="read-only"`}})
	c2 := d2.Stdio()
	c2.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c2.Call("thread/start", map[string]any{"cwd": dirs["untrusted"]})))
	if str(res, "approvalPolicy") != "untrusted" || str(res, "sandbox", "type") != "readOnly" {
		t.Fatalf("explicit sandbox_mode: %v", res)
	}
}

// waitFile returns the content of a file another process writes, once it
// holds at least one whole line; it fails the test after a generous
// deadline.
func waitFile(t *testing.T, p string) []byte {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		// The shell creates the file before it writes the line.
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return b
		}
	}
	t.Fatalf("%s never got a whole line", p)
	return nil
}

// config/read shows the keys agentd honours, each with its origin: the
// file, or the --config layer above it.
func TestConfigReadOrigins(t *testing.T) {
	d := Start(t, Options{ConfigTOML: "model_provider = \"demo\"\nmodel_context_window = 5000\nmodel_verbosity = \"low\"\n",
		Config: []string{`model_verbosity="high"`, `notify=["/bin/true"]`}})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	var r map[string]any
	validResult(t, "config/read", c.Call("config/read", map[string]any{"includeLayers": true}), &r)
	if path(r, "config", "model_verbosity") != "high" || path(r, "config", "model_context_window") != float64(5000) ||
		path(r, "config", "notify", 0) != "/bin/true" {
		t.Fatalf("config %v", r["config"])
	}
	for key, want := range map[string]string{"model_verbosity": "sessionFlags", "notify": "sessionFlags", "model_context_window": "user", "model_provider": "user"} {
		if got := str(r, "origins", key, "name", "type"); got != want {
			t.Fatalf("origin of %s: %q, want %q (%v)", key, got, want, r["origins"])
		}
	}
	if str(r, "layers", 0, "name", "type") != "sessionFlags" || str(r, "layers", 1, "name", "type") != "user" {
		t.Fatalf("layers %v", r["layers"])
	}
}

// model_reasoning_effort and model_reasoning_summary from config.toml
// reach the model request's reasoning, and thread/start reports the
// effort.
func TestReasoningConfigReachesTheRequest(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, `model_reasoning_effort = "high"
model_reasoning_summary = "detailed"
`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": t.TempDir()})))
	if res["reasoningEffort"] != "high" {
		t.Fatalf("thread/start's reasoningEffort %v", res["reasoningEffort"])
	}
	c.ReadUntil(isMethod("thread/started"))
	runTurn(t, c, str(res, "thread", "id"), "think")
	r := m.Requests()[0]
	if effort, summary := path(r.JSON, "reasoning", "effort"), path(r.JSON, "reasoning", "summary"); effort != "high" || summary != "detailed" {
		t.Fatalf("reasoning effort %v summary %v, want high and detailed", effort, summary)
	}
}
