package test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The made-up tokens of the scope tests: the admin one is the
// --ws-token-file's, the others config.toml's.
const (
	adminToken     = "admin-e2e-token-value"
	operateToken   = "operate-e2e-token-value"
	readToken      = "read-e2e-token-value"
	providerKeyEnv = "E2E_PROVIDER_KEY"
	providerKey    = "sk-e2e-made-up-provider-key-4f1c"
)

func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokensTOML names the read and operate tokens in config.toml.
func tokensTOML() string {
	return fmt.Sprintf(`
[app_server.tokens.dashboard]
sha256 = %q
scope = "read"

[app_server.tokens.bot]
sha256 = %q
scope = "operate"
`, tokenDigest(readToken), tokenDigest(operateToken))
}

// startScoped starts a daemon on ws:// with the admin token as
// --ws-token-file and config.toml's read and operate tokens; configTOML
// comes before the tokens.
func startScoped(t *testing.T, configTOML string, o Options) *Daemon {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte(adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Listen = append(o.Listen, "ws://127.0.0.1:0")
	o.ConfigTOML = configTOML + tokensTOML()
	o.Args = append(o.Args, "--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	return Start(t, o)
}

// dialAs connects with a bearer token and initializes.
func dialAs(t *testing.T, d *Daemon, token, name string) *Client {
	t.Helper()
	c := d.DialWS(WSOptions{Header: http.Header{"Authorization": {"Bearer " + token}}})
	c.Initialize(name, nil)
	return c
}

// wantScopeError checks a refusal's exact code and message.
func wantScopeError(t *testing.T, m Message, message string) {
	t.Helper()
	WantError(t, m, -32600, message)
}

// A read token observes: it lists, reads and subscribes to threads and
// reads models, config and account status; every method that would act
// is refused with -32600 naming the scope and the method, and the
// connection stays open. A resume that would change anything is refused.
func TestScopeReadObservesOnly(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hello"), mockmodel.Completed("resp_1", usage())))
	d := startScoped(t, mockConfig(m, ""), Options{})
	admin := dialAs(t, d, adminToken, "admin")
	id := startThread(t, admin, map[string]any{"cwd": t.TempDir()})
	runTurn(t, admin, id, "hi")

	r := dialAs(t, d, readToken, "reader")
	wantScopeError(t, r.Call("thread/start", map[string]any{}), `token scope "read" does not allow thread/start`)
	if list := unmarshal(t, WantResult(t, r.Call("thread/list", map[string]any{}))); str(list, "data", 0, "id") != id {
		t.Fatalf("thread/list %v", list)
	}
	if got := unmarshal(t, WantResult(t, r.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true}))); str(got, "thread", "turns", 0, "items", 1, "text") != "hello" {
		t.Fatalf("thread/read %v", got)
	}
	for _, method := range []string{"thread/loaded/list", "model/list", "config/read", "account/read", "configRequirements/read"} {
		WantResult(t, r.Call(method, map[string]any{}))
	}
	scratch := t.TempDir()
	for method, params := range map[string]map[string]any{
		"turn/start":         {"threadId": id, "input": textInput("x")},
		"turn/steer":         {"threadId": id, "input": textInput("x"), "expectedTurnId": "t"},
		"turn/interrupt":     {"threadId": id, "turnId": "t"},
		"thread/fork":        {"threadId": id},
		"thread/archive":     {"threadId": id},
		"thread/name/set":    {"threadId": id, "name": "mine"},
		"thread/delete":      {"threadId": id},
		"config/value/write": {"keyPath": "model", "value": "x", "mergeStrategy": "replace"},
		"config/batchWrite":  {"edits": []any{}},
		"command/exec":       {"command": []string{"true"}},
		"fs/readFile":        {"path": filepath.Join(scratch, "f")},
		"fs/readDirectory":   {"path": scratch},
		"fs/writeFile":       {"path": filepath.Join(scratch, "f"), "dataBase64": "eA=="},
		"fuzzyFileSearch":    {"query": "x", "roots": []string{scratch}},
		"account/logout":     {},
	} {
		wantScopeError(t, r.Call(method, params), fmt.Sprintf("token scope %q does not allow %s", "read", method))
	}
	if _, err := os.Stat(filepath.Join(scratch, "f")); !os.IsNotExist(err) {
		t.Fatalf("a refused fs/writeFile wrote: %v", err)
	}
	// Subscribing is a resume without settings; a resume with any is not.
	wantScopeError(t, r.Call("thread/resume", map[string]any{"threadId": id, "sandbox": "danger-full-access"}),
		`token scope "read" does not allow thread/resume with sandbox (read may only subscribe)`)
	wantScopeError(t, r.Call("thread/resume", map[string]any{"threadId": id, "model": "other"}),
		`token scope "read" does not allow thread/resume with model (read may only subscribe)`)
	WantResult(t, r.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true}))
	if got := unmarshal(t, WantResult(t, r.Call("thread/unsubscribe", map[string]any{"threadId": id}))); str(got, "status") != "unsubscribed" {
		t.Fatalf("unsubscribe %v", got)
	}
	if !d.HasLog(func(l LogLine) bool {
		return l.Msg == "request refused by scope" && l.Str("scope") == "read" && l.Str("principal") == `config token "dashboard"`
	}) {
		t.Fatal("refusals are not logged with the scope and the token's name")
	}
	for _, tok := range []string{adminToken, readToken, operateToken} {
		if strings.Contains(d.Stderr(), tok) {
			t.Fatal("a token reached the log")
		}
	}
}

// A read connection subscribed to a thread gets its notifications but
// none of its server requests: an approval goes to the admin connection
// only, and the turn ends for both once the admin answers.
func TestScopeReadGetsNoServerRequests(t *testing.T) {
	m := mockmodel.New(t)
	work := t.TempDir()
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "touch approved.txt"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	d := startScoped(t, mockConfig(m, `approval_policy = "untrusted"
sandbox_mode = "danger-full-access"`), Options{})
	admin := dialAs(t, d, adminToken, "admin")
	id := startThread(t, admin, map[string]any{"cwd": work})
	r := dialAs(t, d, readToken, "reader")
	WantResult(t, r.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true}))

	admin.Request("turn/start", map[string]any{"threadId": id, "input": textInput("make a file")})
	req := admin.ReadUntil(func(m Message) bool { return m.IsServerRequest() })
	if req.Method != "item/commandExecution/requestApproval" {
		t.Fatalf("admin got %s", req.Raw)
	}
	// The reader sees the command item start (the request comes after
	// it), then, once the admin answered, the end of the turn.
	seen := collectUntil(r, func(m Message) bool {
		return m.Method == "item/started" && str(unmarshal(t, m.Params), "item", "type") == "commandExecution"
	})
	admin.Send(map[string]any{"id": json.RawMessage(req.ID), "result": map[string]any{"decision": "accept"}})
	seen = append(seen, collectUntil(r, isMethod("turn/completed"))...)
	collectUntil(admin, isMethod("turn/completed"))
	for _, msg := range seen {
		if msg.IsServerRequest() || msg.Method == "serverRequest/resolved" {
			t.Fatalf("the read connection got %s; all it got: %v", msg.Raw, methods(seen))
		}
	}
	if !strings.Contains(strings.Join(methods(seen), " "), "turn/started") {
		t.Fatalf("the read connection missed the notifications: %v", methods(seen))
	}
	if _, err := os.Stat(filepath.Join(work, "approved.txt")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
}

// An operate token runs the agent within the operator's limits: it starts
// threads and runs turns, and writes unprotected config keys; it may not
// widen the sandbox, write a protected key or another file, or change
// files with fs/*. The admin token may do all of it.
func TestScopeOperateWithinLimits(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ran"), mockmodel.Completed("resp_1", usage())))
	d := startScoped(t, mockConfig(m, `sandbox_mode = "workspace-write"`), Options{})
	configFile := filepath.Join(d.Home, "config.toml")
	op := dialAs(t, d, operateToken, "operator")
	work := t.TempDir()
	id := startThread(t, op, map[string]any{"cwd": work, "sandbox": "workspace-write"})
	if msgs := runTurn(t, op, id, "go"); str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status") != "completed" {
		t.Fatalf("operate turn: %v", methods(msgs))
	}

	scratch := t.TempDir()
	victim := filepath.Join(scratch, "keep.txt")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(scratch, "other.toml")
	before := readFile(t, configFile)
	for _, tc := range []struct {
		method string
		params map[string]any
		want   string
	}{
		{"thread/start", map[string]any{"cwd": work, "sandbox": "danger-full-access"},
			`token scope "operate" does not allow thread/start with sandbox "danger-full-access"`},
		{"thread/start", map[string]any{"cwd": work, "config": map[string]any{"sandbox_mode": "danger-full-access"}},
			`token scope "operate" does not allow thread/start with sandbox "danger-full-access"`},
		{"thread/start", map[string]any{"cwd": work, "approvalPolicy": "never"},
			`token scope "operate" does not allow thread/start with approvalPolicy "never" (the configured approval_policy is "on-request")`},
		{"thread/fork", map[string]any{"threadId": id, "sandbox": "danger-full-access"},
			`token scope "operate" does not allow thread/fork with sandbox "danger-full-access"`},
		{"thread/resume", map[string]any{"threadId": id, "sandbox": "danger-full-access"},
			`token scope "operate" does not allow thread/resume with sandbox "danger-full-access"`},
		{"turn/start", map[string]any{"threadId": id, "input": textInput("x"), "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}},
			`token scope "operate" does not allow turn/start with sandboxPolicy "dangerFullAccess"`},
		{"turn/start", map[string]any{"threadId": id, "input": textInput("x"), "sandboxPolicy": map[string]any{"type": "externalSandbox"}},
			`token scope "operate" does not allow turn/start with sandboxPolicy "externalSandbox"`},
		{"turn/start", map[string]any{"threadId": id, "input": textInput("x"), "approvalPolicy": "never"},
			`token scope "operate" does not allow turn/start with approvalPolicy "never" (the configured approval_policy is "on-request")`},
		{"command/exec", map[string]any{"command": []string{"touch", filepath.Join(scratch, "ran")}, "sandboxPolicy": noSandbox},
			`token scope "operate" does not allow command/exec with sandboxPolicy "dangerFullAccess"`},
		{"config/value/write", map[string]any{"keyPath": "model_providers.evil", "value": map[string]any{"base_url": "http://127.0.0.1:1/v1"}, "mergeStrategy": "upsert"},
			`token scope "operate" does not allow config/value/write to change model_providers (a protected key; see docs/security.md)`},
		{"config/value/write", map[string]any{"keyPath": "profiles.x.model_providers", "value": map[string]any{"evil": map[string]any{"base_url": "http://127.0.0.1:1/v1"}}, "mergeStrategy": "replace"},
			`token scope "operate" does not allow config/value/write to change profiles.x.model_providers (a protected key; see docs/security.md)`},
		{"config/value/write", map[string]any{"keyPath": "openai_base_url", "value": "http://127.0.0.1:1/v1", "mergeStrategy": "replace"},
			`token scope "operate" does not allow config/value/write to change openai_base_url (a protected key; see docs/security.md)`},
		{"config/batchWrite", map[string]any{"edits": []any{
			map[string]any{"keyPath": "model", "value": "x", "mergeStrategy": "replace"},
			map[string]any{"keyPath": "sandbox_mode", "value": "danger-full-access", "mergeStrategy": "replace"},
		}}, `token scope "operate" does not allow config/batchWrite to change sandbox_mode (a protected key; see docs/security.md)`},
		{"config/value/write", map[string]any{"keyPath": "model", "value": "x", "mergeStrategy": "replace", "filePath": elsewhere},
			fmt.Sprintf(`token scope "operate" does not allow config/value/write to write %q: only the user's config.toml`, elsewhere)},
		{"fs/writeFile", map[string]any{"path": elsewhere, "dataBase64": "eA=="}, `token scope "operate" does not allow fs/writeFile`},
		{"fs/remove", map[string]any{"path": victim}, `token scope "operate" does not allow fs/remove`},
		{"fs/copy", map[string]any{"sourcePath": victim, "destinationPath": elsewhere}, `token scope "operate" does not allow fs/copy`},
		{"fs/createDirectory", map[string]any{"path": filepath.Join(scratch, "d")}, `token scope "operate" does not allow fs/createDirectory`},
		{"thread/shellCommand", map[string]any{"threadId": id, "command": "touch " + filepath.Join(scratch, "ran")}, `token scope "operate" does not allow thread/shellCommand`},
		{"thread/delete", map[string]any{"threadId": id}, `token scope "operate" does not allow thread/delete`},
		{"account/login/start", map[string]any{"type": "apiKey", "apiKey": "sk-x"}, `token scope "operate" does not allow account/login/start`},
	} {
		wantScopeError(t, op.Call(tc.method, tc.params), tc.want)
	}
	// thread/settings/update (experimental) changes later turns: the same
	// limits as turn/start.
	opx := d.DialWS(WSOptions{Header: http.Header{"Authorization": {"Bearer " + operateToken}}})
	opx.Initialize("operator-experimental", map[string]any{"experimentalApi": true})
	wantScopeError(t, opx.Call("thread/settings/update", map[string]any{"threadId": id, "sandboxPolicy": map[string]any{"type": "dangerFullAccess"}}),
		`token scope "operate" does not allow thread/settings/update with sandboxPolicy "dangerFullAccess"`)
	wantScopeError(t, opx.Call("thread/settings/update", map[string]any{"threadId": id, "approvalPolicy": "never"}),
		`token scope "operate" does not allow thread/settings/update with approvalPolicy "never" (the configured approval_policy is "on-request")`)
	WantResult(t, opx.Call("thread/settings/update", map[string]any{"threadId": id, "sandboxPolicy": map[string]any{"type": "readOnly"}}))

	if got := readFile(t, configFile); got != before {
		t.Fatalf("a refused write changed config.toml:\n%s", got)
	}
	for _, p := range []string{elsewhere, filepath.Join(scratch, "ran"), filepath.Join(scratch, "d")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("a refused request made %s: %v", p, err)
		}
	}
	if readFile(t, victim) != "keep" {
		t.Fatal("a refused fs/remove removed the file")
	}
	// What operate may do: read a file, write an unprotected key.
	if got := unmarshal(t, WantResult(t, op.Call("fs/readFile", map[string]any{"path": victim}))); str(got, "dataBase64") != "a2VlcA==" {
		t.Fatalf("fs/readFile %v", got)
	}
	WantResult(t, op.Call("config/value/write", map[string]any{"keyPath": "model_reasoning_effort", "value": "low", "mergeStrategy": "replace"}))
	mustContain(t, readFile(t, configFile), `model_reasoning_effort = "low"`)

	// The admin token may do all of it.
	admin := dialAs(t, d, adminToken, "admin")
	startThread(t, admin, map[string]any{"cwd": work, "sandbox": "danger-full-access"})
	WantResult(t, admin.Call("fs/writeFile", map[string]any{"path": elsewhere, "dataBase64": "eA=="}))
	if readFile(t, elsewhere) != "x" {
		t.Fatal("admin fs/writeFile")
	}
	WantResult(t, admin.Call("config/value/write", map[string]any{"keyPath": "model_providers.second", "value": map[string]any{"name": "second", "base_url": m.URL()}, "mergeStrategy": "upsert"}))
	mustContain(t, readFile(t, configFile), `model_providers.second.name = "second"`)
}

// Where the configuration already says approval_policy = "never", an
// operate token may ask for it too: that widens nothing.
func TestScopeOperateApprovalNeverWhereConfigured(t *testing.T) {
	d := startScoped(t, "model_provider = \"demo\"\napproval_policy = \"never\"\n", Options{})
	op := dialAs(t, d, operateToken, "operator")
	startThread(t, op, map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never"})
}

// The attack of issue 18, end to end: an operate client tries to point a
// provider at a listener it controls, with the operator's key, and to make
// it the default. Every attempt is refused and config.toml is unchanged;
// after a restart, a turn goes to the operator's model with the key, and
// the client's listener never hears from agentd.
func TestScopeOperateCannotRedirectTheKey(t *testing.T) {
	var mu sync.Mutex
	var stolen []string
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		stolen = append(stolen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer evil.Close()
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "safe"), mockmodel.Completed("resp_1", usage())))
	cfg := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = %q
env_key = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, m.URL(), providerKeyEnv)
	home := shortTempDir(t)
	env := []string{providerKeyEnv + "=" + providerKey}
	d := startScoped(t, cfg, Options{Home: home, Env: env})
	configFile := filepath.Join(home, "config.toml")
	before := readFile(t, configFile)

	op := dialAs(t, d, operateToken, "operator")
	evilProvider := map[string]any{"name": "evil", "base_url": evil.URL + "/v1", "env_key": providerKeyEnv, "wire_api": "responses"}
	refusals := []struct {
		method string
		params map[string]any
	}{
		{"config/batchWrite", map[string]any{"edits": []any{
			map[string]any{"keyPath": "model_providers.evil", "value": evilProvider, "mergeStrategy": "replace"},
			map[string]any{"keyPath": "model_provider", "value": "evil", "mergeStrategy": "replace"},
		}}},
		{"config/value/write", map[string]any{"keyPath": "model_providers", "value": map[string]any{"evil": evilProvider}, "mergeStrategy": "upsert"}},
		{"config/value/write", map[string]any{"keyPath": "model_providers.mock.base_url", "value": evil.URL + "/v1", "mergeStrategy": "replace"}},
		{"config/value/write", map[string]any{"keyPath": "profiles.default", "value": map[string]any{"model_providers": map[string]any{"evil": evilProvider}}, "mergeStrategy": "upsert"}},
		{"thread/start", map[string]any{"cwd": t.TempDir(), "config": map[string]any{"model_providers.evil": evilProvider, "model_provider": "evil"}}},
	}
	for _, r := range refusals {
		msg := op.Call(r.method, r.params)
		if msg.Error == nil || msg.Error.Code != -32600 || !strings.HasPrefix(msg.Error.Message, `token scope "operate" does not allow `+r.method) {
			t.Fatalf("%s: %s", r.method, msg.Raw)
		}
	}
	// Alone, model_provider = "evil" names no provider: not a valid file.
	if msg := op.Call("config/value/write", map[string]any{"keyPath": "model_provider", "value": "evil", "mergeStrategy": "replace"}); msg.Error == nil {
		t.Fatalf("model_provider = evil was written: %s", msg.Raw)
	}
	if got := readFile(t, configFile); got != before {
		t.Fatalf("config.toml changed:\n%s", got)
	}
	op.Close()
	d.Signal(syscall.SIGTERM)
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	d2 := Start(t, Options{Home: home, Env: env})
	c := d2.Stdio()
	c.Initialize("after-restart", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	if msgs := runTurn(t, c, id, "hi"); str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status") != "completed" {
		t.Fatalf("turn after restart: %v", methods(msgs))
	}
	reqs := m.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+providerKey {
		t.Fatalf("the operator's model got %d requests (Authorization %q)", len(reqs), reqs[0].Header.Get("Authorization"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stolen) != 0 {
		t.Fatalf("the client's listener was reached: %q", stolen)
	}
}

// A signed bearer token's scope claim is its scope (admin without one);
// a claim naming no scope is refused at the upgrade with 401.
func TestScopeSignedBearerClaim(t *testing.T) {
	secret := []byte(strings.Repeat("scope-e2e-secret", 3))
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, Config: []string{`model_provider="demo"`},
		Args: []string{"--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secretFile}})
	sign := func(sc any) string {
		claims := jwt.MapClaims{"exp": time.Now().Add(time.Minute).Unix()}
		if sc != nil {
			claims["scope"] = sc
		}
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cwd := t.TempDir()
	reader := dialAs(t, d, sign("read"), "jwt-read")
	wantScopeError(t, reader.Call("thread/start", map[string]any{"cwd": cwd}), `token scope "read" does not allow thread/start`)
	WantResult(t, reader.Call("thread/list", map[string]any{}))

	operator := dialAs(t, d, sign("operate"), "jwt-operate")
	startThread(t, operator, map[string]any{"cwd": cwd})
	wantScopeError(t, operator.Call("fs/writeFile", map[string]any{"path": filepath.Join(cwd, "f"), "dataBase64": "eA=="}), `token scope "operate" does not allow fs/writeFile`)

	for _, sc := range []any{"admin", nil} {
		admin := dialAs(t, d, sign(sc), "jwt-admin")
		startThread(t, admin, map[string]any{"cwd": cwd, "sandbox": "danger-full-access"})
	}
	for _, bad := range []any{"root", "", []string{"read"}} {
		if code, body := upgradeStatus(t, d, "Bearer "+sign(bad)); code != http.StatusUnauthorized || body != "invalid websocket jwt scope: one of read, operate, admin" {
			t.Fatalf("scope %v: %d %q", bad, code, body)
		}
	}
}

// Tokens in config.toml turn authentication on by themselves: without
// --ws-auth, a loopback listener then admits only them; the Unix socket
// stays the local user's, admin, without a token.
func TestScopeConfigTokensAloneRequireAuth(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0", "unix://"}, ConfigTOML: "model_provider = \"demo\"\n" + tokensTOML()})
	if code, body := upgradeStatus(t, d, ""); code != http.StatusUnauthorized || body != "missing websocket bearer token" {
		t.Fatalf("no token: %d %q", code, body)
	}
	if code, body := upgradeStatus(t, d, "Bearer "+adminToken); code != http.StatusUnauthorized || body != "invalid websocket bearer token" {
		t.Fatalf("unknown token: %d %q", code, body)
	}
	r := dialAs(t, d, readToken, "reader")
	wantScopeError(t, r.Call("thread/start", map[string]any{}), `token scope "read" does not allow thread/start`)
	u := d.DialUnix()
	u.Initialize("unix", nil)
	startThread(t, u, map[string]any{"cwd": t.TempDir(), "sandbox": "danger-full-access"})
}
