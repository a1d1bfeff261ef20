package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

const (
	confHello = "Hello from the mock model."
	// confStreamCmd prints over about a second, to stderr too, and fails.
	confStreamCmd = "for i in 1 2 3; do echo line$i; sleep 0.3; done; echo err >&2; exit 3"
	confAddHello  = "*** Begin Patch\n*** Add File: hello.txt\n+hello world\n*** End Patch\n"
	confBody400   = `{"error": {"message": "mock bad request: invalid model parameter", "type": "invalid_request_error", "param": null, "code": "invalid_value"}}`
	confBody500   = `{"error": {"message": "mock internal error", "type": "server_error"}}`
	// confAskedEcho is the reference's echo in a form agentd's policy asks
	// for under untrusted (see the deviations table).
	confAskedEcho = "echo hello-from-shell | tee hello.txt"
)

// confUsage is what the recording mock reported for every response.
var confUsage = mockmodel.Usage{Input: 10, Output: 5}

// confReply is a complete response with the recording mock's usage.
func confReply(respID string, parts ...mockmodel.Events) mockmodel.Response {
	all := append([]mockmodel.Events{mockmodel.Created(respID)}, parts...)
	return mockmodel.SSE(append(all, mockmodel.Completed(respID, confUsage))...)
}

// confText is the recording mock's plain answer.
func confText(respID string) mockmodel.Response {
	return confReply(respID, mockmodel.Text("msg_"+respID, confHello))
}

// confTicks is a message streamed slowly by the recording mock; here it
// stalls after its first delta until agentd hangs up.
func confTicks(respID string) mockmodel.Response {
	var s strings.Builder
	for i := range 12 {
		fmt.Fprintf(&s, "tick%d ", i)
	}
	return mockmodel.SSE(mockmodel.Created(respID), mockmodel.TextN("msg_"+respID, s.String(), 12)).StallAfter(3)
}

// confScenario is one reference transcript and the model replies that
// reproduce it.
type confScenario struct {
	name string
	// file is the transcript; untilNote cuts it at a recorder's note;
	// fromNote, when set, skips what lies between the thread's start and
	// that note.
	file, fromNote, untilNote string
	// model returns the scripted replies; hooks, when set, sees agentd's
	// events (to open gates).
	model       func() ([]mockmodel.Response, func(wireEvent))
	allowUnused bool
}

// confScript is a fixed script without hooks.
func confScript(rs ...mockmodel.Response) func() ([]mockmodel.Response, func(wireEvent)) {
	return func() ([]mockmodel.Response, func(wireEvent)) { return rs, nil }
}

var confScenarios = []confScenario{
	{name: "text-turn", model: confScript(confText("resp_1"))},
	{name: "reasoning-turn", model: confScript(confReply("resp_1",
		mockmodel.Reasoning("rs_resp_1", []string{"**Thinking** about hello", "second part"}, "raw reasoning"),
		mockmodel.Text("msg_resp_1", confHello)))},
	{name: "shell-approval-turn", model: confScript(confReply("resp_1", mockmodel.ExecCommand("call_1", confAskedEcho)), confText("resp_2"))},
	{name: "shell-decline-turn", model: confScript(confReply("resp_1", mockmodel.ExecCommand("call_1", confStreamCmd)), confText("resp_2"))},
	{name: "shell-noapproval-turn", model: confScript(confReply("resp_1", mockmodel.ExecCommand("call_1", confStreamCmd)), confText("resp_2"))},
	{name: "shell-stream-turn", model: confScript(confReply("resp_1", mockmodel.ExecCommand("call_1", confStreamCmd)), confText("resp_2"))},
	{name: "patch-turn", model: confScript(confReply("resp_1", mockmodel.ApplyPatch("call_1", confAddHello)), confText("resp_2"))},
	{name: "patch-auto-turn", model: confScript(confReply("resp_1", mockmodel.ApplyPatch("call_1", confAddHello)), confText("resp_2"))},
	{name: "patch-decline-turn", model: confScript(confReply("resp_1", mockmodel.ApplyPatch("call_1", confAddHello)), confText("resp_2"))},
	{name: "interrupt-turn", model: confScript(confTicks("resp_1"))},
	{name: "interrupt-pending-approval", model: confScript(confReply("resp_1", mockmodel.ExecCommand("call_1", confAskedEcho)))},
	{name: "failed-400-turn", model: confScript(mockmodel.Status(400, confBody400))},
	// request_max_retries = stream_max_retries = 1: two attempts of two
	// requests each.
	{name: "failed-500-turn", model: confScript(mockmodel.Status(500, confBody500), mockmodel.Status(500, confBody500), mockmodel.Status(500, confBody500), mockmodel.Status(500, confBody500))},
	{name: "failed-event-turn", model: confScript(
		mockmodel.SSE(mockmodel.Created("resp_1"), mockmodel.Failed("resp_1", "server_error", "mock response.failed event")),
		mockmodel.SSE(mockmodel.Created("resp_2"), mockmodel.Failed("resp_2", "server_error", "mock response.failed event")))},
	{name: "failed-then-ok", model: confScript(mockmodel.Status(400, confBody400), confText("resp_2"))},
	{name: "steer", file: "threadops.jsonl", untilNote: "shellCommand (no active turn)", model: confSteerModel, allowUnused: true},
	// A custom review whose reviewer answers in plain text, then a
	// detached review (refused by the reference; agentd's is refused for
	// its target, the thread's directory being no repository); the
	// thread's earlier turns are skipped.
	{name: "review", file: "threadops.jsonl", fromNote: "review", model: confScript(confText("resp_1"))},
	{name: "dynamic-tool-turn", model: confScript(confReply("resp_1", mockmodel.FunctionCall("call_1", "lookup_ticket", `{"id":"ABC-123"}`)), confText("resp_2"))},
	{name: "user-input-turn", model: confScript(confReply("resp_1", mockmodel.FunctionCall("call_1", "request_user_input",
		`{"questions":[{"id":"color_choice","header":"Color","question":"Which color?","options":[{"label":"Red (Recommended)","description":"Warm"},{"label":"Blue","description":"Cool"}]}]}`)), confText("resp_2"))},
	// The recording mock's plan-mode answer, cut in its deltas.
	{name: "plan-mode-turn", model: confScript(confReply("resp_1",
		mockmodel.TextN("msg_resp_1", mockmodel.ProposedPlan("Here is my plan.", "# Plan\n- step one\n- step two\n"), 7)))},
	{name: "plan-tool-turn", model: confScript(confReply("resp_1", mockmodel.FunctionCall("call_1", "update_plan",
		`{"explanation":"mock plan","plan":[{"step":"first step","status":"in_progress"},{"step":"second step","status":"pending"}]}`)), confText("resp_2"))},
}

// confSteerModel scripts threadops' first two turns: a text turn, then a
// stalled stream that the steer abandons. The steer and the turn/start
// that arrives while the turn runs may reach the core together (one
// follow-up request) or apart (the second abandons a follow-up held at
// its headers until turn/start is answered); both give the reference's
// events, hence allowUnused.
func confSteerModel() ([]mockmodel.Response, func(wireEvent)) {
	g := mockmodel.NewGate()
	hook := func(e wireEvent) {
		if e.Trigger == "response 7" {
			g.Open()
		}
	}
	return []mockmodel.Response{confText("resp_1"), confTicks("resp_2"), confText("resp_3").HoldHeaders(g), confText("resp_4")}, hook
}

// confConfig writes the config.toml the reference run used: its model,
// approval policy and sandbox (from the thread/start result), the mock
// provider, and the stream retries its "Reconnecting... n/m" errors show.
func confConfig(t *testing.T, recs []refRecord, baseURL string) string {
	t.Helper()
	_, res, err := refThreadStart(recs)
	if err != nil {
		t.Fatal(err)
	}
	model, _ := res["model"].(string)
	approval, _ := res["approvalPolicy"].(string)
	sandbox := map[string]string{"readOnly": "read-only", "workspaceWrite": "workspace-write", "dangerFullAccess": "danger-full-access"}[confStringAt(res, "sandbox", "type")]
	if model == "" || approval == "" || sandbox == "" {
		t.Fatalf("cannot read model, approvalPolicy and sandbox from the reference thread/start result %v", res)
	}
	streamRetries := 0
	for _, r := range recs {
		var n, m int
		if r.FromServer && r.method() == "error" {
			if _, err := fmt.Sscanf(jsonString(jsonMember(r.Msg["params"], "error"), "message"), "Reconnecting... %d/%d", &n, &m); err == nil {
				streamRetries = max(streamRetries, m)
			}
		}
	}
	return fmt.Sprintf(`model = %q
model_provider = "mock"
approval_policy = %q
sandbox_mode = %q

[model_providers.mock]
name = "mock"
base_url = %q
wire_api = "responses"
requires_openai_auth = false
request_max_retries = 1
stream_max_retries = %d
`, model, approval, sandbox, baseURL, streamRetries)
}

func confStringAt(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

// TestConformance replays reference transcripts against agentd: the same
// client messages, each sent once agentd has sent what preceded it in the
// reference, and equivalent scripted model replies. It compares what
// agentd sends with what the reference sent (conformance_normalize.go says
// what is compared and what is dropped), minus the deliberate deviations
// (conformance_deviations_test.go), and validates every message against
// the reference schema. Each scenario runs its own daemon and mock.
func TestConformance(t *testing.T) {
	for _, sc := range confScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			file := sc.file
			if file == "" {
				file = sc.name + ".jsonl"
			}
			recs := loadTranscript(t, file, sc.fromNote, sc.untilNote)
			var opts []mockmodel.Option
			if sc.allowUnused {
				opts = append(opts, mockmodel.AllowUnused())
			}
			mock := mockmodel.New(t, opts...)
			resps, hook := sc.model()
			mock.Enqueue(resps...)
			params, _, err := refThreadStart(recs)
			if err != nil {
				t.Fatal(err)
			}
			refCwd, _ := params["cwd"].(string)
			home := shortTempDir(t)
			cwd := filepath.Join(home, "work")
			if err := os.Mkdir(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
			// HOME is the test's: a login shell must not run the
			// machine's profile (its errors in a read-only sandbox look
			// like sandbox denials).
			d := Start(t, Options{Home: home, ConfigTOML: confConfig(t, recs, mock.URL()), Env: []string{"HOME=" + home}})
			r := newReplay(t, d.Stdio(), recs, refCwd, cwd)
			r.onEvent = hook
			r.run(recs)
			for _, p := range r.problems {
				t.Error(p)
			}

			refEvents, refFloating := takeFloating(r.ref.events, floating[sc.name])
			gotEvents, gotFloating := takeFloating(r.got, floating[sc.name])
			if a, b := eventLines(refFloating), eventLines(gotFloating); !slices.Equal(a, b) {
				t.Errorf("responses compared apart differ (- reference, + agentd):\n%s", lineDiff(a, b))
			}
			// Each run has a directory of its own: a message that names
			// it is compared with <cwd> in its place.
			want, got := withCwd(eventLines(refEvents), refCwd), withCwd(eventLines(gotEvents), cwd)
			for _, dev := range scenarioDeviations(sc.name) {
				if dev.apply == nil {
					continue
				}
				var ok bool
				if want, ok = dev.apply(want); !ok {
					t.Errorf("deviation %q no longer matches the reference's messages", dev.what)
				}
			}
			if !slices.Equal(want, got) {
				t.Errorf("agentd differs from the reference (- reference with the deliberate deviations, + agentd):\n%s", lineDiff(want, got))
			}
			if t.Failed() && os.Getenv("AGENTD_CONFORMANCE_DUMP") != "" {
				for _, m := range r.raw {
					t.Logf("agentd: %s", m.Raw)
				}
			}
		})
	}
}
