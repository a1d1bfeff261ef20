package test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// execExit runs command/exec and returns its exit code.
func execExit(t *testing.T, c *Client, params map[string]any) int {
	t.Helper()
	res := unmarshal(t, WantResult(t, c.Call("command/exec", params)))
	code, ok := res["exitCode"].(float64)
	if !ok {
		t.Fatalf("command/exec result %v", res)
	}
	return int(code)
}

// dialExperimental connects with a bearer token and initializes with the
// experimental API (thread/fork and thread/resume by path).
func dialExperimental(t *testing.T, d *Daemon, token, name string) *Client {
	t.Helper()
	c := d.DialWS(WSOptions{Header: http.Header{"Authorization": {"Bearer " + token}}})
	c.Initialize(name, map[string]any{"experimentalApi": true})
	return c
}

// appendTo is a command that appends a line to file: what a client would
// run to mint itself a token in config.toml.
func appendTo(file string) []string {
	return []string{"sh", "-c", "echo '# written' >> " + file}
}

// On a daemon whose sandbox_mode is read-only (the default), an operate
// token may ask for no sandbox wider than read-only: not workspace-write,
// with or without writable roots (agentd's home among them), not network
// access; nor name model_instructions_file; config override values are
// checked for everyone. Nothing refused ran or was written; the admin may
// do what operate may not.
func TestScopeOperateMayNotWidenAReadOnlySandbox(t *testing.T) {
	m := mockmodel.New(t)
	d := startScoped(t, mockConfig(m, ""), Options{})
	home := d.Home
	configFile := filepath.Join(home, "config.toml")
	before := readFile(t, configFile)
	op := dialAs(t, d, operateToken, "operator")
	work := t.TempDir()
	id := startThread(t, op, map[string]any{"cwd": work})
	wideMode := `(the configured sandbox is "read-only")`
	for _, tc := range []struct {
		method string
		params map[string]any
		want   string
	}{
		{"command/exec", map[string]any{"command": appendTo(configFile), "cwd": work,
			"sandboxPolicy": map[string]any{"type": "workspaceWrite", "writableRoots": []string{home}}},
			`token scope "operate" does not allow command/exec with sandbox "workspace-write" ` + wideMode},
		{"command/exec", map[string]any{"command": appendTo(configFile), "cwd": home, "sandboxPolicy": map[string]any{"type": "workspaceWrite"}},
			`token scope "operate" does not allow command/exec with sandbox "workspace-write" ` + wideMode},
		{"command/exec", map[string]any{"command": []string{"true"}, "cwd": work, "sandboxPolicy": map[string]any{"type": "readOnly", "networkAccess": true}},
			`token scope "operate" does not allow command/exec with network access (the configured sandbox has none)`},
		{"thread/start", map[string]any{"cwd": work, "sandbox": "workspace-write"},
			`token scope "operate" does not allow thread/start with sandbox "workspace-write" ` + wideMode},
		{"thread/start", map[string]any{"cwd": home, "config": map[string]any{"sandbox_mode": "workspace-write"}},
			`token scope "operate" does not allow thread/start with sandbox "workspace-write" ` + wideMode},
		{"thread/resume", map[string]any{"threadId": id, "sandbox": "workspace-write"},
			`token scope "operate" does not allow thread/resume with sandbox "workspace-write" ` + wideMode},
		{"turn/start", map[string]any{"threadId": id, "input": textInput("x"), "sandboxPolicy": map[string]any{"type": "workspaceWrite", "writableRoots": []string{home}}},
			`token scope "operate" does not allow turn/start with sandbox "workspace-write" ` + wideMode},
		{"thread/start", map[string]any{"cwd": work, "config": map[string]any{"model_instructions_file": "/etc/shadow"}},
			`token scope "operate" does not allow thread/start with config.model_instructions_file (a protected key; see docs/security.md)`},
		{"config/value/write", map[string]any{"keyPath": "model_instructions_file", "value": "/etc/shadow", "mergeStrategy": "replace"},
			`token scope "operate" does not allow config/value/write to change model_instructions_file (a protected key; see docs/security.md)`},
		{"config/value/write", map[string]any{"keyPath": "profiles.p.model_instructions_file", "value": "/etc/shadow", "mergeStrategy": "replace"},
			`token scope "operate" does not allow config/value/write to change profiles.p.model_instructions_file (a protected key; see docs/security.md)`},
	} {
		wantScopeError(t, op.Call(tc.method, tc.params), tc.want)
	}
	// A turn/start refused left the thread idle: no turn ran.
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("the model got %d requests", n)
	}
	// Read-only holds where it is asked for: a command in the home runs
	// and cannot write there.
	if code := execExit(t, op, map[string]any{"command": appendTo(configFile), "cwd": home}); code == 0 {
		t.Fatal("a read-only command wrote in agentd's home")
	}
	if got := readFile(t, configFile); got != before {
		t.Fatalf("config.toml changed:\n%s", got)
	}

	// Config override values are checked, for every scope.
	admin := dialAs(t, d, adminToken, "admin")
	for _, c := range []*Client{op, admin} {
		WantError(t, c.Call("thread/start", map[string]any{"cwd": work, "config": map[string]any{"approval_policy": "bogus"}}), -32600,
			`Invalid request: config.approval_policy "bogus" is not one of untrusted, on-failure, on-request, never`)
		WantError(t, c.Call("thread/start", map[string]any{"cwd": work, "config": map[string]any{"sandbox_mode": "Danger-Full-Access"}}), -32600,
			`Invalid request: config.sandbox_mode "Danger-Full-Access" is not one of read-only, workspace-write, danger-full-access`)
	}

	// The admin may widen it.
	scratch := t.TempDir()
	target := filepath.Join(scratch, "admin.txt")
	if code := execExit(t, admin, map[string]any{"command": appendTo(target), "cwd": work,
		"sandboxPolicy": map[string]any{"type": "workspaceWrite", "writableRoots": []string{scratch}}}); code != 0 {
		t.Fatalf("admin command/exec exit %d", code)
	}
	mustContain(t, readFile(t, target), "# written")
	res := unmarshal(t, WantResult(t, admin.Call("thread/start", map[string]any{"cwd": work, "sandbox": "workspace-write"})))
	if str(res, "sandbox", "type") != "workspaceWrite" {
		t.Fatalf("admin thread/start %v", res)
	}
}

// On a daemon whose sandbox is workspace-write, with one writable root
// and the temp directories excluded, an operate token may use that
// sandbox but not widen it: no other root (agentd's home), no network,
// no temp directory, and no writable cwd that is agentd's home or holds
// it, for command/exec and every thread method.
func TestScopeOperateStaysInTheConfiguredWorkspace(t *testing.T) {
	m := mockmodel.New(t)
	shared := t.TempDir()
	d := startScoped(t, mockConfig(m, fmt.Sprintf(`sandbox_mode = "workspace-write"
[sandbox_workspace_write]
writable_roots = [%q]
exclude_slash_tmp = true
exclude_tmpdir_env_var = true
`, shared)), Options{})
	home := d.Home
	configFile := filepath.Join(home, "config.toml")
	before := readFile(t, configFile)
	op := dialAs(t, d, operateToken, "operator")
	work := t.TempDir()
	id := startThread(t, op, map[string]any{"cwd": work})
	noTmp := func(roots ...string) map[string]any {
		roots = append([]string{}, roots...)
		return map[string]any{"type": "workspaceWrite", "writableRoots": roots, "excludeSlashTmp": true, "excludeTmpdirEnvVar": true}
	}
	inHome := func(method, cwd string) string {
		return fmt.Sprintf(`token scope "operate" does not allow %s with cwd %q (agentd's home %q would be writable)`, method, cwd, home)
	}
	parent := filepath.Dir(home)
	for _, tc := range []struct {
		method string
		params map[string]any
		want   string
	}{
		{"command/exec", map[string]any{"command": appendTo(configFile), "cwd": work, "sandboxPolicy": noTmp(home)},
			fmt.Sprintf(`token scope "operate" does not allow command/exec with writable root %q (not within a writable root of the configured sandbox)`, home)},
		{"command/exec", map[string]any{"command": appendTo(configFile), "cwd": home}, inHome("command/exec", home)},
		{"command/exec", map[string]any{"command": appendTo(configFile), "cwd": parent}, inHome("command/exec", parent)},
		{"command/exec", map[string]any{"command": appendTo(configFile), "cwd": home, "sandboxPolicy": noTmp()}, inHome("command/exec", home)},
		{"command/exec", map[string]any{"command": []string{"true"}, "cwd": work, "sandboxPolicy": map[string]any{"type": "workspaceWrite", "networkAccess": true, "excludeSlashTmp": true, "excludeTmpdirEnvVar": true}},
			`token scope "operate" does not allow command/exec with network access (the configured sandbox has none)`},
		{"command/exec", map[string]any{"command": []string{"true"}, "cwd": work, "sandboxPolicy": map[string]any{"type": "workspaceWrite"}},
			`token scope "operate" does not allow command/exec with /tmp writable (the configured sandbox excludes it)`},
		{"thread/start", map[string]any{"cwd": home}, inHome("thread/start", home)},
		{"thread/start", map[string]any{"cwd": parent, "sandbox": "workspace-write"}, inHome("thread/start", parent)},
		{"thread/resume", map[string]any{"threadId": id, "cwd": home}, inHome("thread/resume", home)},
		{"turn/start", map[string]any{"threadId": id, "input": textInput("x"), "cwd": home}, inHome("turn/start", home)},
		{"turn/start", map[string]any{"threadId": id, "input": textInput("x"), "sandboxPolicy": noTmp(home)},
			fmt.Sprintf(`token scope "operate" does not allow turn/start with writable root %q (not within a writable root of the configured sandbox)`, home)},
	} {
		wantScopeError(t, op.Call(tc.method, tc.params), tc.want)
	}
	opx := dialExperimental(t, d, operateToken, "operator-experimental")
	wantScopeError(t, opx.Call("thread/settings/update", map[string]any{"threadId": id, "cwd": home}), inHome("thread/settings/update", home))
	// A cwd the sandbox does not make writable is no risk.
	WantResult(t, opx.Call("thread/settings/update", map[string]any{"threadId": id, "cwd": home, "sandboxPolicy": map[string]any{"type": "readOnly"}}))
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("the model got %d requests", n)
	}
	if got := readFile(t, configFile); got != before {
		t.Fatalf("config.toml changed:\n%s", got)
	}

	// Within the configuration: the cwd and the configured root, or a
	// directory inside it.
	sub := filepath.Join(shared, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if code := execExit(t, op, map[string]any{"command": []string{"sh", "-c", "echo x > in-cwd && echo x > " + filepath.Join(sub, "in-root")},
		"cwd": work, "sandboxPolicy": noTmp(sub)}); code != 0 {
		t.Fatalf("operate command/exec within the configuration: exit %d", code)
	}
	mustContain(t, readFile(t, filepath.Join(sub, "in-root")), "x")
	mustContain(t, readFile(t, filepath.Join(work, "in-cwd")), "x")

	// The admin may widen it.
	admin := dialAs(t, d, adminToken, "admin")
	scratch := t.TempDir()
	if code := execExit(t, admin, map[string]any{"command": appendTo(filepath.Join(scratch, "admin.txt")), "cwd": work,
		"sandboxPolicy": map[string]any{"type": "workspaceWrite", "writableRoots": []string{scratch}, "networkAccess": true}}); code != 0 {
		t.Fatalf("admin command/exec exit %d", code)
	}
	mustContain(t, readFile(t, filepath.Join(scratch, "admin.txt")), "# written")
}

// A thread an admin ran with danger-full-access and approvals "never",
// on a daemon configured read-only with on-request approvals: an operate
// client that forks it (by path) or resumes it (stored, by path; loaded,
// by id) gets the configured settings, and the response says so. The
// admin forking it keeps what the thread had.
func TestScopeOperateForkAndResumeAreClamped(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hello"), mockmodel.Completed("resp_1", usage())))
	d := startScoped(t, mockConfig(m, ""), Options{})
	home := d.Home
	admin := dialExperimental(t, d, adminToken, "admin")
	work := t.TempDir()
	started := unmarshal(t, WantResult(t, admin.Call("thread/start", map[string]any{"cwd": work, "sandbox": "danger-full-access", "approvalPolicy": "never"})))
	admin.ReadUntil(isMethod("thread/started"))
	id, path := str(started, "thread", "id"), str(started, "thread", "path")
	runTurn(t, admin, id, "hi")

	settings := func(res map[string]any) string {
		return str(res, "sandbox", "type") + " " + str(res, "approvalPolicy")
	}
	op := dialExperimental(t, d, operateToken, "operator")
	if got := settings(unmarshal(t, WantResult(t, op.Call("thread/fork", map[string]any{"threadId": id, "path": path, "excludeTurns": true})))); got != "readOnly on-request" {
		t.Fatalf("operate fork by path: %s", got)
	}
	if got := settings(unmarshal(t, WantResult(t, admin.Call("thread/fork", map[string]any{"threadId": id, "path": path, "excludeTurns": true})))); got != "dangerFullAccess never" {
		t.Fatalf("admin fork by path: %s", got)
	}
	op.Close()
	admin.Close()
	d.Signal(syscall.SIGTERM)
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// A new daemon on the same home: the thread is stored, not loaded.
	d2 := startScoped(t, mockConfig(m, ""), Options{Home: home})
	op = dialExperimental(t, d2, operateToken, "operator")
	if got := settings(unmarshal(t, WantResult(t, op.Call("thread/resume", map[string]any{"threadId": id, "path": path, "excludeTurns": true})))); got != "readOnly on-request" {
		t.Fatalf("operate resume by path: %s", got)
	}
	op2 := dialExperimental(t, d2, operateToken, "operator-2")
	if got := settings(unmarshal(t, WantResult(t, op2.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})))); got != "readOnly on-request" {
		t.Fatalf("operate resume by id: %s", got)
	}
}

// An operate client's turn on a loaded thread that an admin runs with
// danger-full-access and approvals "never" runs with the configured
// settings: the thread is narrowed, as the admin's next resume shows.
func TestScopeOperateTurnOnAWiderThreadIsClamped(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hello"), mockmodel.Completed("resp_1", usage())))
	d := startScoped(t, mockConfig(m, ""), Options{})
	admin := dialAs(t, d, adminToken, "admin")
	id := startThread(t, admin, map[string]any{"cwd": t.TempDir(), "sandbox": "danger-full-access", "approvalPolicy": "never"})
	op := dialAs(t, d, operateToken, "operator")
	if msgs := runTurn(t, op, id, "hi"); str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status") != "completed" {
		t.Fatalf("operate turn: %v", methods(msgs))
	}
	res := unmarshal(t, WantResult(t, admin.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})))
	if got := str(res, "sandbox", "type") + " " + str(res, "approvalPolicy"); got != "readOnly on-request" {
		t.Fatalf("after the operate turn, the thread runs with %s", got)
	}
}

// The same for an operate client's review: the reviewer (which may run
// commands) works within the configured settings, not the admin's wider
// ones, and the thread is narrowed.
func TestScopeOperateReviewOnAWiderThreadIsClamped(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "no findings"), mockmodel.Completed("resp_1", usage())))
	d := startScoped(t, mockConfig(m, ""), Options{})
	admin := dialAs(t, d, adminToken, "admin")
	id := startThread(t, admin, map[string]any{"cwd": t.TempDir(), "sandbox": "danger-full-access", "approvalPolicy": "never"})
	op := dialAs(t, d, operateToken, "operator")
	msgs := runReview(t, op, map[string]any{"threadId": id, "target": map[string]any{"type": "custom", "instructions": "look"}})
	if str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status") != "completed" {
		t.Fatalf("operate review: %v", methods(msgs))
	}
	res := unmarshal(t, WantResult(t, admin.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})))
	if got := str(res, "sandbox", "type") + " " + str(res, "approvalPolicy"); got != "readOnly on-request" {
		t.Fatalf("after the operate review, the thread runs with %s", got)
	}
}

// The same for an operate client's detached review: the fork it runs on
// gets the configured settings, not the admin's wider ones (as an
// operate thread/fork would), and the reviewer works within them; the
// thread itself keeps what the admin gave it. The admin's own detached
// review keeps the thread's settings.
func TestScopeOperateDetachedReviewOfAWiderThreadIsClamped(t *testing.T) {
	m := mockmodel.New(t)
	for _, id := range []string{"resp_1", "resp_2"} {
		m.Enqueue(mockmodel.Reply(id, mockmodel.Text("msg_"+id, "no findings"), mockmodel.Completed(id, usage())))
	}
	d := startScoped(t, mockConfig(m, ""), Options{})
	admin := dialAs(t, d, adminToken, "admin")
	id := startThread(t, admin, map[string]any{"cwd": t.TempDir(), "sandbox": "danger-full-access", "approvalPolicy": "never"})
	settings := func(c *Client, thread string) string {
		res := unmarshal(t, WantResult(t, c.Call("thread/resume", map[string]any{"threadId": thread, "excludeTurns": true})))
		return str(res, "sandbox", "type") + " " + str(res, "approvalPolicy")
	}
	custom := map[string]any{"type": "custom", "instructions": "look"}

	op := dialAs(t, d, operateToken, "operator")
	fork, msgs, _ := detachedReview(t, op, id, custom)
	if str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status") != "completed" {
		t.Fatalf("operate detached review: %v", methods(msgs))
	}
	if got := settings(admin, fork); got != "readOnly on-request" {
		t.Fatalf("the operate client's review ran on a fork with %s", got)
	}
	if got := settings(admin, id); got != "dangerFullAccess never" {
		t.Fatalf("after the operate detached review, the thread runs with %s", got)
	}

	fork, _, _ = detachedReview(t, admin, id, custom)
	if got := settings(admin, fork); got != "dangerFullAccess never" {
		t.Fatalf("the admin's review ran on a fork with %s", got)
	}
}
