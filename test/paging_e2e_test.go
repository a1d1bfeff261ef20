package test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// listResult is a page of model/list or thread/loaded/list.
type listResult struct {
	Data       []json.RawMessage `json:"data"`
	NextCursor *string           `json:"nextCursor"`
}

// ids returns the page's items: strings, or objects' ids.
func (r listResult) ids(t *testing.T) []string {
	t.Helper()
	out := []string{}
	for _, d := range r.Data {
		var s string
		if json.Unmarshal(d, &s) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(d, &obj); err != nil {
				t.Fatalf("item %s: %v", d, err)
			}
			s = obj.ID
		}
		out = append(out, s)
	}
	return out
}

// model/list pages by offset (the cursor is the next model's index), as
// the reference does, and refuses a cursor that is not one.
func TestModelListPagesE2E(t *testing.T) {
	m := mockmodel.New(t)
	_, c := utilClient(t, Options{ConfigTOML: mockConfig(m, "")})
	var first, second, all listResult
	validResult(t, "model/list", c.Call("model/list", map[string]any{}), &all)
	if got := all.ids(t); !slices.Equal(got, []string{"mock-model", "demo"}) || all.NextCursor != nil {
		t.Fatalf("model/list %v next %v", got, all.NextCursor)
	}
	validResult(t, "model/list", c.Call("model/list", map[string]any{"limit": 1}), &first)
	if got := first.ids(t); !slices.Equal(got, []string{"mock-model"}) || first.NextCursor == nil || *first.NextCursor != "1" {
		t.Fatalf("first page %v next %v", got, first.NextCursor)
	}
	validResult(t, "model/list", c.Call("model/list", map[string]any{"limit": 1, "cursor": *first.NextCursor, "includeHidden": true}), &second)
	if got := second.ids(t); !slices.Equal(got, []string{"demo"}) || second.NextCursor != nil {
		t.Fatalf("second page %v next %v", got, second.NextCursor)
	}
	WantError(t, c.Call("model/list", map[string]any{"cursor": "invalid"}), codeInvalidRequest, "invalid cursor: invalid")
	WantError(t, c.Call("model/list", map[string]any{"cursor": "5"}), codeInvalidRequest, "cursor 5 exceeds total models 2")
}

// thread/loaded/list pages over the sorted ids, the cursor being the last
// id returned, as the reference does, and refuses a cursor that is not a
// thread id.
func TestLoadedThreadListPagesE2E(t *testing.T) {
	m := mockmodel.New(t)
	_, c := utilClient(t, Options{ConfigTOML: mockConfig(m, "")})
	var ids []string
	for range 3 {
		ids = append(ids, startThread(t, c, map[string]any{"cwd": t.TempDir()}))
	}
	slices.Sort(ids)
	var got []string
	params := map[string]any{"limit": 2}
	for range 5 {
		var page listResult
		validResult(t, "thread/loaded/list", c.Call("thread/loaded/list", params), &page)
		p := page.ids(t)
		got = append(got, p...)
		if page.NextCursor == nil {
			break
		}
		if len(p) != 2 || *page.NextCursor != p[len(p)-1] {
			t.Fatalf("page %v next %q", p, *page.NextCursor)
		}
		params = map[string]any{"limit": 2, "cursor": *page.NextCursor}
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("pages %v, want %v", got, ids)
	}
	WantError(t, c.Call("thread/loaded/list", map[string]any{"cursor": "garbage"}), codeInvalidRequest, "invalid cursor: garbage")
}
