package rollout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// recordThread records the turns with a fresh recorder, closes it and
// returns the file's path.
func recordThread(t *testing.T, s *Store, id string, turns ...turnScript) string {
	t.Helper()
	ctx := testCtx(t)
	r, err := s.Create(testMeta(id, baseTime))
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range turns {
		recordTurn(t, r, ts)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return r.Path()
}

func TestRebuildTurnsItemsAndStatus(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-rebuild",
		turnScript{id: "t1", prompt: "first prompt", end: "completed", withCommand: true},
		turnScript{id: "t2", prompt: "second", end: "failed", usage: 100},
		turnScript{id: "t3", prompt: "third", end: "aborted"},
		turnScript{id: "t4", prompt: "fourth", withCommand: true}, // never ends
	)
	th := mustRead(t, p, ReadOptions{})
	if len(th.Warnings) != 0 {
		t.Fatalf("warnings %v", th.Warnings)
	}
	want := []TurnStatus{TurnCompleted, TurnFailed, TurnInterrupted, TurnInterrupted}
	if diff := cmp.Diff(want, turnStatuses(th)); diff != "" {
		t.Fatalf("statuses: %s", diff)
	}
	t1 := th.Turns[0]
	var kinds []string
	for _, it := range t1.Items {
		kinds = append(kinds, fmt.Sprintf("%T", it))
	}
	if got := strings.Join(kinds, ","); got != "core.UserMessageItem,core.CommandExecutionItem,core.AgentMessageItem" {
		t.Fatalf("items %s", got)
	}
	cmd := t1.Items[1].(core.CommandExecutionItem)
	if cmd.Status != core.StatusCompleted || *cmd.AggregatedOutput != "a\nb\n" || *cmd.ExitCode != 0 {
		t.Fatalf("command %+v", cmd)
	}
	if am := t1.Items[2].(core.AgentMessageItem); am.Text != "answer to first prompt" {
		t.Fatalf("agent message %+v", am)
	}
	// Item times come from the started and completed records.
	if it := t1.ItemTimes[1]; it.StartedAt.IsZero() || !it.CompletedAt.After(it.StartedAt) {
		t.Fatalf("command times %+v", it)
	}
	if t1.Duration != 40*time.Millisecond || t1.StartedAt.IsZero() || t1.CompletedAt.IsZero() {
		t.Fatalf("turn times %+v", t1)
	}
	if e := th.Turns[1].Error; e == nil || e.Message != "boom" || e.Kind != core.KindInternalServerError || e.HTTPStatus != 500 {
		t.Fatalf("failed turn error %+v", e)
	}
	// The turn that never ended: its running command is failed, not
	// running forever; it has no completion time.
	t4 := th.Turns[3]
	if c := t4.Items[1].(core.CommandExecutionItem); c.Status != core.StatusCompleted {
		t.Fatalf("completed command changed: %+v", c)
	}
	if !t4.CompletedAt.IsZero() {
		t.Fatal("open turn has a completion time")
	}
	if th.Preview != "first prompt" || th.LastTurnFailed {
		t.Fatalf("preview %q, lastFailed %v", th.Preview, th.LastTurnFailed)
	}
	// Usage: the last recorded, with its turn.
	if th.TokenUsage == nil || th.TokenUsage.TurnID != "t3" {
		t.Fatalf("usage %+v", th.TokenUsage)
	}
	if th.TurnContext == nil || th.TurnContext.Effort != "high" {
		t.Fatalf("turn context %+v", th.TurnContext)
	}
	// History: exactly what was recorded, in order.
	var roles []string
	for _, h := range th.History {
		roles = append(roles, h.Type()+":"+h.Role())
	}
	if got := strings.Join(roles, " "); got != "message:user function_call: function_call_output: message:assistant "+
		"message:user message:assistant message:user message:assistant message:user function_call: function_call_output:" {
		t.Fatalf("history %s", got)
	}
	if string(th.History[0].Raw()) != string(model.NewTextMessage("", "user", "first prompt").Raw()) {
		t.Fatalf("history bytes changed: %s", th.History[0].Raw())
	}
	// A thread that is running reports its open turn as in progress.
	running := mustRead(t, p, ReadOptions{RunningTurnID: "t4"})
	if running.Turns[3].Status != TurnInProgress {
		t.Fatalf("running turn %s", running.Turns[3].Status)
	}
}

func TestLastTurnFailedAndOpenErroredTurn(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-fail", turnScript{id: "t1", prompt: "p", end: "completed"}, turnScript{id: "t2", prompt: "q", end: "failed"})
	if th := mustRead(t, p, ReadOptions{}); !th.LastTurnFailed {
		t.Fatal("last failed turn not reported")
	}
	// An error recorded in a turn that never ended: the turn failed.
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-err-open", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "p"})
	r.RecordEvent(core.Event{TurnID: "t1", Msg: core.Error{Err: core.TurnError{Message: "stream died"}}})
	r.Close(ctx)
	th := mustRead(t, r.Path(), ReadOptions{})
	if th.Turns[0].Status != TurnFailed || th.Turns[0].Error.Message != "stream died" || !th.LastTurnFailed {
		t.Fatalf("turn %+v", th.Turns[0])
	}
}

func TestStaleItemsOfEndedTurnAreSettled(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-stale", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "p"})
	ev := func(m core.EventMsg) { r.RecordEvent(core.Event{TurnID: "t1", Msg: m}) }
	ev(core.ItemStarted{Item: core.CommandExecutionItem{ID: "c1", Command: "sleep 100", Status: core.StatusInProgress}})
	ev(core.ItemStarted{Item: core.FileChangeItem{ID: "f1", Status: core.StatusInProgress}})
	ev(core.ItemStarted{Item: core.DynamicToolCallItem{ID: "d1", Status: core.StatusInProgress}})
	ev(core.ItemStarted{Item: core.McpToolCallItem{ID: "mcp1", Server: "s", Tool: "slow", Status: core.StatusInProgress}})
	ev(core.ItemStarted{Item: core.AgentMessageItem{ID: "m1"}})
	ev(core.ItemStarted{Item: core.ReasoningItem{ID: "r1"}})
	ev(core.TurnAborted{Reason: core.AbortInterrupted})
	r.Close(ctx)
	th := mustRead(t, r.Path(), ReadOptions{})
	items := th.Turns[0].Items
	if len(items) != 5 { // user message + four tools; empty message and reasoning dropped
		t.Fatalf("items %+v", items)
	}
	for _, it := range items[1:] {
		var st core.ItemStatus
		switch v := it.(type) {
		case core.CommandExecutionItem:
			st = v.Status
		case core.FileChangeItem:
			st = v.Status
		case core.DynamicToolCallItem:
			st = v.Status
		case core.McpToolCallItem:
			st = v.Status
		}
		if st != core.StatusFailed {
			t.Errorf("%T status %s", it, st)
		}
	}
	if len(th.Turns[0].ItemTimes) != len(items) {
		t.Fatal("item times not aligned with items")
	}
}

func TestRollbackInRebuild(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-rollback", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "one", end: "completed"})
	recordTurn(t, r, turnScript{id: "t2", prompt: "two", end: "completed", usage: 2})
	r.RecordItem("", model.NewTextMessage("", "developer", "injected between turns"))
	recordTurn(t, r, turnScript{id: "t3", prompt: "three", end: "completed", usage: 3})
	if err := r.Rollback(ctx, 2); err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t4", prompt: "four", end: "completed", usage: 4})
	if err := r.Rollback(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	th := mustRead(t, r.Path(), ReadOptions{})
	if len(th.Turns) != 1 || th.Turns[0].ID != "t1" {
		t.Fatalf("turns %+v", turnStatuses(th))
	}
	var texts []string
	for _, h := range th.History {
		texts = append(texts, h.MessageText())
	}
	// Items recorded outside turns are not rolled back.
	want := []string{"one", "answer to one", "injected between turns"}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Fatalf("history (-want +got): %s", diff)
	}
	if th.TokenUsage == nil || th.TokenUsage.TurnID != "t1" {
		t.Fatalf("usage of a rolled back turn kept: %+v", th.TokenUsage)
	}
	if err := r.Rollback(ctx, 0); err == nil {
		t.Fatal("rollback of 0 turns accepted")
	}
}

func TestCompactionInRebuild(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-compact", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "one", end: "completed"})
	recordTurn(t, r, turnScript{id: "t2", prompt: "two", end: "completed"})
	summary := []model.ResponseItem{
		model.NewTextMessage("", "user", "one"),
		model.NewTextMessage("", "user", "SUMMARY: we said one and two"),
	}
	ev := func(m core.EventMsg) { r.RecordEvent(core.Event{TurnID: "tc", Msg: m}) }
	ev(core.TurnStarted{Kind: core.TurnCompact})
	ev(core.ItemStarted{Item: core.ContextCompactionItem{ID: "cc"}})
	r.RecordCompaction("tc", Compaction{Message: "we said one and two", ReplacementHistory: summary})
	ev(core.ContextCompacted{})
	ev(core.ItemCompleted{Item: core.ContextCompactionItem{ID: "cc"}})
	ev(core.TurnComplete{})
	recordTurn(t, r, turnScript{id: "t3", prompt: "three", end: "completed"})
	r.Close(ctx)
	th := mustRead(t, r.Path(), ReadOptions{})
	var texts []string
	for _, h := range th.History {
		texts = append(texts, h.MessageText())
	}
	want := []string{"one", "SUMMARY: we said one and two", "three", "answer to three"}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Fatalf("history (-want +got): %s", diff)
	}
	// The public view keeps every turn, the compaction among them.
	if len(th.Turns) != 4 || th.Turns[2].Kind != core.TurnCompact {
		t.Fatalf("turns %v", turnStatuses(th))
	}
	if _, ok := th.Turns[2].Items[0].(core.ContextCompactionItem); !ok {
		t.Fatalf("compaction item %+v", th.Turns[2].Items)
	}
	// A rollback counts user turns, not the compaction.
	r2, _ := s.Reopen("t-compact")
	if err := r2.Rollback(ctx, 2); err != nil {
		t.Fatal(err)
	}
	r2.Close(ctx)
	th = mustRead(t, r.Path(), ReadOptions{})
	if len(th.Turns) != 1 || th.Turns[0].ID != "t1" {
		t.Fatalf("after rollback: %d turns", len(th.Turns))
	}
}

func TestUnknownRecordsAreSkipped(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-future", turnScript{id: "t1", prompt: "p", end: "completed"})
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"timestamp":"2026-11-29T23:05:00.000Z","type":"hologram","payload":{"x":1}}` + "\n")
	f.WriteString(`{"timestamp":"2026-11-29T23:05:00.000Z","type":"event_msg","turnId":"t1","payload":{"type":"telepathy","x":1}}` + "\n")
	f.WriteString(`{"timestamp":"2026-11-29T23:05:00.000Z","type":"event_msg","turnId":"t1","payload":{"type":"itemCompleted","item":{"type":"hologram","id":"h"}}}` + "\n")
	f.WriteString(`{"timestamp":"2026-11-29T23:05:00.000Z","type":"event_msg","turnId":"t1","payload":{"type":"itemStarted","item":{"type":"hologram","id":"h2"}}}` + "\n")
	// Another writer's member order: the started item is still found by id.
	f.WriteString(`{"timestamp":"2026-11-29T23:05:01.000Z","type":"event_msg","turnId":"t1","payload":{"item":{"id":"p1","text":"plan","type":"plan"},"type":"itemStarted"}}` + "\n")
	f.Close()
	th := mustRead(t, p, ReadOptions{})
	if len(th.Turns) != 1 || len(th.Turns[0].Items) != 3 {
		t.Fatalf("turns %+v", th.Turns)
	}
	if pl, ok := th.Turns[0].Items[2].(core.PlanItem); !ok || pl.ID != "p1" || pl.Text != "plan" {
		t.Fatalf("plan item %+v", th.Turns[0].Items[2])
	}
	// Records and items of a newer version are skipped without warnings.
	if len(th.Warnings) != 0 {
		t.Fatalf("warnings %v", th.Warnings)
	}
}

func TestTornAndGarbageLines(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-damaged",
		turnScript{id: "t1", prompt: "one", end: "completed"},
		turnScript{id: "t2", prompt: "two", end: "completed"},
		turnScript{id: "t3", prompt: "three", end: "completed"})
	good := must(os.ReadFile(p))
	lines := strings.SplitAfter(string(good), "\n")
	lines = lines[:len(lines)-1]
	// Find turn 2's agent message completion and damage it three ways.
	idx := -1
	for i, l := range lines {
		if strings.Contains(l, `"turnId":"t2"`) && strings.Contains(l, `"agent_message"`) {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatal("no line to damage")
	}
	cases := map[string]string{
		"torn middle line": lines[idx][:len(lines[idx])/2] + "\n",
		"garbage":          "\x00\x00\x00 not json at all\n",
		"torn glued":       lines[idx][:len(lines[idx])/3] + lines[idx],
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			for i, l := range lines {
				if i == idx {
					b.WriteString(bad)
					continue
				}
				b.WriteString(l)
			}
			// And a torn last line.
			b.WriteString(lines[len(lines)-1][:20])
			q := p + "." + strings.ReplaceAll(name, " ", "_")
			os.WriteFile(q, []byte(b.String()), 0o600)
			th := mustRead(t, q, ReadOptions{})
			if len(th.Turns) != 3 || th.Turns[2].Status != TurnCompleted {
				t.Fatalf("turns %v", turnStatuses(th))
			}
			n := len(th.Turns[1].Items)
			if name == "torn glued" {
				if n != 2 {
					t.Fatalf("glued good record lost: %d items", n)
				}
			} else if n != 1 {
				t.Fatalf("turn 2 items %d", n)
			}
			if len(th.Warnings) != 2 {
				t.Fatalf("warnings %v", th.Warnings)
			}
		})
	}
}

// A file whose first line is not the session's metadata is not a
// rollout: reading it fails, naming why, rather than rebuilding a thread
// from whatever it holds.
func TestMissingMetaIsNotARollout(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-nometa", turnScript{id: "t1", prompt: "one", end: "completed"})
	b := must(os.ReadFile(p))
	os.WriteFile(p, b[strings.IndexByte(string(b), '\n')+1:], 0o600)
	_, err := ReadThread(context.Background(), p, ReadOptions{})
	var fe *FileError
	if !errors.Is(err, ErrNotRollout) || !errors.As(err, &fe) || fe.Path != p {
		t.Fatalf("ReadThread = %v, want ErrNotRollout for %s", err, p)
	}
	if !strings.Contains(err.Error(), "not a rollout file") {
		t.Fatalf("error %q does not say it is not a rollout file", err)
	}
}

func TestEmptyAndMissingFiles(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/rollout-2026-11-29T23-01-17-x.jsonl"
	os.WriteFile(p, nil, 0o600)
	if _, err := ReadThread(context.Background(), p, ReadOptions{}); !errors.Is(err, ErrNotRollout) {
		t.Fatalf("empty file: %v, want ErrNotRollout", err)
	}
	if _, err := ReadThread(context.Background(), dir+"/nope.jsonl", ReadOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
}

// TestOrdinalsSurviveRollback: turns and items keep the ordinals they were
// read with as the file grows, a rollback's dropped history is reported as
// reverted spans, and a turn after it is numbered past them.
func TestOrdinalsSurviveRollback(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-ordinals", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "one", end: "completed"})
	recordTurn(t, r, turnScript{id: "t2", prompt: "two", end: "completed"})
	recordTurn(t, r, turnScript{id: "t3", prompt: "three", end: "completed"})
	r.Flush(ctx)
	before := mustRead(t, r.Path(), ReadOptions{})
	if err := r.Rollback(ctx, 2); err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t4", prompt: "four", end: "completed"})
	r.Close(ctx)
	after := mustRead(t, r.Path(), ReadOptions{})
	if len(before.Turns) != 3 || len(after.Turns) != 2 || after.Turns[1].ID != "t4" {
		t.Fatalf("turns before %v after %v", turnStatuses(before), turnStatuses(after))
	}
	if diff := cmp.Diff(before.Turns[0], after.Turns[0]); diff != "" {
		t.Fatalf("kept turn changed (-before +after): %s", diff)
	}
	prev := -1
	for _, tn := range before.Turns {
		if len(tn.ItemOrdinals) != len(tn.Items) || len(tn.Items) == 0 {
			t.Fatalf("turn %s: %d items, ordinals %v", tn.ID, len(tn.Items), tn.ItemOrdinals)
		}
		if tn.Ordinal <= prev {
			t.Fatalf("turn %s ordinal %d not after %d", tn.ID, tn.Ordinal, prev)
		}
		for _, o := range tn.ItemOrdinals {
			if o < tn.Ordinal || o <= prev {
				t.Fatalf("turn %s item ordinals %v", tn.ID, tn.ItemOrdinals)
			}
			prev = o
		}
		prev = max(prev, tn.Ordinal)
	}
	if len(after.Reverted) != 1 {
		t.Fatalf("reverted %v", after.Reverted)
	}
	sp := after.Reverted[0]
	last := before.Turns[2].ItemOrdinals[len(before.Turns[2].ItemOrdinals)-1]
	if sp.From != before.Turns[1].Ordinal || sp.To <= last || after.Turns[1].Ordinal <= sp.To {
		t.Fatalf("reverted %v, t2 at %d, t3's last item at %d, t4 at %d", sp, before.Turns[1].Ordinal, last, after.Turns[1].Ordinal)
	}
}

// A rollback's reverted span starts after everything the thread keeps: an
// item of a kept turn recorded after the dropped turn opened stays out of
// it (a cursor anchored on it stays valid).
func TestRevertedSpanSparesLateItemsOfKeptTurns(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-late", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "one", end: "completed"})
	recordTurn(t, r, turnScript{id: "t2", prompt: "two"})
	late := core.AgentMessageItem{ID: "late", Text: "late"}
	r.RecordEvent(core.Event{TurnID: "t1", Time: baseTime.Add(time.Second), Msg: core.ItemStarted{Item: late}})
	r.RecordEvent(core.Event{TurnID: "t1", Time: baseTime.Add(time.Second), Msg: core.ItemCompleted{Item: late}})
	r.Flush(ctx)
	before := mustRead(t, r.Path(), ReadOptions{})
	t1 := before.Turns[0]
	lateOrd := t1.ItemOrdinals[len(t1.ItemOrdinals)-1]
	if len(before.Turns) != 2 || lateOrd <= before.Turns[1].Ordinal {
		t.Fatalf("the late item (ordinal %d) was not recorded after t2 opened (%d)", lateOrd, before.Turns[1].Ordinal)
	}
	if err := r.Rollback(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	after := mustRead(t, r.Path(), ReadOptions{})
	if len(after.Turns) != 1 || len(after.Reverted) != 1 {
		t.Fatalf("turns %v, reverted %v", turnStatuses(after), after.Reverted)
	}
	for _, o := range after.Turns[0].ItemOrdinals {
		if sp := after.Reverted[0]; o >= sp.From && o <= sp.To {
			t.Fatalf("kept item ordinal %d inside the reverted span %+v", o, sp)
		}
	}
}
