package rollout

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// testCtx bounds every wait of a test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// warnings collects OnWarning messages.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(m string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, m)
	w.mu.Unlock()
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func (w *warnings) contains(sub string) bool {
	for _, m := range w.list() {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func openStore(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	home := t.TempDir()
	opts.NoGitInfo = true
	s, err := Open(home, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, home
}

var baseTime = time.Date(2026, 11, 29, 23, 1, 17, 115_000_000, time.UTC)

func testMeta(id string, at time.Time) SessionMeta {
	return SessionMeta{
		ID: id, CreatedAt: at, Cwd: "/work/project", ModelProvider: "mock", Model: "gpt-test",
		Source: "vscode", Originator: "acceptance", CLIVersion: "0.0.1-test",
	}
}

// uuid7At makes a UUIDv7-shaped id whose time is at, distinct by n.
func uuid7At(at time.Time, n int) string {
	ms := at.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7%03x-8000-%012x", uint32(ms>>16), uint16(ms), n>>12&0xfff, n)
}

// turnScript describes one turn for recordTurn.
type turnScript struct {
	id     string
	prompt string
	at     time.Time
	// end: "completed", "failed", "aborted", or "" (never ends)
	end string
	// withCommand adds a command execution item.
	withCommand bool
	usage       int64
}

// recordTurn drives a Recorder the way the turn loop does.
func recordTurn(t testing.TB, r *Recorder, s turnScript) {
	t.Helper()
	at := s.at
	if at.IsZero() {
		at = baseTime
	}
	ev := func(msg core.EventMsg) core.Event {
		at = at.Add(time.Millisecond)
		return core.Event{TurnID: s.id, Time: at, Msg: msg}
	}
	r.RecordTurnContext(s.id, TurnContext{Cwd: "/work/project", Model: "gpt-test", Effort: "high",
		ApprovalPolicy: policy.ApprovalOnRequest, Sandbox: policy.WorkspaceWrite()})
	r.RecordEvent(ev(core.TurnStarted{Kind: core.TurnRegular, StartedAt: at, ModelContextWindow: 1000}))
	um := core.UserMessageItem{ID: s.id + "-user", Content: []core.UserInput{core.TextInput(s.prompt)}}
	r.RecordEvent(ev(core.ItemStarted{Item: um}))
	r.RecordItem(s.id, model.NewTextMessage("", "user", s.prompt))
	r.RecordEvent(ev(core.ItemCompleted{Item: um}))
	r.RecordEvent(ev(core.AgentMessageDelta{ItemID: "x", Delta: "dropped"}))
	if s.withCommand {
		callID := s.id + "-call"
		r.RecordItem(s.id, model.NewResponseItem(map[string]any{
			"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"ls"}`, "call_id": callID,
		}))
		cmd := core.CommandExecutionItem{ID: callID, Command: "ls", Argv: []string{"ls"}, Cwd: "/work/project",
			Status: core.StatusInProgress, Source: core.SourceAgent}
		r.RecordEvent(ev(core.ItemStarted{Item: cmd}))
		out, code, dur := "a\nb\n", 0, int64(3)
		cmd.Status, cmd.AggregatedOutput, cmd.ExitCode, cmd.DurationMs = core.StatusCompleted, &out, &code, &dur
		r.RecordItem(s.id, model.NewFunctionCallOutput("", callID, out))
		r.RecordEvent(ev(core.ItemCompleted{Item: cmd}))
	}
	if s.end == "" {
		return
	}
	msgID := "msg-" + s.id
	r.RecordEvent(ev(core.ItemStarted{Item: core.AgentMessageItem{ID: msgID}}))
	r.RecordItem(s.id, model.NewTextMessage(msgID, "assistant", "answer to "+s.prompt))
	r.RecordEvent(ev(core.ItemCompleted{Item: core.AgentMessageItem{ID: msgID, Text: "answer to " + s.prompt}}))
	u := model.TokenUsage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15 + s.usage}
	r.RecordEvent(ev(core.TokenCount{Info: core.TokenUsageInfo{Total: u, Last: u, ModelContextWindow: 1000}}))
	switch s.end {
	case "completed":
		r.RecordEvent(ev(core.TurnComplete{LastAgentMessage: "answer", CompletedAt: at, Duration: 40 * time.Millisecond}))
	case "failed":
		e := core.TurnError{Message: "boom", Kind: core.KindInternalServerError, HTTPStatus: 500}
		r.RecordEvent(ev(core.Error{Err: e}))
		r.RecordEvent(ev(core.TurnComplete{Error: &e, CompletedAt: at, Duration: 40 * time.Millisecond}))
	case "aborted":
		r.RecordEvent(ev(core.TurnAborted{Reason: core.AbortInterrupted, CompletedAt: at, Duration: 40 * time.Millisecond}))
	}
}

// writeThreadFile writes a rollout file directly (no recorder, no fsync),
// for generating many threads quickly, and names the thread in the session
// index when name is set. It returns the path.
func writeThreadFile(t testing.TB, home string, meta SessionMeta, turns int, name string) string {
	t.Helper()
	var b []byte
	first, err := metaLine(meta)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, first...)
	for i := range turns {
		b = append(b, turnRecords(t, meta.ID, i, meta.CreatedAt.Add(time.Duration(4*i)*time.Millisecond))...)
	}
	if name != "" {
		if err := newNameIndex(home, nil).set(meta.ID, name); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(datedDir(home, meta.CreatedAt), FileName(meta.CreatedAt, meta.ID))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// turnRecords are the records of a thread's turn i (a user message, an
// answer, completed), dated from at on, as writeThreadFile writes them.
func turnRecords(t testing.TB, threadID string, i int, at time.Time) []byte {
	t.Helper()
	var b []byte
	var err error
	tid := fmt.Sprintf("%s-t%d", threadID, i)
	add := func(msg core.EventMsg) {
		at = at.Add(time.Millisecond)
		if b, err = appendEvent(b, threadID, at, core.Event{TurnID: tid, Msg: msg}); err != nil {
			t.Fatal(err)
		}
	}
	add(core.TurnStarted{Kind: core.TurnRegular, StartedAt: at})
	prompt := fmt.Sprintf("prompt %d of %s", i, threadID)
	b = appendLine(b, at, LineResponseItem, tid, model.NewTextMessage("", "user", prompt).Raw())
	add(core.ItemCompleted{Item: core.UserMessageItem{ID: tid + "-u", Content: []core.UserInput{core.TextInput(prompt)}}})
	b = appendLine(b, at, LineResponseItem, tid, model.NewTextMessage("m"+tid, "assistant", "answer").Raw())
	add(core.ItemCompleted{Item: core.AgentMessageItem{ID: "m" + tid, Text: "answer"}})
	add(core.TurnComplete{CompletedAt: at})
	return b
}

func mustRead(t testing.TB, path string, opts ReadOptions) *Thread {
	t.Helper()
	th, err := ReadThread(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("ReadThread: %v", err)
	}
	return th
}

func turnStatuses(th *Thread) []TurnStatus {
	var out []TurnStatus
	for _, t := range th.Turns {
		out = append(out, t.Status)
	}
	return out
}

// ignoreOrdinals leaves out of a comparison where turns and items sit in
// their file, which differs between two layouts of the same thread.
var ignoreOrdinals = cmpopts.IgnoreFields(Turn{}, "Ordinal", "ItemOrdinals")
