package test

import (
	"encoding/json"
	"os"
	"os/exec"
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

// A thread/start that names its cwd and runs with a sandbox that writes,
// in a git repository config.toml does not rate, records the repository
// as trusted in config.toml, as the reference does (0.169, observed): a
// [projects."<root>"] table appended after the file's own text, the root
// with its symbolic links resolved and, for a linked worktree, the main
// repository's. Nothing is written for read-only, without a cwd, outside
// a repository, for a project already rated, or for an operate token.
// The configuration reloads: the next thread there gets the trusted
// project's sandbox.
func TestThreadStartRecordsProjectTrust(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{tmp}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo := mk("repo")
	git(repo, "init", "-q")
	deep := mk("repo", "sub", "deep")
	other := mk("other")
	git(other, "init", "-q")
	rated := mk("rated")
	git(rated, "init", "-q")
	self := mk("self")
	git(self, "init", "-q")
	selfIn := mk("self", "in")
	plain := mk("plain")
	mainRoot := mk("main")
	git(mainRoot, "init", "-q")
	git(mainRoot, "commit", "-q", "--allow-empty", "-m", "first")
	wt := filepath.Join(tmp, "wt")
	git(mainRoot, "worktree", "add", "-q", wt)
	linked := mk("linked")
	git(linked, "init", "-q")
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(linked, link); err != nil {
		t.Fatal(err)
	}
	// Planted: a .git file naming the worktree's git directory, which
	// does not name it back.
	fake := mk("fake")
	if err := os.WriteFile(filepath.Join(fake, ".git"), []byte("gitdir: "+filepath.Join(mainRoot, ".git", "worktrees", "wt")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	base := "# the user's own file\nmodel_provider = \"demo\" # keep\n\n[projects.\"" + rated + "\"]\ntrust_level = \"untrusted\"\n" +
		"[projects.\"" + selfIn + "\"]\ntrust_level = \"trusted\"\n"
	d := startScoped(t, base, Options{})
	file := filepath.Join(d.Home, "config.toml")
	base = readFile(t, file) // with the scope tests' tokens
	admin := dialAs(t, d, adminToken, "admin")
	start := func(c *Client, params map[string]any) map[string]any {
		t.Helper()
		res := unmarshal(t, WantResult(t, c.Call("thread/start", params)))
		c.ReadUntil(isMethod("thread/started"))
		return res
	}
	trusted := func(root string) string { return "\n[projects.\"" + root + "\"]\ntrust_level = \"trusted\"\n" }

	// Nothing to record.
	for _, params := range []map[string]any{
		{"cwd": deep, "sandbox": "read-only"},
		{"cwd": deep},
		{"sandbox": "workspace-write"},
		{"cwd": plain, "sandbox": "danger-full-access"},
		{"cwd": rated, "sandbox": "workspace-write"},
		{"cwd": selfIn, "sandbox": "workspace-write"},
		{"cwd": fake, "sandbox": "workspace-write"},
	} {
		start(admin, params)
		if got := readFile(t, file); got != base {
			t.Fatalf("thread/start %v wrote config.toml:\n%s", params, got)
		}
	}

	// A subdirectory: the repository's root, appended.
	if res := start(admin, map[string]any{"cwd": deep, "sandbox": "workspace-write"}); str(res, "sandbox", "type") != "workspaceWrite" {
		t.Fatalf("sandbox %v", res["sandbox"])
	}
	want := base + trusted(repo)
	if got := readFile(t, file); got != want {
		t.Fatalf("config.toml:\n%s\nwant:\n%s", got, want)
	}
	// Reloaded: a thread in the trusted repository gets workspace-write
	// without asking, and nothing more is written.
	if res := start(admin, map[string]any{"cwd": repo}); str(res, "sandbox", "type") != "workspaceWrite" {
		t.Fatalf("in the trusted repository: sandbox %v", res["sandbox"])
	}
	start(admin, map[string]any{"cwd": deep, "sandbox": "danger-full-access"})
	// A worktree's main repository; a link's target.
	start(admin, map[string]any{"cwd": wt, "sandbox": "danger-full-access"})
	start(admin, map[string]any{"cwd": link, "sandbox": "workspace-write"})
	want += trusted(mainRoot) + trusted(linked)
	if got := readFile(t, file); got != want {
		t.Fatalf("config.toml:\n%s\nwant:\n%s", got, want)
	}
	// Their trust is found from where it was recorded for.
	for _, dir := range []string{wt, link} {
		if res := start(admin, map[string]any{"cwd": dir}); str(res, "sandbox", "type") != "workspaceWrite" {
			t.Fatalf("in %s: sandbox %v", dir, res["sandbox"])
		}
	}

	// A sandbox configured to write counts as asked for; an operate
	// token's thread records nothing.
	conf := "model_provider = \"demo\"\nsandbox_mode = \"workspace-write\"\n"
	d2 := startScoped(t, conf, Options{})
	file2 := filepath.Join(d2.Home, "config.toml")
	conf = readFile(t, file2)
	start(dialAs(t, d2, operateToken, "operator"), map[string]any{"cwd": other, "sandbox": "workspace-write"})
	if got := readFile(t, file2); got != conf {
		t.Fatalf("an operate token's thread wrote config.toml:\n%s", got)
	}
	if strings.Contains(d2.Stderr(), "could not record") {
		t.Fatal("an operate token's thread tried to record the project's trust")
	}
	start(dialAs(t, d2, adminToken, "admin"), map[string]any{"cwd": other})
	if got, want := readFile(t, file2), conf+trusted(other); got != want {
		t.Fatalf("configured sandbox: config.toml:\n%s\nwant:\n%s", got, want)
	}
}
