package test

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// Credentials stay where the operator put them. The daemon runs at debug
// level with a provider key in env_key's variable, a literal http_headers
// token (given with --config, so config.toml does not hold it), an
// env_http_headers value, OPENAI_API_KEY and a WebSocket token file. It
// runs a turn whose command prints its environment, then model requests
// that fail with bodies echoing every request header (HTTP 502, retried,
// then 401) and a response.failed naming the key, serves config/read and
// a client with a wrong token. None of the secrets then appears in its
// stderr, in any file under its home, or in any message a client got —
// though each did reach the model server.
func TestSecretsStayPut(t *testing.T) {
	const (
		providerKey = "e2e-provider-key-9c41f0aa"
		literalHdr  = "e2e-literal-header-77ab31"
		envHdr      = "e2e-env-header-5d2e8c"
		openaiKey   = "sk-e2e-openai-key-424242"
		wsToken     = "e2e-ws-token-0b9f3c7d11"
	)
	secrets := []string{providerKey, literalHdr, envHdr, openaiKey, wsToken}
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "env"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Status(http.StatusBadGateway, "").EchoHeaders(),
		mockmodel.Status(http.StatusUnauthorized, "").EchoHeaders(),
		mockmodel.SSE(mockmodel.Created("resp_3"), mockmodel.Failed("resp_3", "server_error", "bad credential Bearer "+providerKey)),
	)
	cfg := strings.Replace(mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"
[shell_environment_policy]
ignore_default_excludes = true
`), "request_max_retries = 0", `request_max_retries = 1
env_key = "E2E_SECRET_KEY"
env_http_headers = { "X-Env-Auth" = "E2E_SECRET_HDR" }`, 1)
	tokenFile := filepath.Join(t.TempDir(), "ws-token")
	if err := os.WriteFile(tokenFile, []byte(wsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{
		ConfigTOML: cfg,
		Listen:     []string{"stdio://", "ws://127.0.0.1:0"},
		Config:     []string{`model_providers.mock.http_headers={"X-Api-Token"="` + literalHdr + `"}`},
		Args:       []string{"--ws-auth", "capability-token", "--ws-token-file", tokenFile},
		Env:        []string{"E2E_SECRET_KEY=" + providerKey, "E2E_SECRET_HDR=" + envHdr, "OPENAI_API_KEY=" + openaiKey},
	})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	ws := d.DialWS(WSOptions{Header: http.Header{"Authorization": {"Bearer " + wsToken}}})
	ws.Initialize("e2e-ws", nil)
	WantResult(t, ws.Call("config/read", map[string]any{"includeLayers": true}))
	resp, err := http.DefaultClient.Do(wsUpgradeRequest(t, d.URL("ws"), "Bearer "+wsToken+"-wrong"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: HTTP %d", resp.StatusCode)
	}

	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "show env")
	failed := runTurn(t, c, id, "fail please")
	if !strings.Contains(string(failed[len(failed)-1].Raw), `"failed"`) {
		t.Fatalf("the turn did not fail: %s", failed[len(failed)-1].Raw)
	}
	runTurn(t, c, id, "fail again")

	// The secrets did leave: to the model server, as they should.
	reqs := m.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	h := reqs[2].Header
	if h.Get("Authorization") != "Bearer "+providerKey || h.Get("X-Api-Token") != literalHdr || h.Get("X-Env-Auth") != envHdr {
		t.Fatalf("the model request lacks the credentials: %v", h)
	}
	envOut, _ := reqs[1].ToolOutput("call_1")
	if !strings.Contains(envOut, "PATH=") {
		t.Fatalf("the command did not print its environment: %q", envOut)
	}

	// A clean stop, so that whatever agentd writes at exit is written.
	ws.Close()
	c.Close()
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	where := map[string]string{"stderr": d.Stderr(), "the command's environment": envOut}
	for i, raw := range append(c.Received(), ws.Received()...) {
		where[fmt.Sprintf("client message %d", i)] = string(raw)
	}
	err = filepath.WalkDir(d.Home, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		where[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range where {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the secret %q:\n%s", name, s, text)
			}
		}
	}
	// The echoed headers were seen and cut, not lost.
	if !strings.Contains(d.Stderr(), "[REDACTED]") {
		t.Fatalf("no redacted error was logged:\n%s", d.Stderr())
	}
}

// wsUpgradeRequest is a WebSocket upgrade request to a ws:// URL with an
// Authorization header.
func wsUpgradeRequest(t *testing.T, wsURL, authorization string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http"+strings.TrimPrefix(wsURL, "ws")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return req
}

// The API key variables never reach a child process, even with the
// default excludes off: not a command the model runs, not
// thread/shellCommand, not command/exec, not the notify program. Only
// shell_environment_policy.set gives one to commands, by name.
func TestKeyVariablesNeverReachChildren(t *testing.T) {
	keys := map[string]string{
		"E2E_PROVIDER_KEY": "e2e-provider-key-1f2e3d",
		"E2E_HEADER_VAR":   "e2e-header-var-4c5b6a",
		"OPENAI_API_KEY":   "sk-e2e-openai-9a8b7c6d",
		"CODEX_API_KEY":    "e2e-codex-key-0f0e0d",
	}
	var env []string
	for k, v := range keys {
		env = append(env, k+"="+v)
	}
	env = append(env, "E2E_PLAIN=plain-value")
	tmp := t.TempDir()
	notifyOut := filepath.Join(tmp, "notify-env")
	script := filepath.Join(tmp, "notify.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nenv > \""+notifyOut+".tmp\" && mv \""+notifyOut+".tmp\" \""+notifyOut+"\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(m *mockmodel.Server, set string) string {
		return strings.Replace(mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"
notify = ["`+script+`"]
[shell_environment_policy]
ignore_default_excludes = true
`+set), "request_max_retries = 0", `request_max_retries = 0
env_key = "E2E_PROVIDER_KEY"
env_http_headers = { "X-Env" = "E2E_HEADER_VAR" }`, 1)
	}
	check := func(t *testing.T, where, out string, given map[string]string) {
		t.Helper()
		if !strings.Contains(out, "E2E_PLAIN=plain-value") {
			t.Fatalf("%s: not the command's environment:\n%s", where, out)
		}
		for name, v := range keys {
			if want, ok := given[name]; ok {
				if !strings.Contains(out, name+"="+want+"\n") {
					t.Fatalf("%s: %s=%s, given by set, is missing:\n%s", where, name, want, out)
				}
				continue
			}
			if strings.Contains(out, name+"=") || strings.Contains(out, v) {
				t.Fatalf("%s: %s reached the child:\n%s", where, name, out)
			}
		}
	}

	t.Run("hidden", func(t *testing.T) {
		m := mockmodel.New(t)
		m.Enqueue(
			mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "env"), mockmodel.Completed("resp_1", usage())),
			mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
		)
		d := Start(t, Options{ConfigTOML: config(m, ""), Env: env})
		c := d.Stdio()
		c.Initialize("e2e", nil)
		id := startThread(t, c, map[string]any{"cwd": tmp})
		runTurn(t, c, id, "show env")
		out, _ := m.Requests()[1].ToolOutput("call_1")
		check(t, "model command", out, nil)
		check(t, "notify", string(waitFile(t, notifyOut)), nil)

		c.Request("thread/shellCommand", map[string]any{"threadId": id, "command": "env"})
		msgs := collectUntil(c, isMethod("turn/completed"))
		for _, msg := range msgs {
			if msg.Method == "item/completed" {
				check(t, "thread/shellCommand", str(unmarshal(t, msg.Params), "item", "aggregatedOutput"), nil)
			}
		}
		res := unmarshal(t, WantResult(t, c.Call("command/exec", map[string]any{"command": []string{"env"}})))
		check(t, "command/exec", str(res, "stdout"), nil)
		if m.Requests()[0].Header.Get("Authorization") != "Bearer "+keys["E2E_PROVIDER_KEY"] {
			t.Fatal("the provider's key was not used")
		}
	})

	t.Run("set names it", func(t *testing.T) {
		m := mockmodel.New(t)
		m.Enqueue(
			mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "env"), mockmodel.Completed("resp_1", usage())),
			mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
		)
		given := map[string]string{"OPENAI_API_KEY": "sk-given-on-purpose-1234"}
		d := Start(t, Options{ConfigTOML: config(m, `set = { OPENAI_API_KEY = "sk-given-on-purpose-1234" }`+"\n"), Env: env})
		c := d.Stdio()
		c.Initialize("e2e", nil)
		id := startThread(t, c, map[string]any{"cwd": tmp})
		runTurn(t, c, id, "show env")
		out, _ := m.Requests()[1].ToolOutput("call_1")
		check(t, "model command", out, given)
		res := unmarshal(t, WantResult(t, c.Call("command/exec", map[string]any{"command": []string{"env"}})))
		check(t, "command/exec", str(res, "stdout"), given)
	})
}
