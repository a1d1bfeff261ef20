package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/rollout"
)

// history: K stored threads, written straight into a new home, and one
// long thread among them; the daemon is started on that home twice (cold:
// no index cache; warm: with the one the first start wrote).
func (r *run) history() {
	k, items := r.sz.threads, r.sz.historyItems
	name := fmt.Sprintf("history: %s stored threads, one of %s items", thousands(int64(k)), thousands(int64(items)))
	r.scenario("hist", name, func(ctx context.Context) error {
		home, big, err := r.historyHome(k, items)
		if err != nil {
			return err
		}

		cold, err := r.historyPass(ctx, home, big, true)
		if err != nil {
			return err
		}
		warm, err := r.historyPass(ctx, home, big, false)
		if err != nil {
			return err
		}
		r.add(name, "hist/start-cold", "daemon start → initialize answered, first start on the home", ms(cold.start), "ms")
		r.add(name, "hist/start-warm", "daemon start → initialize answered, next start", ms(warm.start), "ms")
		r.add(name, "hist/list-cold", "thread/list page, first call after the first start", ms(cold.listFirst), "ms")
		r.add(name, "hist/list-restart", "thread/list page, first call after the next start", ms(warm.listFirst), "ms")
		r.add(name, "hist/list-warm", "thread/list page, warm (median of 10)", ms(cold.listWarm), "ms")
		r.add(name, "hist/page", "threads in the page", float64(cold.page), "")
		r.add(name, "hist/read-cold", "thread/read of the long thread with its turns, first", ms(cold.readFirst), "ms")
		r.add(name, "hist/read-warm", "thread/read of the long thread, warm (median of 5)", ms(cold.readWarm), "ms")
		r.add(name, "hist/read-items", "items in that thread/read", float64(cold.items), "")
		r.add(name, "hist/resume-cold", "thread/resume of the long thread → first event (not loaded)", ms(cold.resumeFirst), "ms")
		r.add(name, "hist/resume-cold-result", "thread/resume of the long thread → its result (not loaded)", ms(cold.resumeResult), "ms")
		r.add(name, "hist/resume-warm", "thread/resume by a second client → first event (loaded)", ms(cold.resumeWarm), "ms")
		return nil
	})
}

// historyHome returns a home with k stored threads, one of them (big) of
// items items: a new one, or with -history-home one kept from an earlier
// run at the same sizes, its index cache removed (the first start must be
// one).
func (r *run) historyHome(k, items int) (home, big string, err error) {
	write := func(home, cwd string) (string, error) {
		genStart := time.Now()
		big, err := writeHistory(home, cwd, k, items)
		if err != nil {
			return "", fmt.Errorf("writing the threads: %v", err)
		}
		r.logf("%d threads written in %.1f s", k, time.Since(genStart).Seconds())
		return big, nil
	}
	if r.sz.historyHome == "" || r.t.ref {
		home, cwd, err := r.t.newHome("history")
		if err != nil {
			return "", "", err
		}
		big, err := write(home, cwd)
		return home, big, err
	}
	home = filepath.Join(r.sz.historyHome, fmt.Sprintf("threads-%d-items-%d", k, items))
	marker := filepath.Join(home, "agentd-load-history")
	cwd, err := r.t.configure(home)
	if err != nil {
		return "", "", err
	}
	if b, err := os.ReadFile(marker); err == nil {
		big = strings.TrimSpace(string(b))
		r.logf("using the %d threads kept in %s", k, home)
	} else {
		if err := os.RemoveAll(filepath.Join(home, rollout.SessionsDir)); err != nil {
			return "", "", err
		}
		if big, err = write(home, cwd); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(marker, []byte(big+"\n"), 0o600); err != nil {
			return "", "", err
		}
	}
	caches, _ := filepath.Glob(filepath.Join(home, "rollout-index.*"))
	for _, c := range caches {
		if err := os.Remove(c); err != nil {
			return "", "", err
		}
	}
	return home, big, nil
}

// historyFigures are one start's timings.
type historyFigures struct {
	start, listFirst, listWarm, readFirst, readWarm time.Duration
	resumeFirst, resumeResult, resumeWarm           time.Duration
	page, items                                     int
}

// historyPass starts the daemon on home and times what a client does
// first; full adds the warm timings, the read and the resumes.
func (r *run) historyPass(ctx context.Context, home, big string, full bool) (historyFigures, error) {
	var f historyFigures
	d, err := r.t.start(home)
	if err != nil {
		return f, err
	}
	r.cur = d
	defer d.stop()
	c, took, err := d.dialReady(ctx, "c0", clientOpts{})
	if err != nil {
		return f, err
	}
	defer c.close()
	f.start = took
	var res json.RawMessage
	if f.listFirst, res, err = timed(ctx, c, "thread/list", map[string]any{}); err != nil {
		return f, err
	}
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(res, &page); err != nil {
		return f, fmt.Errorf("thread/list result: %v", err)
	}
	f.page = len(page.Data)
	if !full {
		return f, nil
	}
	if f.listWarm, err = median(ctx, 10, c, "thread/list", map[string]any{}); err != nil {
		return f, err
	}
	read := map[string]any{"threadId": big, "includeTurns": true}
	if f.readFirst, res, err = timed(ctx, c, "thread/read", read); err != nil {
		return f, err
	}
	if f.items, err = countItems(res); err != nil {
		return f, err
	}
	if f.readWarm, err = median(ctx, 5, c, "thread/read", read); err != nil {
		return f, err
	}
	if f.resumeFirst, f.resumeResult, err = timeResume(ctx, d, big); err != nil {
		return f, err
	}
	f.resumeWarm, _, err = timeResume(ctx, d, big)
	return f, err
}

// timed sends one request and returns the time to its answer (read, not
// decoded) and its result.
func timed(ctx context.Context, c *client, method string, params any) (time.Duration, json.RawMessage, error) {
	start := time.Now()
	ch, err := c.send(ctx, method, params)
	if err != nil {
		return 0, nil, err
	}
	rep, err := wait(ctx, ch)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %v", method, err)
	}
	if rep.err != nil {
		return 0, nil, fmt.Errorf("%s: %w", method, rep.err)
	}
	return rep.at.Sub(start), rep.result, nil
}

// median times n calls in a row.
func median(ctx context.Context, n int, c *client, method string, params any) (time.Duration, error) {
	var ds []time.Duration
	for range n {
		d, _, err := timed(ctx, c, method, params)
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// timeResume resumes thread on a new connection: the time to the first
// message the daemon sends for it (a notification or the result), and to
// the result.
func timeResume(ctx context.Context, d *daemon, thread string) (first, result time.Duration, err error) {
	c, err := dial(ctx, d.url, "resumer", clientOpts{})
	if err != nil {
		return 0, 0, err
	}
	defer c.close()
	if err := c.initialize(ctx); err != nil {
		return 0, 0, err
	}
	// Notifications of the handshake (configWarning, …) must not count:
	// wait until nothing has arrived for a moment.
	for last := c.msgs.Load(); ; {
		time.Sleep(50 * time.Millisecond)
		if now := c.msgs.Load(); now == last {
			break
		} else {
			last = now
		}
	}
	c.markFirst()
	start := time.Now()
	ch, err := c.send(ctx, "thread/resume", map[string]any{"threadId": thread})
	if err != nil {
		return 0, 0, err
	}
	rep, err := wait(ctx, ch)
	if err != nil {
		return 0, 0, fmt.Errorf("thread/resume: %v", err)
	}
	if rep.err != nil {
		return 0, 0, fmt.Errorf("thread/resume: %w", rep.err)
	}
	return time.Unix(0, c.firstAt.Load()).Sub(start), rep.at.Sub(start), nil
}

// countItems counts the items of a thread/read result's turns.
func countItems(res json.RawMessage) (int, error) {
	var r struct {
		Thread struct {
			Turns []struct {
				Items []json.RawMessage `json:"items"`
			} `json:"turns"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return 0, fmt.Errorf("thread/read result: %v", err)
	}
	n := 0
	for _, t := range r.Thread.Turns {
		n += len(t.Items)
	}
	return n, nil
}

// writeHistory writes k threads into home's sessions in the rollout
// format, one minute apart and ending now: one long thread of items
// items (turns of a user message, reasoning, a command and an answer)
// and k-1 small ones (one turn). The long one and one small one (the
// template) go through core/rollout's writer; the others are copies of
// the template with their own id and dates, written directly, which is
// what makes 100,000 threads quick to write. It returns the long
// thread's id.
func writeHistory(home, cwd string, k, items int) (string, error) {
	st, err := rollout.Open(home, rollout.Options{NoGitInfo: true, NoIndexCache: true, NoIndexWarmUp: true})
	if err != nil {
		return "", err
	}
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	base := now.Add(-time.Duration(k) * time.Minute)
	seed := rand.Uint64()
	idAt := func(at time.Time, i int) string { return uuid7(at, seed^uint64(i)) }
	ctx := context.Background()

	bigAt := now.Add(-time.Minute / 2)
	big := idAt(bigAt, -1)
	rec, err := st.Create(meta(big, bigAt, cwd))
	if err != nil {
		return "", err
	}
	for t := range max(items/4, 1) {
		recordTurn(rec, fmt.Sprintf("turn-%d", t), bigAt, cwd, true)
	}
	if err := rec.Close(ctx); err != nil {
		return "", err
	}
	if k < 2 {
		return big, nil
	}

	tmplID := idAt(base, 0)
	rec, err = st.Create(meta(tmplID, base, cwd))
	if err != nil {
		return "", err
	}
	recordTurn(rec, "turn-0", base, cwd, false)
	if err := rec.Close(ctx); err != nil {
		return "", err
	}
	tmpl, err := os.ReadFile(st.PathFor(base, tmplID))
	if err != nil {
		return "", err
	}
	const layout = "2006-01-02T15:04:05.000Z"
	oldID, oldAt := []byte(tmplID), []byte(base.Format(layout))
	dirs := map[string]bool{}
	for i := 1; i < k-1; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		id := idAt(at, i)
		b := bytes.ReplaceAll(tmpl, oldID, []byte(id))
		b = bytes.ReplaceAll(b, oldAt, []byte(at.Format(layout)))
		p := st.PathFor(at, id)
		if dir := filepath.Dir(p); !dirs[dir] {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return "", err
			}
			dirs[dir] = true
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return "", err
		}
		if err := os.Chtimes(p, at, at); err != nil {
			return "", err
		}
	}
	return big, nil
}

func meta(id string, at time.Time, cwd string) rollout.SessionMeta {
	return rollout.SessionMeta{ID: id, CreatedAt: at, Cwd: cwd, ModelProvider: "mock", Model: "mock-model",
		Source: "vscode", Originator: "agentd-load", CLIVersion: "0.1.0"}
}

// recordTurn records one turn the way the turn loop does: its settings, a
// user message, (rich) reasoning and a command, an answer, usage, the end.
// Every event is dated at.
func recordTurn(rec *rollout.Recorder, id string, at time.Time, cwd string, rich bool) {
	ev := func(msg core.EventMsg) { rec.RecordEvent(core.Event{TurnID: id, Time: at, Msg: msg}) }
	rec.RecordTurnContext(id, rollout.TurnContext{Cwd: cwd, Model: "mock-model", ApprovalPolicy: policy.ApprovalNever, Sandbox: policy.FullAccess()})
	ev(core.TurnStarted{Kind: core.TurnRegular, StartedAt: at, ModelContextWindow: 200_000})
	prompt := "please look at the failing test in " + id + " and fix it"
	um := core.UserMessageItem{ID: id + "-user", Content: []core.UserInput{core.TextInput(prompt)}}
	ev(core.ItemStarted{Item: um})
	rec.RecordItem(id, model.NewTextMessage("", "user", prompt))
	ev(core.ItemCompleted{Item: um})
	if rich {
		rs := core.ReasoningItem{ID: id + "-rs", Summary: []string{"Reading the test output before changing anything."}}
		ev(core.ItemStarted{Item: core.ReasoningItem{ID: rs.ID}})
		rec.RecordItem(id, model.NewResponseItem(map[string]any{"type": "reasoning", "id": rs.ID,
			"summary": []map[string]string{{"type": "summary_text", "text": rs.Summary[0]}}, "encrypted_content": "ZW5jcnlwdGVk"}))
		ev(core.ItemCompleted{Item: rs})
		call := id + "-call"
		rec.RecordItem(id, model.NewResponseItem(map[string]any{"type": "function_call", "name": "exec_command",
			"arguments": `{"cmd":"go test ./..."}`, "call_id": call}))
		cmd := core.CommandExecutionItem{ID: call, Command: "go test ./...", Argv: []string{"bash", "-lc", "go test ./..."},
			Cwd: cwd, Status: core.StatusInProgress, Source: core.SourceAgent}
		ev(core.ItemStarted{Item: cmd})
		out, code, dur := "ok  \tproject/pkg\t0.012s\n", 0, int64(812)
		cmd.Status, cmd.AggregatedOutput, cmd.ExitCode, cmd.DurationMs = core.StatusCompleted, &out, &code, &dur
		rec.RecordItem(id, model.NewFunctionCallOutput("", call, out))
		ev(core.ItemCompleted{Item: cmd})
	}
	answer := core.AgentMessageItem{ID: id + "-msg", Text: "The test passes now: the loop bound was off by one."}
	ev(core.ItemStarted{Item: core.AgentMessageItem{ID: answer.ID}})
	rec.RecordItem(id, model.NewTextMessage(answer.ID, "assistant", answer.Text))
	ev(core.ItemCompleted{Item: answer})
	u := model.TokenUsage{InputTokens: 1200, OutputTokens: 300, TotalTokens: 1500}
	ev(core.TokenCount{Info: core.TokenUsageInfo{Total: u, Last: u, ModelContextWindow: 200_000}})
	ev(core.TurnComplete{LastAgentMessage: answer.Text, CompletedAt: at, Duration: 2 * time.Second})
}

// uuid7 is a UUID version 7 whose time is at (to the millisecond), the
// rest taken from n.
func uuid7(at time.Time, n uint64) string {
	ms := uint64(at.UnixMilli())
	return fmt.Sprintf("%08x-%04x-7%03x-%04x-%012x", ms>>16, ms&0xffff, (n>>52)&0xfff, 0x8000|(n>>40)&0x3fff, n&0xffffffffffff)
}
