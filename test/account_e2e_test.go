package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The account/read answers the reference (0.169) gave in each state.
const (
	noAccountOpenAI = `{"account":null,"userId":null,"requiresOpenaiAuth":true,"workspaceRouting":null}`
	apiKeyAccount   = `{"account":{"type":"apiKey"},"userId":null,"requiresOpenaiAuth":true,"workspaceRouting":null}`
	noAccountCustom = `{"account":null,"userId":null,"requiresOpenaiAuth":false,"workspaceRouting":null}`
)

// openAIConfig points the built-in openai provider at the mock model.
func openAIConfig(m *mockmodel.Server) string {
	return "model = \"mock-model\"\n\n[model_providers.openai]\nbase_url = \"" + m.URL() + "\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
}

func wantJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if string(got) != want {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// Signing in with an API key: stored in auth.json (mode 0600, the
// reference's format), announced to every connection, used by the next
// model request without a restart; signing out removes it, and the key
// in the environment is used again. The key never reaches a log line or
// another client.
func TestAPIKeyLoginReadLogout(t *testing.T) {
	const secret = "sk-stored-SECRET-0123456789"
	m := mockmodel.New(t)
	for range 3 {
		m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok"), mockmodel.Completed("resp_1", usage())))
	}
	d := Start(t, Options{ConfigTOML: openAIConfig(m), Listen: []string{"ws://127.0.0.1:0"}, Env: []string{"OPENAI_API_KEY=sk-from-env"}})
	c := d.DialWS(WSOptions{})
	c.Initialize("e2e", nil)
	other := d.DialWS(WSOptions{})
	other.Initialize("other", nil)
	authFile := filepath.Join(d.Home, "auth.json")
	var seen [][]byte // everything clients got
	keep := func(ms ...Message) {
		for _, msg := range ms {
			seen = append(seen, msg.Raw)
		}
	}
	read := func() []byte {
		msg := c.Call("account/read", map[string]any{})
		keep(msg)
		return WantResult(t, msg)
	}

	// A key in the environment is used, but is not an account.
	wantJSON(t, "account/read with OPENAI_API_KEY set", read(), noAccountOpenAI)
	thread := startThread(t, c, nil)
	keep(runTurn(t, c, thread, "one")...)

	c.Request("account/login/start", map[string]any{"type": "apiKey", "apiKey": secret})
	msgs := collectUntil(c, isMethod("account/updated"))
	keep(msgs...)
	if got := methods(msgs); !slices.Equal(got, []string{"response", "account/login/completed", "account/updated"}) {
		t.Fatalf("login: %v", got)
	}
	wantJSON(t, "login result", msgs[0].Result, `{"type":"apiKey"}`)
	wantJSON(t, "account/login/completed", msgs[1].Params, `{"loginId":null,"success":true,"error":null,"onboardingEntrypoint":null}`)
	wantJSON(t, "account/updated", msgs[2].Params, `{"authMode":"apikey","planType":null}`)
	// Every connection is told.
	for _, method := range []string{"account/login/completed", "account/updated"} {
		msg := other.ReadUntil(isMethod(method))
		keep(msg)
	}
	st, err := os.Stat(authFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("auth.json: %v %v", st, err)
	}
	if got, want := readFile(t, authFile), "{\n  \"auth_mode\": \"apikey\",\n  \"OPENAI_API_KEY\": \""+secret+"\"\n}"; got != want {
		t.Fatalf("auth.json = %q, want %q", got, want)
	}
	wantJSON(t, "account/read after login", read(), apiKeyAccount)
	keep(runTurn(t, c, thread, "two")...)
	rl := c.Call("account/rateLimits/read", nil)
	keep(rl)
	WantError(t, rl, codeInvalidRequest, "chatgpt authentication required to read rate limits")

	c.Request("account/logout", nil)
	msgs = collectUntil(c, isMethod("account/updated"))
	keep(msgs...)
	if got := methods(msgs); !slices.Equal(got, []string{"response", "account/updated"}) {
		t.Fatalf("logout: %v", got)
	}
	wantJSON(t, "logout result", msgs[0].Result, `{}`)
	wantJSON(t, "account/updated", msgs[1].Params, `{"authMode":null,"planType":null}`)
	keep(other.ReadUntil(isMethod("account/updated")))
	if _, err := os.Stat(authFile); !os.IsNotExist(err) {
		t.Fatalf("auth.json after logout: %v", err)
	}
	wantJSON(t, "account/read after logout", read(), noAccountOpenAI)
	keep(runTurn(t, c, thread, "three")...)
	rl = c.Call("account/rateLimits/read", nil)
	keep(rl)
	WantError(t, rl, codeInvalidRequest, "codex account authentication required to read rate limits")

	var auth []string
	for _, r := range m.Requests() {
		auth = append(auth, r.Header.Get("Authorization"))
	}
	if want := []string{"Bearer sk-from-env", "Bearer " + secret, "Bearer sk-from-env"}; !slices.Equal(auth, want) {
		t.Fatalf("Authorization headers %q, want %q", auth, want)
	}
	for _, raw := range seen {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("a client was sent the key: %s", raw)
		}
	}
	if !d.HasLog(LogMsg("signed in with an API key")) {
		t.Fatal("the sign-in was not logged")
	}
	if strings.Contains(d.Stderr(), secret) {
		t.Fatal("the key is in the daemon's log")
	}
}

// account/read for each provider and key state, as the reference answers.
func TestAccountReadPerProvider(t *testing.T) {
	m := mockmodel.New(t)
	custom := func(extra string) string {
		return "model_provider = \"mock\"\n[model_providers.mock]\nbase_url = \"" + m.URL() + "\"\n" + extra
	}
	stored := `{"auth_mode":"apikey","OPENAI_API_KEY":"sk-stored"}`
	cases := []struct {
		name, config, auth, want string
		env                      []string
	}{
		{"openai, empty home", "", "", noAccountOpenAI, nil},
		{"openai, key in the environment", "", "", noAccountOpenAI, []string{"OPENAI_API_KEY=sk-env"}},
		{"openai, stored key", "", stored, apiKeyAccount, nil},
		{"openai, ChatGPT tokens", "", `{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{}}`, noAccountOpenAI, nil},
		{"custom", custom(""), "", noAccountCustom, nil},
		{"custom with a stored key", custom(""), stored, noAccountCustom, nil},
		{"custom with env_key set", custom("env_key = \"MOCK_KEY\"\n"), "", noAccountCustom, []string{"MOCK_KEY=k"}},
		{"custom requiring OpenAI auth, stored key", custom("requires_openai_auth = true\n"), stored, apiKeyAccount, nil},
		{"custom requiring OpenAI auth, no key", custom("requires_openai_auth = true\n"), "", noAccountOpenAI, nil},
		{"demo", "model_provider = \"demo\"\n", stored, noAccountCustom, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := shortTempDir(t)
			if tc.auth != "" {
				if err := os.WriteFile(filepath.Join(home, "auth.json"), []byte(tc.auth), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d := Start(t, Options{Home: home, ConfigTOML: tc.config + "\n", Env: tc.env})
			c := d.Stdio()
			c.Initialize("e2e", nil)
			wantJSON(t, "account/read", WantResult(t, c.Call("account/read", map[string]any{})), tc.want)
		})
	}
}

// Sign-ins other than an API key are refused with a text that names the
// alternative; bad params get the reference's errors; nothing is stored.
func TestLoginErrors(t *testing.T) {
	d := Start(t, Options{ConfigTOML: "\n"})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	const alt = ` sign-in; sign in with an API key (account/login/start with type "apiKey") or set OPENAI_API_KEY`
	cases := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"type": "chatgpt"}, "agentd does not support ChatGPT" + alt},
		{map[string]any{"type": "chatgptDeviceCode"}, "agentd does not support ChatGPT" + alt},
		{map[string]any{"type": "chatgptAuthTokens", "accessToken": "at", "chatgptAccountId": "acc"}, "agentd does not support ChatGPT" + alt},
		{map[string]any{"type": "amazonBedrock", "apiKey": "k", "region": "us-east-1"}, "agentd does not support Amazon Bedrock" + alt},
		{map[string]any{"type": "apiKey", "apiKey": " \n"}, "apiKey must not be empty"},
		{map[string]any{"type": "apiKey", "apiKey": "sk-a\nsk-b"}, "apiKey must not contain spaces or control characters"},
		{map[string]any{"type": "apiKey"}, "Invalid request: missing field `apiKey`"},
		{map[string]any{"type": "nope"}, "Invalid request: unknown variant `nope`, expected one of `apiKey`, `chatgpt`, `chatgptDeviceCode`, `chatgptAuthTokens`, `amazonBedrock`, `amazonBedrockAccessKeys`"},
	}
	for _, tc := range cases {
		WantError(t, c.Call("account/login/start", tc.params), codeInvalidRequest, tc.want)
	}
	WantError(t, c.Call("account/login/cancel", map[string]any{"loginId": "nope"}), codeInvalidRequest, "invalid login id: nope")
	wantJSON(t, "account/login/cancel", WantResult(t, c.Call("account/login/cancel", map[string]any{"loginId": "01a22982-4e6d-7951-b9df-a075c7026089"})), `{"status":"notFound"}`)
	if _, err := os.Stat(filepath.Join(d.Home, "auth.json")); !os.IsNotExist(err) {
		t.Fatalf("auth.json: %v", err)
	}
	c.AssertNoMessage()

	// A key that cannot be stored: an internal error that names the
	// file, not the key, and no notification.
	const secret = "sk-unstorable-SECRET"
	if err := os.Mkdir(filepath.Join(d.Home, "auth.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := c.Call("account/login/start", map[string]any{"type": "apiKey", "apiKey": secret})
	if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, "auth.json") || strings.Contains(string(m.Raw), secret) {
		t.Fatalf("unstorable key: %s", m.Raw)
	}
	c.AssertNoMessage()
	d.CloseStdin()
	d.Wait()
	if strings.Contains(d.Stderr(), secret) {
		t.Fatal("the key is in the daemon's log")
	}
}

// account/rateLimits/updated follows the token usage of every model
// response: filled from the provider's x-codex-* headers, an empty
// snapshot of the "codex" bucket without them.
func TestRateLimitsAfterTokenUsage(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok"), mockmodel.Completed("resp_1", usage())).
			WithHeader("x-codex-primary-used-percent", "12.5").
			WithHeader("x-codex-primary-window-minutes", "300").
			WithHeader("x-codex-primary-reset-at", "1704069000").
			WithHeader("x-codex-secondary-used-percent", "80.6").
			WithHeader("x-codex-secondary-window-minutes", "10080").
			WithHeader("x-codex-credits-has-credits", "true").
			WithHeader("x-codex-credits-unlimited", "false").
			WithHeader("x-codex-credits-balance", "42.5"),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "ok"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	thread := startThread(t, c, nil)
	want := []string{
		`{"rateLimits":{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":{"usedPercent":13,"windowDurationMins":300,"resetsAt":1704069000},"secondary":{"usedPercent":81,"windowDurationMins":10080,"resetsAt":null},"credits":{"hasCredits":true,"unlimited":false,"balance":"42.5"},"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}}`,
		`{"rateLimits":{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":null,"secondary":null,"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}}`,
	}
	for i, w := range want {
		msgs := runTurn(t, c, thread, "hi")
		got := methods(msgs)
		at := slices.Index(got, "account/rateLimits/updated")
		if at < 1 || got[at-1] != "thread/tokenUsage/updated" || !slices.Equal(got[at+1:], []string{"thread/status/changed", "turn/completed"}) {
			t.Fatalf("turn %d: %v", i+1, got)
		}
		wantJSON(t, "account/rateLimits/updated", msgs[at].Params, w)
	}
}

// account/rateLimits/read answers with what the provider's rate-limit
// headers last said, where it sends them (an agentd extension: the
// reference reads ChatGPT's usage endpoint); before any response carried
// them it is the reference's error. A response without the headers
// leaves the snapshot as it was; each bucket keeps its last snapshot in
// rateLimitsByLimitId.
func TestRateLimitsReadFollowsTheHeaders(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok"), mockmodel.Completed("resp_1", usage())).
			WithHeader("x-codex-primary-used-percent", "12.5").
			WithHeader("x-codex-primary-window-minutes", "300").
			WithHeader("x-codex-primary-reset-at", "1704069000"),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "ok"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "ok"), mockmodel.Completed("resp_3", usage())).
			WithHeader("x-codex-other-primary-used-percent", "70").
			WithHeader("x-codex-other-limit-name", "other"),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	WantError(t, c.Call("account/rateLimits/read", nil), codeInvalidRequest, "codex account authentication required to read rate limits")
	thread := startThread(t, c, nil)
	codex := `{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":{"usedPercent":13,"windowDurationMins":300,"resetsAt":1704069000},"secondary":null,"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}`
	other := `{"limitId":"codex_other","limitName":"other","normalModelSlug":null,"primary":{"usedPercent":70,"windowDurationMins":null,"resetsAt":null},"secondary":null,"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}`
	runTurn(t, c, thread, "one")
	wantJSON(t, "after headers", WantResult(t, c.Call("account/rateLimits/read", nil)), `{"rateLimits":`+codex+`,"rateLimitsByLimitId":{"codex":`+codex+`}}`)
	runTurn(t, c, thread, "two")
	wantJSON(t, "after a response without them", WantResult(t, c.Call("account/rateLimits/read", nil)), `{"rateLimits":`+codex+`,"rateLimitsByLimitId":{"codex":`+codex+`}}`)
	runTurn(t, c, thread, "three")
	wantJSON(t, "after another bucket's", WantResult(t, c.Call("account/rateLimits/read", nil)),
		`{"rateLimits":`+other+`,"rateLimitsByLimitId":{"codex":`+codex+`,"codex_other":`+other+`}}`)
}
