package core

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/core/catalog"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// webSearchTool returns the hosted web_search tool of a request, nil when
// it has none.
func webSearchTool(t *testing.T, req *model.Request) map[string]any {
	t.Helper()
	for _, raw := range req.Tools {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m["type"] == "web_search" {
			return m
		}
	}
	return nil
}

// The web search setting decides the tool; a turn without a sandbox may
// search live whatever it says (the reference's rule); a model outside
// the catalogue is not asked for images.
func TestWebSearchSpec(t *testing.T) {
	cases := []struct {
		mode     WebSearchMode
		sandbox  policy.SandboxPolicy
		images   bool
		want     bool // offered
		wantLive bool
	}{
		{"", policy.ReadOnly(), true, false, false},
		{WebSearchDisabled, policy.FullAccess(), true, false, false},
		{WebSearchCached, policy.ReadOnly(), true, true, false},
		{WebSearchCached, policy.FullAccess(), true, true, true},
		{WebSearchLive, policy.WorkspaceWrite(), false, true, true},
	}
	for _, tc := range cases {
		c := newFakeClient(t, script{events: textEvents("msg_1", "ok")})
		s := newTestSession(t, c, func(cfg *Config) {
			cfg.WebSearch = tc.mode
			cfg.Sandbox = tc.sandbox
			cfg.ToolFamily = func(string) catalog.Tools {
				return catalog.Tools{Shell: catalog.ShellUnifiedExec, SearchImages: tc.images}
			}
		})
		col := collect(t, s, nil)
		s.Call(ctx10(t), userInput("go"))
		col.waitFor(turnEnded)
		req := c.requests()[0]
		ws := webSearchTool(t, req)
		if (ws != nil) != tc.want {
			t.Fatalf("%+v: web_search tool %v", tc, ws)
		}
		if ws == nil {
			continue
		}
		if ws["external_web_access"] != tc.wantLive {
			t.Errorf("%+v: %v", tc, ws)
		}
		if _, has := ws["search_content_types"]; has != tc.images {
			t.Errorf("%+v: search_content_types in %v", tc, ws)
		}
		var last struct{ Type string }
		_ = json.Unmarshal(req.Tools[len(req.Tools)-1], &last)
		if last.Type != "web_search" {
			t.Errorf("web_search is not the last tool")
		}
	}
}

func searchCall(id string, action map[string]any) model.ResponseItem {
	it := map[string]any{"type": "web_search_call", "id": id, "status": "completed"}
	if action != nil {
		it["action"] = action
	}
	return model.NewResponseItem(it)
}

// Each action the model reports, and what a user interface shows of it.
func TestWebSearchItem(t *testing.T) {
	cases := []struct {
		action map[string]any
		want   WebSearchItem
	}{
		{map[string]any{"type": "search", "query": "go generics", "queries": []any{"go generics", "go 1.18"}},
			WebSearchItem{ID: "ws", Query: "go generics", Action: WebSearchAction{Kind: WebSearchSearch, Query: "go generics", Queries: []string{"go generics", "go 1.18"}}}},
		{map[string]any{"type": "search", "queries": []any{"only queries"}},
			WebSearchItem{ID: "ws", Query: "only queries", Action: WebSearchAction{Kind: WebSearchSearch, Queries: []string{"only queries"}}}},
		{map[string]any{"type": "open_page", "url": "https://go.dev"},
			WebSearchItem{ID: "ws", Query: "https://go.dev", Action: WebSearchAction{Kind: WebSearchOpenPage, URL: "https://go.dev"}}},
		{map[string]any{"type": "find_in_page", "url": "https://go.dev", "pattern": "spec"},
			WebSearchItem{ID: "ws", Query: "'spec' in https://go.dev", Action: WebSearchAction{Kind: WebSearchFindInPage, URL: "https://go.dev", Pattern: "spec"}}},
		{map[string]any{"type": "find", "pattern": "spec"},
			WebSearchItem{ID: "ws", Query: "'spec'", Action: WebSearchAction{Kind: WebSearchFindInPage, Pattern: "spec"}}},
		{map[string]any{"type": "teleport"}, WebSearchItem{ID: "ws", Action: WebSearchAction{Kind: WebSearchOther}}},
		{nil, WebSearchItem{ID: "ws", Action: WebSearchAction{Kind: WebSearchOther}}},
	}
	for _, tc := range cases {
		got := webSearchItem(searchCall("ws", tc.action))
		if got.ID != tc.want.ID || got.Query != tc.want.Query || got.Action.Kind != tc.want.Action.Kind || got.Action.URL != tc.want.Action.URL ||
			got.Action.Pattern != tc.want.Action.Pattern || got.Action.Query != tc.want.Action.Query || !slices.Equal(got.Action.Queries, tc.want.Action.Queries) {
			t.Errorf("%v: %+v, want %+v", tc.action, got, tc.want)
		}
	}
}

// A generated image is saved under <dir>/<thread>/<call>.png with unsafe
// characters replaced; one that is not base64 is not saved and a warning
// says so; both items complete and stay in the history.
func TestImageGenerationSaved(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	good := model.NewResponseItem(map[string]any{"type": "image_generation_call", "id": "ig/1", "status": "completed",
		"revised_prompt": "a dot", "result": base64.StdEncoding.EncodeToString(png)})
	bad := model.NewResponseItem(map[string]any{"type": "image_generation_call", "id": "ig_2", "status": "completed", "result": "data:image/png;base64,AAAA"})
	c := newFakeClient(t, script{events: callEvents(good, bad)})
	dir := t.TempDir()
	s := newTestSession(t, c, func(cfg *Config) { cfg.GeneratedImagesDir = dir; cfg.ThreadID = "thread:1" })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("draw"))
	evs := col.waitFor(turnEnded)
	var done []ImageGenerationItem
	var started, warnings int
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if it, ok := m.Item.(ImageGenerationItem); ok && it.Status == "in_progress" {
				started++
			}
		case ItemCompleted:
			if it, ok := m.Item.(ImageGenerationItem); ok {
				done = append(done, it)
			}
		case Warning:
			warnings++
		}
	}
	want := filepath.Join(dir, "thread_1", "ig_1.png")
	if started != 2 || len(done) != 2 || done[0].SavedPath != want || done[0].RevisedPrompt != "a dot" || done[1].SavedPath != "" || warnings != 1 {
		t.Fatalf("started %d, done %+v, warnings %d", started, done, warnings)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != string(png) {
		t.Fatalf("saved %q, %v", b, err)
	}
	if n := len(s.History()); s.History()[n-1].Type() != model.TypeImageGenerationCall {
		t.Fatalf("the calls are not in the history")
	}
}
