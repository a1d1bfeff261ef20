package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// reviewRepo makes a git repository in a temporary directory: main with
// one commit (a.txt), branch feature with a second commit, then an
// uncommitted change to a.txt and an untracked new.txt. It returns the
// directory and the second commit's id.
func reviewRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	home := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write("a.txt", "one\n")
	git("add", ".")
	git("commit", "-q", "-m", "first")
	git("checkout", "-q", "-b", "feature")
	write("a.txt", "one\ntwo\n")
	git("commit", "-q", "-am", "second change")
	sha := git("rev-parse", "HEAD")
	write("a.txt", "one\ntwo\nthree\n")
	write("new.txt", "brand new\n")
	return dir, sha
}

// reviewJSON is a reviewer's answer with one finding on a.txt.
func reviewJSON(dir, title string) string {
	return fmt.Sprintf(`{"findings":[{"title":%q,"body":"It breaks.","confidence_score":0.8,"priority":1,`+
		`"code_location":{"absolute_file_path":%q,"line_range":{"start":2,"end":3}}}],`+
		`"overall_correctness":"patch is incorrect","overall_explanation":"One bug.","overall_confidence_score":0.7}`,
		title, filepath.Join(dir, "a.txt"))
}

// reviewFlow is the order of a review turn's messages, as the reference
// sends them (threadops transcript), without the account and token
// notices, which come after each model response.
var reviewFlow = []string{
	"response",
	"item/started enteredReviewMode", "item/completed enteredReviewMode",
	"thread/status/changed", "turn/started",
	"item/started userMessage", "item/completed userMessage",
	"item/started exitedReviewMode", "item/completed exitedReviewMode",
	"item/started agentMessage", "item/completed agentMessage",
	"thread/status/changed", "turn/completed",
}

// flow names the messages of a turn in order: "response", or the method
// with the item type for item notifications; account and token notices
// are left out.
func flow(t *testing.T, msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		switch {
		case m.Method == "":
			out = append(out, "response")
		case m.Method == "account/rateLimits/updated" || m.Method == "thread/tokenUsage/updated":
		case strings.HasPrefix(m.Method, "item/started") || strings.HasPrefix(m.Method, "item/completed"):
			out = append(out, m.Method+" "+str(unmarshal(t, m.Params), "item", "type"))
		default:
			out = append(out, m.Method)
		}
	}
	return out
}

// runReview sends review/start with params and reads up to
// turn/completed; every message is checked against the reference schema.
func runReview(t *testing.T, c *Client, params map[string]any) []Message {
	t.Helper()
	c.Request("review/start", params)
	msgs := collectUntil(c, isMethod("turn/completed"))
	for _, m := range msgs {
		if m.Method == "" {
			validResult(t, "review/start", m, nil)
		} else {
			validNotification(t, m)
		}
	}
	return msgs
}

// item returns the item of the first item/completed of that type.
func completedItem(t *testing.T, msgs []Message, typ string) map[string]any {
	t.Helper()
	for _, m := range msgs {
		if m.Method == "item/completed" {
			if p := unmarshal(t, m.Params); str(p, "item", "type") == typ {
				return path(p, "item").(map[string]any)
			}
		}
	}
	t.Fatalf("no completed %s item in %v", typ, flow(t, msgs))
	return nil
}

// A review of each target on a real repository: the reference's message
// order, the reviewer's request (a sub-agent's, with the diff of the
// target and the review model), the structured review rendered, and the
// thread's next turn knowing the review.
func TestReviewTargets(t *testing.T) {
	dir, sha := reviewRepo(t)
	plain := t.TempDir()
	m := mockmodel.New(t)
	rendered := "One bug.\n\nReview comment:\n\n- [P1] Bad thing — " + filepath.Join(dir, "a.txt") + ":2-3\n  It breaks."
	cases := []struct {
		name   string
		cwd    string
		target map[string]any
		hint   string
		// in and out are what the reviewer's task must and must not
		// hold; answer is its reply, review the review's text.
		in, out        []string
		answer, review string
	}{
		{"uncommitted", dir, map[string]any{"type": "uncommittedChanges"}, "current changes",
			[]string{"+three", "+brand new", "untracked"}, []string{"+two"}, reviewJSON(dir, "[P1] Bad thing"), rendered},
		{"base branch", dir, map[string]any{"type": "baseBranch", "branch": "main"}, "changes against 'main'",
			[]string{"+two", "+three", "'main'"}, nil, reviewJSON(dir, "[P1] Bad thing"), rendered},
		{"commit", dir, map[string]any{"type": "commit", "sha": sha, "title": "second change"}, "commit " + sha[:7] + ": second change",
			[]string{"+two", sha, "second change"}, []string{"+three"}, "```json\n" + reviewJSON(dir, "[P1] Bad thing") + "\n```", rendered},
		{"custom, outside any repository, plain answer", plain, map[string]any{"type": "custom", "instructions": "look at the build"}, "look at the build",
			[]string{"look at the build"}, []string{"```diff"}, "Nothing to report.", "Nothing to report."},
	}
	for i, c := range cases {
		m.Enqueue(mockmodel.Reply(fmt.Sprintf("resp_r%d", i), mockmodel.Text(fmt.Sprintf("msg_r%d", i), c.answer), mockmodel.Completed(fmt.Sprintf("resp_r%d", i), usage())))
	}
	m.Enqueue(mockmodel.Reply("resp_after", mockmodel.Text("msg_after", "on it"), mockmodel.Completed("resp_after", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, `review_model = "review-model"`)})
	cl := d.Stdio()
	cl.Initialize("e2e", nil)

	var lastThread string
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := startThread(t, cl, map[string]any{"cwd": c.cwd})
			lastThread = id
			msgs := runReview(t, cl, map[string]any{"threadId": id, "target": c.target})
			if got := flow(t, msgs); !slices.Equal(got, reviewFlow) {
				t.Fatalf("messages:\n%v\nwant\n%v", got, reviewFlow)
			}
			// The reviewer's usage is its own conversation's, not the
			// thread's context.
			if slices.ContainsFunc(msgs, func(m Message) bool { return m.Method == "thread/tokenUsage/updated" }) {
				t.Fatalf("the reviewer's token usage was reported as the thread's: %v", methods(msgs))
			}
			res := unmarshal(t, msgs[0].Result)
			turnID := str(res, "turn", "id")
			if str(res, "reviewThreadId") != id || path(res, "turn", "rootTurnId") != nil || str(res, "turn", "status") != "inProgress" ||
				str(res, "turn", "items", 0, "id") != turnID || str(res, "turn", "items", 0, "content", 0, "text") != c.hint {
				t.Fatalf("result %s", msgs[0].Result)
			}
			for _, msg := range msgs[1:] {
				p := unmarshal(t, msg.Params)
				if tid := str(p, "turnId"); tid != "" && tid != turnID {
					t.Fatalf("%s names turn %s, not %s", msg.Method, tid, turnID)
				}
				if msg.Method == "turn/started" || msg.Method == "turn/completed" {
					if str(p, "turn", "id") != turnID {
						t.Fatalf("%s: %s", msg.Method, msg.Raw)
					}
				}
			}
			if got := str(completedItem(t, msgs, "enteredReviewMode"), "review"); got != c.hint {
				t.Fatalf("enteredReviewMode %q, want %q", got, c.hint)
			}
			if got := str(completedItem(t, msgs, "exitedReviewMode"), "review"); got != c.review {
				t.Fatalf("exitedReviewMode %q, want %q", got, c.review)
			}
			if got := str(completedItem(t, msgs, "agentMessage"), "text"); got != c.review {
				t.Fatalf("agentMessage %q", got)
			}
			last := unmarshal(t, msgs[len(msgs)-1].Params)
			if str(last, "turn", "status") != "completed" || str(last, "turn", "items", 0, "text") != c.review {
				t.Fatalf("turn/completed %s", msgs[len(msgs)-1].Raw)
			}

			req := m.Requests()[i]
			h := req.Header
			if h.Get("x-openai-subagent") != "review" || h.Get("x-codex-parent-thread-id") != id || h.Get("session-id") != id ||
				h.Get("thread-id") == "" || h.Get("thread-id") == id {
				t.Fatalf("reviewer headers %v", h)
			}
			if req.Model() != "review-model" || slices.Contains(req.ToolNames(), "update_plan") {
				t.Fatalf("reviewer request: model %q, tools %v", req.Model(), req.ToolNames())
			}
			dev := strings.Join(req.MessageTexts("developer"), "\n")
			task := req.LastUserText()
			if !strings.Contains(dev, `"overall_correctness"`) || !strings.Contains(dev, `"absolute_file_path"`) {
				t.Fatalf("reviewer instructions %q", dev)
			}
			for _, s := range c.in {
				if !strings.Contains(task, s) {
					t.Errorf("the reviewer's task lacks %q:\n%s", s, task)
				}
			}
			for _, s := range c.out {
				if strings.Contains(task, s) {
					t.Errorf("the reviewer's task holds %q:\n%s", s, task)
				}
			}
		})
	}
	if t.Failed() {
		return
	}

	// The thread's own next turn: its usual request (no sub-agent), whose
	// history has the review, not the reviewer's conversation.
	runTurn(t, cl, lastThread, "fix it")
	reqs := m.Requests()
	next := reqs[len(reqs)-1]
	users := strings.Join(next.MessageTexts("user"), "\n")
	assistant := strings.Join(next.MessageTexts("assistant"), "\n")
	if next.Header.Get("x-openai-subagent") != "" || next.Model() != "mock-model" || !strings.Contains(users, "Nothing to report.") ||
		!strings.Contains(users, "look at the build") || !strings.Contains(assistant, "Nothing to report.") ||
		strings.Contains(strings.Join(next.MessageTexts("developer"), "\n"), `"overall_correctness"`) {
		t.Fatalf("next turn: headers %v, users %q, assistant %q", next.Header, users, assistant)
	}

	// The review is in the thread's record: read back, the turn has the
	// same items.
	read := unmarshal(t, WantResult(t, cl.Call("thread/read", map[string]any{"threadId": lastThread, "includeTurns": true})))
	var types []string
	for _, it := range path(read, "thread", "turns", 0, "items").([]any) {
		types = append(types, str(it, "type"))
	}
	if want := []string{"enteredReviewMode", "userMessage", "exitedReviewMode", "agentMessage"}; !slices.Equal(types, want) {
		t.Fatalf("review turn read back: %v, want %v", types, want)
	}
	if str(read, "thread", "turns", 0, "items", 0, "review") != "look at the build" ||
		str(read, "thread", "turns", 0, "items", 2, "review") != "Nothing to report." {
		t.Fatalf("review items read back: %v", path(read, "thread", "turns", 0))
	}
}

// A review turn takes no input: turn/steer and turn/start are refused
// with the reference's errors, and the review goes on to its end.
func TestReviewNotSteerable(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	g := mockmodel.NewGate()
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", `{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Fine.","overall_confidence_score":0.9}`),
		mockmodel.Completed("resp_1", usage())).GateAfter(1, g))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": dir})
	res := unmarshal(t, WantResult(t, c.Call("review/start", map[string]any{"threadId": id, "target": map[string]any{"type": "uncommittedChanges"}})))
	turnID := str(res, "turn", "id")
	<-g.Reached()

	steer := c.Call("turn/steer", map[string]any{"threadId": id, "expectedTurnId": turnID, "input": textInput("hey")})
	WantError(t, steer, codeInvalidRequest, "cannot steer a review turn")
	var data any
	if err := json.Unmarshal(steer.Error.Data, &data); err != nil {
		t.Fatal(err)
	}
	if str(data, "codexErrorInfo", "activeTurnNotSteerable", "turnKind") != "review" || str(data, "message") != "cannot steer a review turn" {
		t.Fatalf("steer error data %s", steer.Error.Data)
	}
	WantError(t, c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hey")}), -32603,
		"failed to submit turn input: ActiveTurnNotSteerable { turn_kind: Review }")

	g.Open()
	end := unmarshal(t, c.ReadUntil(isMethod("turn/completed")).Params)
	if str(end, "turn", "status") != "completed" || str(end, "turn", "items", 0, "text") != "Fine." {
		t.Fatalf("review end %v", end)
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d model requests: the refused input reached the model", n)
	}
}

// An interrupted review leaves review mode, and the turn ends
// interrupted.
func TestReviewInterrupted(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	g := mockmodel.NewGate() // never opened: the reviewer's stream stalls
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", "a b c d", 4), mockmodel.Completed("resp_1", usage())).GateAfter(2, g))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": dir})
	res := unmarshal(t, WantResult(t, c.Call("review/start", map[string]any{"threadId": id, "target": map[string]any{"type": "uncommittedChanges"}})))
	turnID := str(res, "turn", "id")
	<-g.Reached()
	WantResult(t, c.Call("turn/interrupt", map[string]any{"threadId": id, "turnId": turnID}))
	msgs := collectUntil(c, isMethod("turn/completed"))
	exited := completedItem(t, msgs, "exitedReviewMode")
	end := unmarshal(t, msgs[len(msgs)-1].Params)
	if str(exited, "review") != "The review was interrupted." || str(end, "turn", "status") != "interrupted" {
		t.Fatalf("interrupted review: %v, %v", exited, end)
	}
	for _, msg := range msgs {
		if msg.Method == "item/started" && str(unmarshal(t, msg.Params), "item", "type") == "agentMessage" {
			t.Fatalf("the reviewer's message was shown: %s", msg.Raw)
		}
	}
}

// Bad targets are refused with errors that say what is wrong, before any
// turn starts or the model is asked.
func TestReviewBadTargets(t *testing.T) {
	dir, _ := reviewRepo(t)
	plain := t.TempDir()
	m := mockmodel.New(t, mockmodel.AllowUnused())
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	inRepo := startThread(t, c, map[string]any{"cwd": dir})
	outside := startThread(t, c, map[string]any{"cwd": plain})
	cases := []struct {
		thread string
		target map[string]any
		want   string
	}{
		{outside, map[string]any{"type": "uncommittedChanges"}, "not a git repository: " + plain},
		{outside, map[string]any{"type": "baseBranch", "branch": "main"}, "not a git repository: " + plain},
		{inRepo, map[string]any{"type": "baseBranch", "branch": "nope"}, "branch not found: nope"},
		{inRepo, map[string]any{"type": "commit", "sha": "deadbeef"}, "commit not found: deadbeef"},
		{inRepo, map[string]any{"type": "baseBranch", "branch": "   "}, "branch must not be empty"},
		{inRepo, map[string]any{"type": "commit", "sha": "\t"}, "sha must not be empty"},
		{inRepo, map[string]any{"type": "custom", "instructions": "\n\n"}, "instructions must not be empty"},
		{inRepo, map[string]any{"type": "baseBranch", "branch": "--output=x"}, `invalid branch "--output=x": it must not start with '-'`},
		{inRepo, map[string]any{"type": "everything"}, ""},
		{"00000000-0000-7000-8000-000000000000", map[string]any{"type": "uncommittedChanges"}, ""},
	}
	for _, cs := range cases {
		WantError(t, c.Call("review/start", map[string]any{"threadId": cs.thread, "target": cs.target}), codeInvalidRequest, cs.want)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("%d model requests for refused reviews", n)
	}
	// Nothing started: the threads are idle and a review runs afterwards.
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok"), mockmodel.Completed("resp_1", usage())))
	msgs := runReview(t, c, map[string]any{"threadId": inRepo, "target": map[string]any{"type": "uncommittedChanges"}, "delivery": "inline"})
	if got := flow(t, msgs); !slices.Equal(got, reviewFlow) {
		t.Fatalf("review after refusals: %v", got)
	}
}

// The reviewer works with the thread's tools in a conversation of its
// own: its command is an item of the review turn, its output goes back
// to the reviewer, and none of it reaches the thread's conversation.
func TestReviewerRunsTools(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "cat a.txt"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", reviewJSON(dir, "[P2] Looked")), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "noted"), mockmodel.Completed("resp_3", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "never"
sandbox_mode = "workspace-write"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": dir})
	msgs := runReview(t, c, map[string]any{"threadId": id, "target": map[string]any{"type": "uncommittedChanges"}})
	cmd := completedItem(t, msgs, "commandExecution")
	if !strings.Contains(str(cmd, "aggregatedOutput"), "three") {
		t.Fatalf("reviewer's command %v", cmd)
	}
	if got := str(completedItem(t, msgs, "exitedReviewMode"), "review"); !strings.Contains(got, "[P2] Looked") {
		t.Fatalf("review %q", got)
	}
	reqs := m.Requests()
	if out, ok := reqs[1].ToolOutput("call_1"); !ok || !strings.Contains(out, "three") || reqs[1].Header.Get("thread-id") != reqs[0].Header.Get("thread-id") {
		t.Fatalf("the reviewer's second request: output %q (%v), thread-id %q then %q", out, ok, reqs[0].Header.Get("thread-id"), reqs[1].Header.Get("thread-id"))
	}
	runTurn(t, c, id, "thanks")
	if _, ok := m.Requests()[2].ToolOutput("call_1"); ok || strings.Contains(string(m.Requests()[2].Body), `"call_1"`) {
		t.Fatalf("the reviewer's tool call reached the thread's conversation")
	}
}

// A reviewer whose model fails: review mode is left, and the turn fails
// with the model's error.
func TestReviewFails(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Status(400, `{"error":{"message":"no such model","type":"invalid_request_error"}}`))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": dir})
	msgs := runReview(t, c, map[string]any{"threadId": id, "target": map[string]any{"type": "commit", "sha": "HEAD"}})
	exited := completedItem(t, msgs, "exitedReviewMode")
	end := unmarshal(t, msgs[len(msgs)-1].Params)
	if str(exited, "review") != "The review did not finish: the reviewer failed." || str(end, "turn", "status") != "failed" ||
		!strings.Contains(str(end, "turn", "error", "message"), "no such model") {
		t.Fatalf("failed review: %v, %v", exited, end)
	}
	if slices.ContainsFunc(msgs, func(m Message) bool {
		return m.Method == "item/started" && str(unmarshal(t, m.Params), "item", "type") == "agentMessage"
	}) {
		t.Fatalf("a failed review has an agent message: %v", flow(t, msgs))
	}
}

// A review started while a turn runs replaces it, as in the reference:
// the review's result, the running turn's end (interrupted), then the
// review.
func TestReviewReplacesRunningTurn(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	g := mockmodel.NewGate() // never opened: the first turn's stream stalls
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", "a b c d", 4), mockmodel.Completed("resp_1", usage())).GateAfter(2, g),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "Fine."), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": dir})
	first := str(unmarshal(t, WantResult(t, c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("work")}))), "turn", "id")
	<-g.Reached()
	c.Request("review/start", map[string]any{"threadId": id, "target": map[string]any{"type": "uncommittedChanges"}})
	msgs := collectUntil(c, func(m Message) bool {
		return m.Method == "turn/completed" && str(unmarshal(t, m.Params), "turn", "id") != first
	})
	// The first turn's messages still in flight when the review was asked
	// for come first; then the review's result.
	i := slices.IndexFunc(msgs, func(m Message) bool { return m.Method == "" })
	msgs = msgs[i:]
	got := flow(t, msgs)
	want := append([]string{"response", "thread/status/changed", "turn/completed"}, reviewFlow[1:]...)
	if !slices.Equal(got, want) {
		t.Fatalf("messages:\n%v\nwant\n%v", got, want)
	}
	end := msgs[slices.IndexFunc(msgs, isMethod("turn/completed"))]
	if ended := unmarshal(t, end.Params); str(ended, "turn", "id") != first || str(ended, "turn", "status") != "interrupted" {
		t.Fatalf("the running turn's end: %s", end.Raw)
	}
}
