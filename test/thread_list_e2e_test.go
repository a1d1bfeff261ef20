package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// excludedThreadIds leaves threads out before the page is cut, and is
// checked; the experimental filters on what agentd does not keep
// (projects, sections, spawned and attached threads) select nothing, or
// everything for null, with the reference's errors.
func TestThreadListExclusionsAndFiltersOnWhatIsNotKept(t *testing.T) {
	home := shortTempDir(t)
	ids := writeThreads(t, home, 5, nil)
	d := Start(t, Options{Home: home})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	list := func(params map[string]any) []string {
		t.Helper()
		var out []string
		for _, th := range path(unmarshal(t, WantResult(t, c.Call("thread/list", params))), "data").([]any) {
			out = append(out, str(th, "id"))
		}
		return out
	}
	newest := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if got := list(map[string]any{"limit": 2, "excludedThreadIds": []string{ids[4]}}); !slices.Equal(got, newest[1:3]) {
		t.Fatalf("limit 2 excluding the newest: %v, want %v", got, newest[1:3])
	}
	if got := list(map[string]any{"excludedThreadIds": []string{"urn:uuid:" + ids[3]}}); slices.Contains(got, ids[3]) || len(got) != 4 {
		t.Fatalf("excluding a urn: %v", got)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("01a22000-0000-7000-9000-%012d", i)
	}
	WantError(t, c.Call("thread/list", map[string]any{"excludedThreadIds": many}), codeInvalidParams, "excludedThreadIds accepts at most 100 entries")
	if m := c.Call("thread/list", map[string]any{"excludedThreadIds": []string{"nope"}}); m.Error == nil ||
		m.Error.Code != codeInvalidParams || !strings.HasPrefix(m.Error.Message, "invalid excluded thread id: ") {
		t.Fatalf("an id that is not one: %s", m.Raw)
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"unassigned", map[string]any{"projectId": nil}, newest},
		{"unsectioned", map[string]any{"sectionId": nil}, newest},
		{"a section", map[string]any{"sectionId": "s1"}, nil},
		{"children", map[string]any{"parentThreadId": ids[0]}, nil},
		{"descendants", map[string]any{"ancestorThreadId": ids[0]}, nil},
		{"attached", map[string]any{"attachedToThreadId": ids[0]}, nil},
	} {
		if got := list(tc.params); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	WantError(t, c.Call("thread/list", map[string]any{"projectId": "p1"}), codeInvalidParams, "project not found: p1")
	WantError(t, c.Call("thread/list", map[string]any{"projectId": ""}), codeInvalidParams, "projectId must not be empty")
	WantError(t, c.Call("thread/list", map[string]any{"parentThreadId": ids[0], "ancestorThreadId": ids[0]}), codeInvalidRequest,
		"parentThreadId and ancestorThreadId are mutually exclusive")
	WantError(t, c.Call("thread/list", map[string]any{"attachedToThreadId": ids[0], "parentThreadId": ids[0]}), codeInvalidRequest,
		"attachedToThreadId cannot be combined with parentThreadId or ancestorThreadId")
	WantError(t, c.Call("thread/list", map[string]any{"includeAttachedThreads": true}), codeInvalidRequest,
		"includeAttachedThreads requires a non-empty searchTerm")
}
