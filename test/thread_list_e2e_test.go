package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/rollout"
)

// writeThreads stores n finished one-turn threads in home, as agentd
// writes them, with creation times a minute apart.
func writeThreads(t *testing.T, home string, n int, meta func(i int, m *rollout.SessionMeta)) []string {
	t.Helper()
	st, err := rollout.Open(home, rollout.Options{Version: "test", NoGitInfo: true, NoIndexCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("01a22000-0000-7000-8000-%012d", i)
		m := rollout.SessionMeta{ID: id, CreatedAt: base.Add(time.Duration(i) * time.Minute), Cwd: "/work/a", ModelProvider: "mock", Model: "mock-model", Source: "vscode"}
		if meta != nil {
			meta(i, &m)
		}
		rec, err := st.Create(m)
		if err != nil {
			t.Fatal(err)
		}
		turn := fmt.Sprintf("turn-%d", i)
		at := m.CreatedAt
		user := core.UserMessageItem{ID: "u" + turn, Content: []core.UserInput{core.TextInput(fmt.Sprintf("question %d", i))}}
		rec.RecordEvent(core.Event{TurnID: turn, Time: at, Msg: core.TurnStarted{Kind: core.TurnRegular, StartedAt: at}})
		rec.RecordItem(turn, model.NewTextMessage("", "user", fmt.Sprintf("question %d", i)))
		rec.RecordEvent(core.Event{TurnID: turn, Time: at, Msg: core.ItemCompleted{Item: user}})
		rec.RecordEvent(core.Event{TurnID: turn, Time: at, Msg: core.TurnComplete{CompletedAt: at}})
		if err := rec.Close(ctx); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// thread/list over a few hundred stored threads: pages that cover every
// thread once, in order both ways, filters, and bad cursors.
func TestThreadListPaging(t *testing.T) {
	home := shortTempDir(t)
	ids := writeThreads(t, home, 300, func(i int, m *rollout.SessionMeta) {
		if i%3 == 0 {
			m.Cwd = "/work/b"
		}
		if i%5 == 0 {
			m.ModelProvider = "other"
		}
	})
	d := Start(t, Options{Home: home})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	var seen []string
	var cursor any
	pages := 0
	for {
		params := map[string]any{"limit": 50}
		if cursor != nil {
			params["cursor"] = cursor
		}
		res := unmarshal(t, WantResult(t, c.Call("thread/list", params)))
		for _, th := range path(res, "data").([]any) {
			seen = append(seen, str(th, "id"))
		}
		pages++
		cursor = path(res, "nextCursor")
		if cursor == nil {
			break
		}
	}
	want := slices.Clone(ids)
	slices.Reverse(want) // newest first
	if !slices.Equal(seen, want) || pages != 6 {
		t.Fatalf("%d pages; ids in order: %v", pages, slices.Equal(seen, want))
	}
	asc := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{"limit": 3, "sortDirection": "asc"})))
	if str(asc, "data", 0, "id") != ids[0] || str(asc, "data", 2, "id") != ids[2] {
		t.Fatalf("ascending %v", asc)
	}
	// A limit over 100 is clamped.
	big := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{"limit": 1000})))
	if n := len(path(big, "data").([]any)); n != 100 {
		t.Fatalf("limit 1000 gave %d", n)
	}
	cwd := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{"limit": 100, "cwd": "/work/b"})))
	if n := len(path(cwd, "data").([]any)); n != 100 {
		t.Fatalf("cwd filter gave %d", n)
	}
	for _, th := range path(cwd, "data").([]any) {
		if str(th, "cwd") != "/work/b" {
			t.Fatalf("cwd filter let through %v", th)
		}
	}
	prov := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{"limit": 100, "modelProviders": []string{"other"}})))
	if n := len(path(prov, "data").([]any)); n != 60 {
		t.Fatalf("provider filter gave %d", n)
	}
	search := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{"searchTerm": "question 299"})))
	if n := len(path(search, "data").([]any)); n != 1 || str(search, "data", 0, "preview") != "question 299" {
		t.Fatalf("search %v", search)
	}
	WantError(t, c.Call("thread/list", map[string]any{"cursor": "garbage"}), codeInvalidRequest, "invalid cursor: garbage")
}
