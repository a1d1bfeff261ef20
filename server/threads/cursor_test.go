package threads

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

type anchorPage struct {
	Data []struct {
		ID   string `json:"id"`
		Item struct {
			ID string `json:"id"`
		} `json:"item"`
	} `json:"data"`
	NextCursor      *string `json:"nextCursor"`
	BackwardsCursor *string `json:"backwardsCursor"`
}

func callPage(t *testing.T, c *rpctest.Client, method string, params map[string]any) (anchorPage, *rpctest.Msg) {
	t.Helper()
	m := c.Call(method, params)
	if m.Error != nil {
		return anchorPage{}, &m
	}
	var p anchorPage
	if err := json.Unmarshal(m.Result, &p); err != nil {
		t.Fatalf("%s: %s", method, m.Raw)
	}
	return p, nil
}

func (p anchorPage) ids() []string {
	var out []string
	for _, d := range p.Data {
		out = append(out, d.ID+d.Item.ID)
	}
	return out
}

func runTurns(t *testing.T, c *rpctest.Client, id string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		m := c.Call("turn/start", map[string]any{"threadId": id, "input": textInput(fmt.Sprintf("prompt %d", i))})
		var r struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
			t.Fatalf("turn/start: %s", m.Raw)
		}
		ids = append(ids, r.Turn.ID)
		c.ReadUntil(method("turn/completed"))
	}
	return ids
}

// Turn cursors are anchored on the turn, not on a position: a page after
// new turns continues where it was; a revert refuses the cursors anchored
// in what it took out, as the reference does; cursors that are not the
// list's own are refused with the reference's text.
func TestTurnCursorsAreAnchored(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	id := f.startThread(c, nil)
	turns := runTurns(t, c, id, 4) // t0 t1 t2 t3
	list := func(params map[string]any) (anchorPage, *rpctest.Msg) {
		params["threadId"] = id
		return callPage(t, c, "thread/turns/list", params)
	}
	p1, _ := list(map[string]any{"limit": 1})
	if got := p1.ids(); len(got) != 1 || got[0] != turns[3] || p1.NextCursor == nil || p1.BackwardsCursor == nil {
		t.Fatalf("first page %v %v", got, p1.NextCursor)
	}
	var shape map[string]any
	if json.Unmarshal([]byte(*p1.NextCursor), &shape) != nil || shape["requestedThreadId"] != id || shape["includeAnchor"] != false ||
		!strings.Contains(*p1.NextCursor, `"scope":{"kind":"turns"}`) {
		t.Fatalf("cursor %s", *p1.NextCursor)
	}
	p2, _ := list(map[string]any{"limit": 1, "cursor": *p1.NextCursor})
	if got := p2.ids(); len(got) != 1 || got[0] != turns[2] {
		t.Fatalf("second page %v", got)
	}
	// The backwards cursor includes its anchor, in either direction.
	if b, _ := list(map[string]any{"limit": 1, "cursor": *p2.BackwardsCursor}); len(b.ids()) != 1 || b.ids()[0] != turns[2] {
		t.Fatalf("backwards desc %v", b.ids())
	}
	if b, _ := list(map[string]any{"limit": 2, "cursor": *p2.BackwardsCursor, "sortDirection": "asc"}); strings.Join(b.ids(), ",") != turns[2]+","+turns[3] {
		t.Fatalf("backwards asc %v", b.ids())
	}
	// A new turn does not move an old cursor.
	turns = append(turns, runTurns(t, c, id, 1)...)
	if again, _ := list(map[string]any{"limit": 1, "cursor": *p1.NextCursor}); len(again.ids()) != 1 || again.ids()[0] != turns[2] {
		t.Fatalf("after a new turn the cursor lands on %v", again.ids())
	}
	older, _ := list(map[string]any{"limit": 1, "cursor": *p2.NextCursor}) // anchored on t2
	if len(older.ids()) != 1 || older.ids()[0] != turns[1] {
		t.Fatalf("page past t2 %v", older.ids())
	}
	// Revert t2 and later: cursors anchored on them are refused, those
	// anchored before still page.
	if m := c.Call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": turns[2]}); m.Error != nil {
		t.Fatalf("revert: %s", m.Raw)
	}
	for _, cur := range []string{*p1.NextCursor, *p2.NextCursor} {
		_, e := list(map[string]any{"limit": 1, "cursor": cur})
		if e == nil || e.Error.Code != -32600 || e.Error.Message != "invalid cursor: position outside thread lineage" {
			t.Fatalf("cursor anchored on a reverted turn: %v", e)
		}
	}
	first, _ := list(map[string]any{"limit": 1, "sortDirection": "asc"})
	if rest, _ := list(map[string]any{"limit": 5, "cursor": *first.NextCursor, "sortDirection": "asc"}); strings.Join(rest.ids(), ",") != turns[1] {
		t.Fatalf("after the revert %v", rest.ids())
	}
	// Not a cursor of this list.
	other := strings.Replace(*first.NextCursor, id, "00000000-0000-0000-0000-000000000000", 1)
	items := strings.Replace(*first.NextCursor, `"turns"`, `"itemsByCreatedAtOrdinal"`, 1)
	for _, bad := range []string{"garbage", "1", "0", "", "{}", other, items} {
		_, e := list(map[string]any{"cursor": bad})
		if e == nil || e.Error.Message != "invalid cursor: "+bad {
			t.Fatalf("cursor %q: %v", bad, e)
		}
	}
}

// Item cursors are anchored the same way, in their own scope.
func TestItemCursorsAreAnchored(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	id := f.startThread(c, nil)
	turns := runTurns(t, c, id, 3)
	list := func(params map[string]any) (anchorPage, *rpctest.Msg) {
		params["threadId"] = id
		return callPage(t, c, "thread/items/list", params)
	}
	all, _ := list(map[string]any{"limit": 100})
	if len(all.ids()) < 6 || all.ids()[0] == "" {
		t.Fatalf("items %v", all.ids())
	}
	p1, _ := list(map[string]any{"limit": 2})
	if p1.NextCursor == nil || !strings.Contains(*p1.NextCursor, `"scope":{"kind":"itemsByCreatedAtOrdinal"}`) {
		t.Fatalf("first page %+v", p1)
	}
	p2, _ := list(map[string]any{"limit": 2, "cursor": *p1.NextCursor})
	if strings.Join(p2.ids(), ",") != strings.Join(all.ids()[2:4], ",") {
		t.Fatalf("second page %v of %v", p2.ids(), all.ids())
	}
	if back, _ := list(map[string]any{"limit": 2, "cursor": *p2.BackwardsCursor, "sortDirection": "desc"}); strings.Join(back.ids(), ",") != all.ids()[2]+","+all.ids()[1] {
		t.Fatalf("backwards %v of %v", back.ids(), all.ids())
	}
	// A cursor anchored in the last turn, reverted.
	last, _ := list(map[string]any{"limit": 1, "sortDirection": "desc"})
	if m := c.Call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": turns[2]}); m.Error != nil {
		t.Fatalf("revert: %s", m.Raw)
	}
	if _, e := list(map[string]any{"cursor": *last.BackwardsCursor}); e == nil || e.Error.Message != "invalid cursor: position outside thread lineage" {
		t.Fatalf("item cursor in reverted history: %v", e)
	}
	turnsCursor := strings.Replace(*p1.NextCursor, `"itemsByCreatedAtOrdinal"`, `"turns"`, 1)
	for _, bad := range []string{"garbage", "2", turnsCursor} {
		if _, e := list(map[string]any{"cursor": bad}); e == nil || e.Error.Message != "invalid cursor: "+bad {
			t.Fatalf("cursor %q: %v", bad, e)
		}
	}
}

// thread/resume with history is not ignored: a loaded thread refuses it
// with the reference's text, an unloaded one with agentd's.
func TestResumeWithHistoryIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	c := rpctest.Connect(t, f.s.ServeStream)
	c.Initialize(map[string]any{"experimentalApi": true})
	id := f.startThread(c, nil)
	hist := []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hist"}}}}
	for _, h := range []any{hist, []any{}} {
		m := c.Call("thread/resume", map[string]any{"threadId": id, "history": h, "model": "other"})
		if m.Error == nil || m.Error.Code != -32600 || m.Error.Message != "cannot resume thread "+id+" with history while it is already running" {
			t.Fatalf("history on a loaded thread: %s", m.Raw)
		}
	}
	m := c.Call("thread/resume", map[string]any{"threadId": "01a23885-1fca-7913-bca0-0b75abc10fed", "history": hist})
	if m.Error == nil || m.Error.Message != "thread/resume with history is not supported" {
		t.Fatalf("history on an unloaded thread: %s", m.Raw)
	}
}
