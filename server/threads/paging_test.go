package threads

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/schema/refschema"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// listed is a list result: its items' ids and its next cursor.
type listed struct {
	ids  []string
	next *string
}

func (p listed) String() string {
	if p.next == nil {
		return fmt.Sprintf("%v next=null", p.ids)
	}
	return fmt.Sprintf("%v next=%q", p.ids, *p.next)
}

// listPage calls a list method, checks its result against the reference
// schema and returns the page; ids are read from data (strings) or from
// data[].id (objects).
func listPage(t *testing.T, c *rpctest.Client, method string, params map[string]any) listed {
	t.Helper()
	m := c.Call(method, params)
	if m.Error != nil {
		t.Fatalf("%s %v: %s", method, params, m.Raw)
	}
	if err := refschema.Validator(t).ValidateResponse(method, m.Result); err != nil {
		t.Fatalf("%s result %s does not match the reference schema: %v", method, m.Result, err)
	}
	var r struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor *string           `json:"nextCursor"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatalf("%s: %s: %v", method, m.Result, err)
	}
	p := listed{ids: []string{}, next: r.NextCursor}
	for _, d := range r.Data {
		var id string
		if json.Unmarshal(d, &id) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(d, &obj); err != nil {
				t.Fatalf("%s item %s: %v", method, d, err)
			}
			id = obj.ID
		}
		p.ids = append(p.ids, id)
	}
	return p
}

func wantPage(t *testing.T, got listed, ids []string, next string) {
	t.Helper()
	want := listed{ids: ids}
	if next != "" {
		want.next = &next
	}
	if got.String() != want.String() {
		t.Fatalf("page %s, want %s", got, want)
	}
}

// model/list pages by offset, as the reference does: the cursor is the
// next model's index in decimal; a limit of 0 counts as 1; a cursor that is
// not a number, or past the end, is refused.
func TestModelListPages(t *testing.T) {
	f := newFixture(t, func(cfg *config.Config) { cfg.Model = "gpt-test" })
	c := f.client()
	all := []string{"gpt-test", config.DemoModel}
	wantPage(t, listPage(t, c, "model/list", map[string]any{}), all, "")
	wantPage(t, listPage(t, c, "model/list", map[string]any{"limit": 100}), all, "")
	// No model is hidden: includeHidden changes nothing.
	wantPage(t, listPage(t, c, "model/list", map[string]any{"includeHidden": true}), all, "")
	wantPage(t, listPage(t, c, "model/list", map[string]any{"limit": 1}), all[:1], "1")
	wantPage(t, listPage(t, c, "model/list", map[string]any{"limit": 0}), all[:1], "1")
	wantPage(t, listPage(t, c, "model/list", map[string]any{"limit": 1, "cursor": "1"}), all[1:], "")
	wantPage(t, listPage(t, c, "model/list", map[string]any{"cursor": "+1"}), all[1:], "")
	wantPage(t, listPage(t, c, "model/list", map[string]any{"cursor": "2"}), []string{}, "")
	wantPage(t, listPage(t, c, "model/list", map[string]any{"cursor": "0", "limit": 1}), all[:1], "1")
	for _, bad := range []string{"invalid", "", "-1", "1.0", " 1", "+", "0x1", "99999999999999999999"} {
		rpctest.WantError(t, c.Call("model/list", map[string]any{"cursor": bad}), -32600, "invalid cursor: "+bad)
	}
	rpctest.WantError(t, c.Call("model/list", map[string]any{"cursor": "3"}), -32600, "cursor 3 exceeds total models 2")
	rpctest.WantError(t, c.Call("model/list", map[string]any{"cursor": "+03"}), -32600, "cursor 3 exceeds total models 2")
	long := strings.Repeat("x", 300)
	m := c.Call("model/list", map[string]any{"cursor": long})
	rpctest.WantError(t, m, -32600, "")
	if strings.Contains(m.Error.Message, long) {
		t.Fatalf("a long cursor is echoed whole: %s", m.Error.Message)
	}
}

// thread/loaded/list pages over the sorted ids, as the reference does: the
// cursor is the last id of the page before (nextCursor), the next page
// starts at the first id after it, loaded or not; a limit of 0 counts as
// 1; a cursor that is not a UUID is refused, unless nothing is loaded.
func TestThreadLoadedListPages(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	// Nothing loaded: an empty page, whatever the cursor.
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{}), []string{}, "")
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"cursor": "garbage", "limit": 1}), []string{}, "")

	ids := []string{f.startThread(c, nil), f.startThread(c, nil), f.startThread(c, nil)}
	slices.Sort(ids)
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{}), ids, "")
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"limit": 3}), ids, "")
	// Page by page, each cursor the page's last id.
	var got []string
	params := map[string]any{"limit": 1}
	for range 10 {
		p := listPage(t, c, "thread/loaded/list", params)
		if len(p.ids) != 1 {
			t.Fatalf("page %s", p)
		}
		got = append(got, p.ids...)
		if p.next == nil {
			break
		}
		if *p.next != p.ids[0] {
			t.Fatalf("cursor %q is not the page's last id: %s", *p.next, p)
		}
		params = map[string]any{"limit": 1, "cursor": *p.next}
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("pages %v, want %v", got, ids)
	}
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"limit": 0}), ids[:1], ids[0])
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"limit": 2}), ids[:2], ids[1])
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"cursor": ids[0]}), ids[1:], "")
	// The cursor is read as a UUID: case and hyphens do not matter.
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"cursor": strings.ToUpper(ids[1])}), ids[2:], "")
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"cursor": strings.ReplaceAll(ids[1], "-", "")}), ids[2:], "")
	// An id that is not loaded: the page starts at the first id after it.
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"cursor": "00000000-0000-0000-0000-000000000000"}), ids, "")
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"cursor": "ffffffff-ffff-ffff-ffff-ffffffffffff"}), []string{}, "")
	wantPage(t, listPage(t, c, "thread/loaded/list", map[string]any{"cursor": ids[2]}), []string{}, "")
	for _, bad := range []string{"garbage", "", ids[0] + "0", "1"} {
		rpctest.WantError(t, c.Call("thread/loaded/list", map[string]any{"cursor": bad}), -32600, "invalid cursor: "+bad)
	}
}
