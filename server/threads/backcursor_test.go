package threads

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/schema/refschema"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// backResult is the part of a thread/resume or thread/revert result these
// tests read: its backwards cursors.
type backResult struct {
	Turns *string `json:"turnsBackwardsCursor"`
	Items *string `json:"itemsBackwardsCursor"`
}

// callBack calls method, checks its result against the reference schema
// and that it has both cursor keys, and returns them.
func callBack(t *testing.T, c *rpctest.Client, method string, params map[string]any) backResult {
	t.Helper()
	m := c.Call(method, params)
	if m.Error != nil {
		t.Fatalf("%s: %s", method, m.Raw)
	}
	if err := refschema.Validator(t).ValidateResponse(method, m.Result); err != nil {
		t.Fatalf("%s result does not match the reference schema: %v", method, err)
	}
	var keys map[string]json.RawMessage
	var r backResult
	if json.Unmarshal(m.Result, &keys) != nil || json.Unmarshal(m.Result, &r) != nil {
		t.Fatalf("%s: %s", method, m.Raw)
	}
	for _, k := range []string{"turnsBackwardsCursor", "itemsBackwardsCursor"} {
		if _, ok := keys[k]; !ok {
			t.Fatalf("%s result without %s", method, k)
		}
	}
	return r
}

// checkAnchor checks that cursor is anchored, including its anchor, in
// the list of scope kind of thread id.
func checkAnchor(t *testing.T, cursor *string, id, kind string) {
	t.Helper()
	if cursor == nil {
		t.Fatalf("no %s backwards cursor", kind)
	}
	var a struct {
		RequestedThreadID string `json:"requestedThreadId"`
		RolloutOrdinal    *int   `json:"rolloutOrdinal"`
		IncludeAnchor     bool   `json:"includeAnchor"`
		Scope             struct {
			Kind string `json:"kind"`
		} `json:"scope"`
	}
	if json.Unmarshal([]byte(*cursor), &a) != nil || a.RequestedThreadID != id || a.RolloutOrdinal == nil || !a.IncludeAnchor || a.Scope.Kind != kind {
		t.Fatalf("cursor %s", *cursor)
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// thread/resume (of a loaded thread or a stored one, with or without its
// turns) and thread/revert fill turnsBackwardsCursor and
// itemsBackwardsCursor as the reference does: anchored on the last turn
// and the last item, including them, so that thread/turns/list (desc, its
// default) and thread/items/list (desc) page back from the thread's end
// and, ascending, give just that turn or item; null once no turn is left.
func TestResumeAndRevertGiveBackwardsCursors(t *testing.T) {
	f := newFixture(t, func(cfg *config.Config) { cfg.Server.ThreadUnloadDelay = 20 * time.Millisecond })
	a := f.client()
	id := f.startThread(a, nil)
	turns := runTurns(t, a, id, 3)
	allItems, _ := callPage(t, a, "thread/items/list", map[string]any{"threadId": id, "limit": 100})
	items := allItems.ids()
	if len(items) < 6 {
		t.Fatalf("items %v", items)
	}
	// pages checks what the cursors of r give: every turn and item up to
	// the last ones (tn turns, in items), newest first, and the last ones
	// alone ascending.
	pages := func(r backResult, tn []string, in []string) {
		t.Helper()
		checkAnchor(t, r.Turns, id, scopeTurns)
		checkAnchor(t, r.Items, id, scopeItems)
		for _, tc := range []struct {
			method string
			params map[string]any
			want   []string
		}{
			{"thread/turns/list", map[string]any{"cursor": *r.Turns}, reversed(tn)},
			{"thread/turns/list", map[string]any{"cursor": *r.Turns, "sortDirection": "desc"}, reversed(tn)},
			{"thread/turns/list", map[string]any{"cursor": *r.Turns, "sortDirection": "asc"}, tn[len(tn)-1:]},
			{"thread/items/list", map[string]any{"cursor": *r.Items, "sortDirection": "desc"}, reversed(in)},
			{"thread/items/list", map[string]any{"cursor": *r.Items}, in[len(in)-1:]},
		} {
			tc.params["threadId"] = id
			p, e := callPage(t, a, tc.method, tc.params)
			if e != nil || !slices.Equal(p.ids(), tc.want) {
				t.Fatalf("%s %v: %v (%v), want %v", tc.method, tc.params, p.ids(), e, tc.want)
			}
		}
	}

	// The thread loaded: a second client joins it.
	b := f.client()
	loaded := callBack(t, b, "thread/resume", map[string]any{"threadId": id, "excludeTurns": true})
	pages(loaded, turns, items)
	if full := callBack(t, b, "thread/resume", map[string]any{"threadId": id}); *full.Turns != *loaded.Turns || *full.Items != *loaded.Items {
		t.Fatalf("with turns %s %s, without %s %s", *full.Turns, *full.Items, *loaded.Turns, *loaded.Items)
	}

	// Stored: unloaded, then resumed, with and without its turns.
	for _, c := range []*rpctest.Client{a, b} {
		c.Call("thread/unsubscribe", map[string]any{"threadId": id})
	}
	waitFor(t, "the thread to unload", func() bool { return f.sv.threads.get(id) == nil })
	for _, exclude := range []bool{true, false} {
		waitFor(t, "the thread to unload", func() bool { return f.sv.threads.get(id) == nil })
		c := f.client()
		r := callBack(t, c, "thread/resume", map[string]any{"threadId": id, "excludeTurns": exclude})
		if r.Turns == nil || r.Items == nil || *r.Turns != *loaded.Turns || *r.Items != *loaded.Items {
			t.Fatalf("stored resume (excludeTurns %v) %v %v, loaded %s %s", exclude, r.Turns, r.Items, *loaded.Turns, *loaded.Items)
		}
		c.Call("thread/unsubscribe", map[string]any{"threadId": id})
	}
	waitFor(t, "the thread to unload", func() bool { return f.sv.threads.get(id) == nil })
	a.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true})

	// A revert: anchored on what is left.
	rv := callBack(t, a, "thread/revert", map[string]any{"threadId": id, "beforeTurnId": turns[2]})
	left, _ := callPage(t, a, "thread/items/list", map[string]any{"threadId": id, "limit": 100})
	if kept := len(items) * 2 / 3; !slices.Equal(left.ids(), items[:kept]) {
		t.Fatalf("items after the revert %v of %v", left.ids(), items)
	}
	pages(rv, turns[:2], left.ids())
	if r := callBack(t, a, "thread/resume", map[string]any{"threadId": id, "excludeTurns": true}); *r.Turns != *rv.Turns || *r.Items != *rv.Items {
		t.Fatalf("resume after the revert %s %s, revert %s %s", *r.Turns, *r.Items, *rv.Turns, *rv.Items)
	}
	// Nothing left: null.
	if r := callBack(t, a, "thread/revert", map[string]any{"threadId": id, "beforeTurnId": turns[0]}); r.Turns != nil || r.Items != nil {
		t.Fatalf("revert of every turn %v %v", r.Turns, r.Items)
	}
	if r := callBack(t, a, "thread/resume", map[string]any{"threadId": id, "excludeTurns": true}); r.Turns != nil || r.Items != nil {
		t.Fatalf("resume with no turn left %v %v", r.Turns, r.Items)
	}
}

// thread/resume's initialTurnsPage is the first page thread/turns/list
// gives with the same limit, view and direction, as in the reference: the
// newest turns first by default, in the summary view, and its nextCursor
// goes on from there.
func TestResumeInitialTurnsPage(t *testing.T) {
	f := newFixture(t, nil)
	a := f.client()
	id := f.startThread(a, nil)
	for _, q := range []string{"one", "two", "three"} {
		a.Call("turn/start", map[string]any{"threadId": id, "input": textInput(q)})
		a.ReadUntil(method("turn/completed"))
	}
	b := rpctest.Connect(t, f.s.ServeStream)
	b.Initialize(map[string]any{"experimentalApi": true}) // initialTurnsPage is experimental
	type page struct {
		Data []struct {
			ID        string
			ItemsView string
		}
		NextCursor *string
	}
	var r struct{ InitialTurnsPage *page }
	m := b.Call("thread/resume", map[string]any{"threadId": id, "excludeTurns": true, "initialTurnsPage": map[string]any{"limit": 2}})
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.InitialTurnsPage == nil {
		t.Fatalf("resume: %s", m.Raw)
	}
	if err := refschema.Validator(t).ValidateResponse("thread/resume", m.Result); err != nil {
		t.Fatalf("the resume result does not match the reference schema: %v", err)
	}
	var list page
	if m := b.Call("thread/turns/list", map[string]any{"threadId": id, "limit": 2}); m.Error != nil || json.Unmarshal(m.Result, &list) != nil {
		t.Fatalf("turns/list: %s", m.Raw)
	}
	got := r.InitialTurnsPage
	if len(got.Data) != 2 || got.Data[0].ItemsView != "summary" || got.NextCursor == nil ||
		got.Data[0].ID != list.Data[0].ID || got.Data[1].ID != list.Data[1].ID {
		t.Fatalf("initial page %+v, turns/list %+v", got, list)
	}
	var rest page
	if m := b.Call("thread/turns/list", map[string]any{"threadId": id, "cursor": *got.NextCursor}); m.Error != nil || json.Unmarshal(m.Result, &rest) != nil || len(rest.Data) != 1 {
		t.Fatalf("the page after it: %s", m.Raw)
	}
}
