package test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

func TestHandshake(t *testing.T) {
	d := Start(t, Options{TestHooks: true})
	c := d.Stdio()

	WantError(t, c.Call("test/sleep", map[string]any{"ms": 0}), codeInvalidRequest, "Not initialized")
	WantError(t, c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": "bad\rname", "version": "1"}}),
		codeInvalidRequest, "Invalid clientInfo.name: 'bad\rname'. Must be a valid HTTP header value.")

	m := c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": "acceptance", "title": "Acceptance", "version": "0.0.1"}})
	var res struct {
		UserAgent, CodexHome, PlatformFamily, PlatformOs string
	}
	if err := json.Unmarshal(WantResult(t, m), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.UserAgent, "acceptance/0.") || !strings.HasSuffix(res.UserAgent, "(acceptance; 0.0.1)") {
		t.Errorf("userAgent %q", res.UserAgent)
	}
	if res.CodexHome != d.Home || res.PlatformFamily != "unix" || res.PlatformOs != runtime.GOOS {
		t.Errorf("result %+v, home %s", res, d.Home)
	}

	// Served between the initialize result and the initialized
	// notification, as the reference does.
	if m := c.Call("test/sleep", map[string]any{"ms": 0}); m.Error != nil {
		t.Fatalf("before initialized: %s", m.Raw)
	}
	c.Notify("initialized", nil)
	WantError(t, c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": "x", "version": "1"}}),
		codeInvalidRequest, "Already initialized")

	m = c.Call("foo/bar", map[string]any{})
	WantError(t, m, codeInvalidRequest, "")
	if !strings.HasPrefix(m.Error.Message, "Invalid request: unknown variant `foo/bar`, expected one of `initialize`, `server/diagnostics`, ") {
		t.Errorf("unknown method: %q", m.Error.Message)
	}
	// Unknown notifications are ignored; so are answers to server
	// requests that do not exist.
	c.Notify("foo/notify", map[string]any{})
	c.Send(map[string]any{"id": 12345, "result": map[string]any{}})
	c.AssertNoMessage()
}

func TestRequestIDsKeepTheirType(t *testing.T) {
	d := Start(t, Options{TestHooks: true})
	c := d.Stdio()
	c.Initialize("ids", nil)
	for _, id := range []string{`"init-1"`, `7`, `0`, `-3`, `"42"`, `9007199254740993`} {
		c.SendRaw([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"test/sleep","params":{"ms":0}}` + "\n"))
		m := c.Next()
		if string(m.ID) != id || m.Error != nil {
			t.Errorf("sent id %s, got %s", id, m.Raw)
		}
	}
	// "id": null is not answered (the reference treats it as a
	// notification).
	c.SendRaw([]byte(`{"id":null,"method":"test/sleep","params":{"ms":0}}` + "\n"))
	c.AssertNoMessage()
}

func TestExperimentalGating(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}})
	plain := d.DialWS(WSOptions{})
	plain.Initialize("plain", nil)
	exp := d.DialWS(WSOptions{})
	exp.Initialize("exp", map[string]any{"experimentalApi": true})

	WantError(t, plain.Call("thread/start", map[string]any{"experimentalRawEvents": true}),
		codeInvalidRequest, "thread/start.experimentalRawEvents requires experimentalApi capability")
	WantError(t, plain.Call("thread/start", map[string]any{"approvalPolicy": map[string]any{"granular": map[string]any{"mcp_elicitations": true, "rules": true, "sandbox_approval": true}}}),
		codeInvalidRequest, "askForApproval.granular requires experimentalApi capability")
	WantError(t, plain.Call("collaborationMode/list", map[string]any{}),
		codeInvalidRequest, "collaborationMode/list requires experimentalApi capability")
	WantError(t, plain.Call("thread/items/list", map[string]any{"threadId": "0190e6b1-0000-7000-8000-000000000000", "deferOutput": map[string]any{"mcpToolCall": true}}),
		codeInvalidRequest, "thread/items/list.deferOutput.mcpToolCall requires experimentalApi capability")
	WantError(t, plain.Call("thread/start", map[string]any{"dynamicTools": []any{}}),
		codeInvalidRequest, "thread/start.dynamicTools requires experimentalApi capability")
	// Decoding comes before gating, as in the reference.
	WantError(t, plain.Call("thread/start", map[string]any{"cwd": 123, "experimentalRawEvents": true}),
		codeInvalidRequest, "Invalid request: invalid type: integer `123`, expected a string")

	for _, m := range []Message{
		exp.Call("thread/start", map[string]any{"experimentalRawEvents": true}),
		exp.Call("collaborationMode/list", map[string]any{}),
		// A gated field that holds its default does not count: null, or
		// false for a boolean (what SDKs send by default).
		plain.Call("thread/start", map[string]any{"experimentalRawEvents": nil}),
		plain.Call("thread/start", map[string]any{"experimentalRawEvents": false}),
		plain.Call("thread/items/list", map[string]any{"threadId": "0190e6b1-0000-7000-8000-000000000000", "deferOutput": map[string]any{"mcpToolCall": false}}),
	} {
		if m.Error != nil && strings.Contains(m.Error.Message, "requires experimentalApi") {
			t.Errorf("refused: %s", m.Raw)
		}
	}
}

// collaborationMode/list answers the reference's presets (0.169,
// observed), in its order and with every field present: Plan (medium
// reasoning effort), then Default; no model of their own.
func TestCollaborationModeListPresets(t *testing.T) {
	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("exp", map[string]any{"experimentalApi": true})
	res := WantResult(t, c.Call("collaborationMode/list", map[string]any{}))
	const want = `{"data":[{"name":"Plan","mode":"plan","model":null,"reasoning_effort":"medium"},` +
		`{"name":"Default","mode":"default","model":null,"reasoning_effort":null}]}`
	if string(res) != want {
		t.Fatalf("collaborationMode/list = %s\nwant %s", res, want)
	}
}

func TestOptOutIsPerConnection(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, TestHooks: true})
	quiet := d.DialWS(WSOptions{})
	quiet.Initialize("quiet", map[string]any{"optOutNotificationMethods": []string{"x/noisy", "no/such/method"}})
	loud := d.DialWS(WSOptions{})
	loud.Initialize("loud", nil)

	for _, c := range []*Client{quiet, loud} {
		WantResult(t, c.Call("test/emit", map[string]any{"method": "x/noisy", "params": map[string]int{"n": 1}, "broadcast": true}))
	}
	WantResult(t, loud.Call("test/emit", map[string]any{"method": "x/kept", "params": map[string]int{"n": 2}, "broadcast": true}))

	if m := quiet.ReadUntil(func(m Message) bool { return m.IsNotification() }); m.Method != "x/kept" {
		t.Fatalf("quiet got %s", m.Raw)
	}
	noisy := 0
	for noisy < 2 {
		m := loud.ReadUntil(func(m Message) bool { return m.IsNotification() })
		if m.Method == "x/noisy" {
			noisy++
		}
	}
	quiet.AssertNoMessage()
}

func TestConfigWarningAfterInitialize(t *testing.T) {
	d := Start(t, Options{ConfigTOML: "model = \"m\"\nno_such_key = 1\n[otel]\nx = 1\n"})
	if !d.HasLog(LogMsg("config warning")) {
		t.Errorf("warning not logged")
	}
	c := d.Stdio()
	id := c.Request("initialize", map[string]any{"clientInfo": map[string]any{"name": "w", "version": "1"}})
	if m := c.Next(); string(m.ID) != string(id) {
		t.Fatalf("first message %s, want the initialize result", m.Raw)
	}
	m := c.Next()
	var p struct {
		Summary string  `json:"summary"`
		Details *string `json:"details"`
	}
	if m.Method != "configWarning" || json.Unmarshal(m.Params, &p) != nil ||
		!strings.Contains(p.Summary, "`no_such_key`") || !strings.Contains(p.Summary, "`otel`") {
		t.Fatalf("got %s", m.Raw)
	}
}

func TestStartupErrors(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"listen url", Options{Listen: []string{"tcp://1.2.3.4:5"}}, "unsupported listen URL"},
		{"config type", Options{ConfigTOML: "model = 5\n"}, "`model`"},
		{"config value", Options{Config: []string{"approval_policy=sometimes"}}, "`approval_policy`"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.NoWait = true
			d := Start(t, tc.o)
			if code := d.Wait(); code != 1 {
				t.Fatalf("exit code %d", code)
			}
			if !strings.Contains(d.Stderr(), tc.want) {
				t.Fatalf("stderr lacks %q:\n%s", tc.want, d.Stderr())
			}
		})
	}
}

// CODEX_INTERNAL_ORIGINATOR_OVERRIDE in the daemon's environment names
// every client, as in the reference: at the head of userAgent (the
// client's own name and version stay at its end), as the originator of
// the threads it starts, and in the model requests' originator header
// and User-Agent.
func TestOriginatorOverride(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hi"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, ""), Env: []string{"CODEX_INTERNAL_ORIGINATOR_OVERRIDE=my_origin"}})
	c := d.Stdio()
	var res struct{ UserAgent string }
	if err := json.Unmarshal(WantResult(t, c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": "client_x", "version": "1.2.3"}})), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.UserAgent, "my_origin/") || !strings.HasSuffix(res.UserAgent, "(client_x; 1.2.3)") {
		t.Errorf("userAgent %q", res.UserAgent)
	}
	c.Notify("initialized", nil)
	th := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": t.TempDir()})))
	if o := str(th, "thread", "originator"); o != "my_origin" {
		t.Errorf("thread originator %q", o)
	}
	runTurn(t, c, str(th, "thread", "id"), "hi")
	h := m.Requests()[0].Header
	if h.Get("originator") != "my_origin" || h.Get("User-Agent") != res.UserAgent {
		t.Errorf("model request originator %q, User-Agent %q", h.Get("originator"), h.Get("User-Agent"))
	}
}
