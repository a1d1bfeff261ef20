package test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// detachedFlow is a detached review's messages to the client that asked
// for it: thread/started for the fork, then the inline review's flow on
// the fork.
var detachedFlow = append([]string{"thread/started"}, reviewFlow...)

// threadOf returns the thread a message is about: its threadId, or the
// started thread's id; "" for a response or a message about no thread.
func threadOf(t *testing.T, m Message) string {
	if m.Method == "" {
		return ""
	}
	p := unmarshal(t, m.Params)
	if m.Method == "thread/started" {
		return str(p, "thread", "id")
	}
	return str(p, "threadId")
}

// detachedReview sends review/start with delivery "detached" and reads
// up to the review thread's turn/completed. It returns the fork's id,
// the messages about the fork (its thread/started, the result and its
// notifications; every one checked against the reference schema) and
// the other messages read meanwhile.
func detachedReview(t *testing.T, c *Client, parent string, target map[string]any) (string, []Message, []Message) {
	t.Helper()
	id := c.Request("review/start", map[string]any{"threadId": parent, "target": target, "delivery": "detached"})
	var fork string
	var mine, others []Message
	for {
		m := c.Next()
		switch {
		case m.Method == "" && string(m.ID) == string(id):
			if m.Error != nil {
				t.Fatalf("detached review refused: %s", m.Raw)
			}
			validResult(t, "review/start", m, nil)
			fork = str(unmarshal(t, m.Result), "reviewThreadId")
			mine = append(mine, m)
			continue
		case m.Method == "thread/started" && fork == "" && str(unmarshal(t, m.Params), "thread", "forkedFromId") == parent:
			validNotification(t, m)
			mine = append(mine, m)
			continue
		case m.Method != "" && fork != "" && threadOf(t, m) == fork:
			validNotification(t, m)
			mine = append(mine, m)
			if m.Method == "turn/completed" {
				return fork, mine, others
			}
			continue
		}
		others = append(others, m)
	}
}

// reviewItemTypes are the item types of a review turn read back.
var reviewItemTypes = []string{"enteredReviewMode", "userMessage", "exitedReviewMode", "agentMessage"}

// turnItemTypes lists the types of a read turn's items.
func turnItemTypes(turn any) []string {
	var out []string
	items, _ := path(turn, "items").([]any)
	for _, it := range items {
		out = append(out, str(it, "type"))
	}
	return out
}

// A detached review forks the thread and reviews on the fork: first on a
// thread before its first turn (uncommitted changes), then, after the
// thread's own turn, with custom instructions. The fork is announced
// before the result that names it, the review's items arrive on it in
// the inline order, and the thread itself gets none; the reviewer is a
// sub-agent of the fork and uses review_model; the fork is stored and
// listed with the copied turns and the review, and the thread keeps its
// own.
func TestReviewDetached(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_r1", mockmodel.Text("msg_r1", reviewJSON(dir, "[P1] Bad thing")), mockmodel.Completed("resp_r1", usage())),
		mockmodel.Reply("resp_own", mockmodel.Text("msg_own", "done"), mockmodel.Completed("resp_own", usage())),
		mockmodel.Reply("resp_r2", mockmodel.Text("msg_r2", "Nothing to report."), mockmodel.Completed("resp_r2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `review_model = "review-model"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	parent := startThread(t, c, map[string]any{"cwd": dir})
	rendered := "One bug.\n\nReview comment:\n\n- [P1] Bad thing — " + dir + "/a.txt:2-3\n  It breaks."

	cases := []struct {
		name   string
		target map[string]any
		hint   string
		review string
		// ownTurns is how many turns of the thread the fork copies.
		ownTurns int
	}{
		{"uncommitted changes, before the thread's first turn", map[string]any{"type": "uncommittedChanges"}, "current changes", rendered, 0},
		{"custom, after a turn of the thread", map[string]any{"type": "custom", "instructions": "look at the build"}, "look at the build", "Nothing to report.", 1},
	}
	var forks []string
	for i, cs := range cases {
		if cs.ownTurns > 0 {
			if msgs := runTurn(t, c, parent, "do it"); str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status") != "completed" {
				t.Fatalf("the thread's own turn: %v", methods(msgs))
			}
		}
		fork, msgs, others := detachedReview(t, c, parent, cs.target)
		forks = append(forks, fork)
		if got := flow(t, msgs); !slices.Equal(got, detachedFlow) {
			t.Fatalf("%s: messages:\n%v\nwant\n%v", cs.name, got, detachedFlow)
		}
		for _, o := range others {
			if threadOf(t, o) == parent {
				t.Fatalf("%s: the thread got %s", cs.name, o.Raw)
			}
		}
		res := unmarshal(t, msgs[1].Result)
		turnID := str(res, "turn", "id")
		if fork == "" || fork == parent || str(res, "turn", "items", 0, "content", 0, "text") != cs.hint || str(res, "turn", "status") != "inProgress" {
			t.Fatalf("%s: result %s", cs.name, msgs[1].Raw)
		}
		started := unmarshal(t, msgs[0].Params)
		if str(started, "thread", "id") != fork || str(started, "thread", "forkedFromId") != parent || path(started, "thread", "ephemeral") != false {
			t.Fatalf("%s: thread/started %s", cs.name, msgs[0].Raw)
		}
		for _, msg := range msgs[2:] {
			if tid := str(unmarshal(t, msg.Params), "turnId"); tid != "" && tid != turnID {
				t.Fatalf("%s: %s names turn %s, not %s", cs.name, msg.Method, tid, turnID)
			}
		}
		if got := str(completedItem(t, msgs, "enteredReviewMode"), "review"); got != cs.hint {
			t.Fatalf("%s: enteredReviewMode %q", cs.name, got)
		}
		if got := str(completedItem(t, msgs, "exitedReviewMode"), "review"); got != cs.review {
			t.Fatalf("%s: exitedReviewMode %q, want %q", cs.name, got, cs.review)
		}
		if got := str(completedItem(t, msgs, "agentMessage"), "text"); got != cs.review {
			t.Fatalf("%s: agentMessage %q", cs.name, got)
		}

		// The reviewer works for the fork, with the review model.
		reqs := m.Requests()
		req := reqs[len(reqs)-1]
		if h := req.Header; h.Get("x-openai-subagent") != "review" || h.Get("x-codex-parent-thread-id") != fork || h.Get("session-id") != fork {
			t.Fatalf("%s: reviewer headers %v", cs.name, h)
		}
		if req.Model() != "review-model" {
			t.Fatalf("%s: reviewer model %q", cs.name, req.Model())
		}
		if i == 0 && !strings.Contains(req.LastUserText(), "+brand new") {
			t.Fatalf("the reviewer's task lacks the changes: %s", req.LastUserText())
		}

		// Read back: the copied turns, then the review.
		read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": fork, "includeTurns": true})))
		turns, _ := path(read, "thread", "turns").([]any)
		if len(turns) != cs.ownTurns+1 || str(read, "thread", "forkedFromId") != parent {
			t.Fatalf("%s: the fork read back: %v", cs.name, read)
		}
		if got := turnItemTypes(turns[cs.ownTurns]); !slices.Equal(got, reviewItemTypes) || str(turns[cs.ownTurns], "id") != turnID {
			t.Fatalf("%s: the fork's review turn read back: %v", cs.name, turns[cs.ownTurns])
		}
		if cs.ownTurns > 0 && str(turns[0], "items", 0, "content", 0, "text") != "do it" {
			t.Fatalf("%s: the copied turn: %v", cs.name, turns[0])
		}
	}

	// The thread has its own turn only, and runs with its own model.
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": parent, "includeTurns": true})))
	turns, _ := path(read, "thread", "turns").([]any)
	if len(turns) != 1 || slices.Contains(turnItemTypes(turns[0]), "enteredReviewMode") {
		t.Fatalf("the thread read back: %v", read)
	}
	if own := m.Requests()[1]; own.Model() != "mock-model" || own.Header.Get("x-openai-subagent") != "" {
		t.Fatalf("the thread's own turn: model %q, headers %v", own.Model(), own.Header)
	}
	// Both forks are stored threads, listed.
	list := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{})))
	var listed []string
	for _, th := range path(list, "data").([]any) {
		listed = append(listed, str(th, "id"))
	}
	for _, f := range forks {
		if !slices.Contains(listed, f) {
			t.Fatalf("fork %s is not in thread/list %v", f, listed)
		}
	}
}

// The thread goes on working while its detached review runs: a turn
// running when the review is asked for is not interrupted (the fork
// copies it as interrupted), the review runs to its end while that turn
// still runs, and the turn then completes. Without review_model the
// reviewer uses the thread's model.
func TestReviewDetachedWhileTheThreadWorks(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	g := mockmodel.NewGate()
	m.Enqueue(
		mockmodel.Reply("resp_own", mockmodel.TextN("msg_own", "a b c d", 4), mockmodel.Completed("resp_own", usage())).GateAfter(2, g),
		mockmodel.Reply("resp_r", mockmodel.Text("msg_r", "Looks fine."), mockmodel.Completed("resp_r", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	parent := startThread(t, c, map[string]any{"cwd": dir, "model": "parent-model"})
	own := str(unmarshal(t, WantResult(t, c.Call("turn/start", map[string]any{"threadId": parent, "input": textInput("work")}))), "turn", "id")
	<-g.Reached()

	fork, msgs, others := detachedReview(t, c, parent, map[string]any{"type": "custom", "instructions": "check the work"})
	if got := flow(t, msgs); !slices.Equal(got, detachedFlow) {
		t.Fatalf("messages:\n%v\nwant\n%v", got, detachedFlow)
	}
	if got := str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status"); got != "completed" {
		t.Fatalf("the review ended %s", got)
	}
	for _, o := range others {
		if o.Method == "turn/completed" || o.Method == "item/started" && str(unmarshal(t, o.Params), "item", "type") == "enteredReviewMode" {
			t.Fatalf("while the review ran, the thread got %s", o.Raw)
		}
	}
	if rev := m.Requests()[1]; rev.Model() != "parent-model" || rev.Header.Get("x-codex-parent-thread-id") != fork {
		t.Fatalf("reviewer request: model %q, headers %v", rev.Model(), rev.Header)
	}

	// The thread's turn was still running; it completes.
	g.Open()
	end := c.ReadUntil(func(m Message) bool { return m.Method == "turn/completed" && threadOf(t, m) == parent })
	if p := unmarshal(t, end.Params); str(p, "turn", "id") != own || str(p, "turn", "status") != "completed" {
		t.Fatalf("the thread's turn: %s", end.Raw)
	}

	// The fork copied that turn as it was: interrupted, then the review.
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": fork, "includeTurns": true})))
	turns, _ := path(read, "thread", "turns").([]any)
	if len(turns) != 2 || str(turns[0], "id") != own || str(turns[0], "status") != "interrupted" || !slices.Equal(turnItemTypes(turns[1]), reviewItemTypes) {
		t.Fatalf("the fork read back: %v", turns)
	}
	read = unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": parent, "includeTurns": true})))
	turns, _ = path(read, "thread", "turns").([]any)
	if len(turns) != 1 || str(turns[0], "status") != "completed" {
		t.Fatalf("the thread read back: %v", turns)
	}
}

// A detached review that cannot fork is refused as thread/fork refuses
// the same thread, and a bad target leaves no fork behind; nothing
// reaches the model.
func TestReviewDetachedRefused(t *testing.T) {
	dir, _ := reviewRepo(t)
	plain := t.TempDir()
	m := mockmodel.New(t, mockmodel.AllowUnused())
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	ephemeral := startThread(t, c, map[string]any{"cwd": dir, "ephemeral": true})
	outside := startThread(t, c, map[string]any{"cwd": plain})
	inRepo := startThread(t, c, map[string]any{"cwd": dir})
	unknown := "00000000-0000-7000-8000-000000000000"
	uncommitted := map[string]any{"type": "uncommittedChanges"}

	for _, cs := range []struct{ thread, want string }{
		{unknown, "no rollout found for thread id " + unknown},
		{"not-a-uuid", "no rollout found for thread id not-a-uuid"},
		{ephemeral, "no rollout found for thread id " + ephemeral},
	} {
		WantError(t, c.Call("thread/fork", map[string]any{"threadId": cs.thread}), codeInvalidRequest, cs.want)
		WantError(t, c.Call("review/start", map[string]any{"threadId": cs.thread, "target": uncommitted, "delivery": "detached"}), codeInvalidRequest, cs.want)
	}
	for _, cs := range []struct {
		thread string
		target map[string]any
		want   string
	}{
		{outside, uncommitted, "not a git repository: " + plain},
		{inRepo, map[string]any{"type": "commit", "sha": "deadbeef"}, "commit not found: deadbeef"},
		{inRepo, map[string]any{"type": "custom", "instructions": " "}, "instructions must not be empty"},
	} {
		WantError(t, c.Call("review/start", map[string]any{"threadId": cs.thread, "target": cs.target, "delivery": "detached"}), codeInvalidRequest, cs.want)
	}
	loaded := unmarshal(t, WantResult(t, c.Call("thread/loaded/list", map[string]any{})))
	if got := len(path(loaded, "data").([]any)); got != 3 {
		t.Fatalf("%d threads loaded after the refusals, want the 3 started: %v", got, loaded)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("%d model requests for refused reviews", n)
	}
}

// The fork runs with the thread's settings as they are now, not as its
// rollout last recorded them: a thread started read-only under a
// configuration that writes, before its first turn (so nothing recorded
// its sandbox yet), is reviewed read-only, in its directory.
func TestReviewDetachedKeepsTheThreadSettings(t *testing.T) {
	dir, _ := reviewRepo(t)
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "Fine."), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, `sandbox_mode = "workspace-write"
approval_policy = "never"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	parent := startThread(t, c, map[string]any{"cwd": dir, "sandbox": "read-only", "approvalPolicy": "untrusted"})
	fork, _, _ := detachedReview(t, c, parent, map[string]any{"type": "custom", "instructions": "look"})
	res := unmarshal(t, WantResult(t, c.Call("thread/resume", map[string]any{"threadId": fork, "excludeTurns": true})))
	if got := str(res, "sandbox", "type") + " " + str(res, "approvalPolicy") + " " + str(res, "cwd"); got != "readOnly untrusted "+dir {
		t.Fatalf("the fork runs with %s", got)
	}
}
