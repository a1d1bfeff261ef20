package test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// webSearchToolOf returns the hosted web_search tool of a model request,
// nil when it offered none.
func webSearchToolOf(r mockmodel.Request) map[string]any {
	raw, _ := r.JSON["tools"].([]any)
	for _, t := range raw {
		if m, _ := t.(map[string]any); m["type"] == "web_search" {
			return m
		}
	}
	return nil
}

// A scripted web search end to end: each web_search_call the model makes
// is a webSearch item, started when the call begins (no query yet) and
// completed with its action and query, valid by the reference schema; the
// thread reads them back from its rollout. The hosted tool is offered as
// web_search says, live in a turn without a sandbox.
func TestWebSearchEndToEnd(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1",
		mockmodel.WebSearchCall("ws_1", map[string]any{"type": "search", "query": "weather paris", "queries": []any{"weather paris", "paris forecast"}}),
		mockmodel.WebSearchCall("ws_2", map[string]any{"type": "open_page", "url": "https://example.com/a"}),
		mockmodel.WebSearchCall("ws_3", map[string]any{"type": "find_in_page", "url": "https://example.com/a", "pattern": "rain"}),
		mockmodel.Text("msg_1", "It rains.")))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("weather?")})
	msgs := validTurn(t, c)
	want := []string{"started userMessage", "completed userMessage", "started webSearch", "completed webSearch",
		"started webSearch", "completed webSearch", "started webSearch", "completed webSearch", "started agentMessage", "message delta", "completed agentMessage"}
	if got := slices.Compact(itemEvents(t, msgs)); !slices.Equal(got, want) {
		t.Fatalf("items:\n got %v\nwant %v", got, want)
	}
	type search struct {
		ID     string          `json:"id"`
		Query  string          `json:"query"`
		Action json.RawMessage `json:"action"`
	}
	var started, done []search
	for _, msg := range msgs {
		if msg.Method != "item/started" && msg.Method != "item/completed" {
			continue
		}
		var p struct {
			Item search `json:"item"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if str(unmarshal(t, msg.Params), "item", "type") != "webSearch" {
			continue
		}
		if msg.Method == "item/started" {
			started = append(started, p.Item)
		} else {
			done = append(done, p.Item)
		}
	}
	for _, s := range started {
		if s.Query != "" || string(s.Action) != `{"type":"other"}` {
			t.Fatalf("started %+v", s)
		}
	}
	wantDone := []search{
		{"ws_1", "weather paris", json.RawMessage(`{"type":"search","query":"weather paris","queries":["weather paris","paris forecast"]}`)},
		{"ws_2", "https://example.com/a", json.RawMessage(`{"type":"openPage","url":"https://example.com/a"}`)},
		{"ws_3", "'rain' in https://example.com/a", json.RawMessage(`{"type":"findInPage","url":"https://example.com/a","pattern":"rain"}`)},
	}
	for i, w := range wantDone {
		if done[i].ID != w.ID || done[i].Query != w.Query || string(done[i].Action) != string(w.Action) {
			t.Fatalf("completed %d: %+v %s, want %+v %s", i, done[i], done[i].Action, w, w.Action)
		}
	}
	// Default: cached, without images for a model outside the catalogue.
	if ws := webSearchToolOf(m.Requests()[0]); ws == nil || ws["external_web_access"] != false || ws["search_content_types"] != nil {
		t.Fatalf("web_search tool %v", ws)
	}
	// The items are recorded, and read back.
	res := unmarshal(t, validResult(t, "thread/read", c.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true}), nil))
	items, _ := path(res, "thread", "turns", 0, "items").([]any)
	var read []string
	for _, it := range items {
		if str(it, "type") == "webSearch" {
			read = append(read, str(it, "query"))
		}
	}
	if !slices.Equal(read, []string{"weather paris", "https://example.com/a", "'rain' in https://example.com/a"}) {
		t.Fatalf("read back %v", read)
	}
}

// The web_search key and the provider: live and disabled as set, live in a
// turn without a sandbox, none for a provider that has no hosted search.
func TestWebSearchSetting(t *testing.T) {
	cases := []struct {
		name, config  string
		threadSandbox string
		want          any // external_web_access, or nil for no tool
	}{
		{"live", `web_search = "live"`, "", true},
		{"disabled", `web_search = "disabled"`, "danger-full-access", nil},
		{"cached without a sandbox", `web_search = "cached"`, "danger-full-access", true},
		{"provider without the tool", "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mockmodel.New(t)
			m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok")))
			cfg := mockConfig(m, tc.config)
			if tc.name == "provider without the tool" {
				cfg += "supports_web_search = false\n"
			}
			d := Start(t, Options{ConfigTOML: cfg})
			c := d.Stdio()
			c.Initialize("e2e", nil)
			params := map[string]any{"cwd": t.TempDir()}
			if tc.threadSandbox != "" {
				params["sandbox"] = tc.threadSandbox
			}
			id := startThread(t, c, params)
			runTurn(t, c, id, "hi")
			ws := webSearchToolOf(m.Requests()[0])
			switch {
			case tc.want == nil && ws != nil:
				t.Fatalf("offered %v", ws)
			case tc.want != nil && (ws == nil || ws["external_web_access"] != tc.want):
				t.Fatalf("web_search tool %v, want external_web_access %v", ws, tc.want)
			}
		})
	}
}

// The hosted image generation's output: an imageGeneration item (started
// in progress, completed with the image, its revised prompt and where it
// was saved: <home>/generated_images/<thread>/<call>.png), valid by the
// reference schema.
func TestImageGenerationEndToEnd(t *testing.T) {
	img := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR tiny test image")
	b64 := base64.StdEncoding.EncodeToString(img)
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.ImageGenerationCall("ig_1", "a red dot", b64), mockmodel.Text("msg_1", "Here it is.")))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("draw a dot")})
	msgs := validTurn(t, c)
	started := itemOf(t, msgs, "item/started", "imageGeneration")
	done := itemOf(t, msgs, "item/completed", "imageGeneration")
	saved := filepath.Join(d.Home, "generated_images", id, "ig_1.png")
	if started["status"] != "in_progress" || done["status"] != "completed" || done["result"] != b64 || done["revisedPrompt"] != "a red dot" || done["savedPath"] != saved {
		t.Fatalf("started %v\ncompleted %v", started, done)
	}
	if b, err := os.ReadFile(saved); err != nil || string(b) != string(img) {
		t.Fatalf("saved file %q, %v", b, err)
	}
	// The next request gives the model its own call back.
	m.Enqueue(mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "ok")))
	runTurn(t, c, id, "again")
	found := false
	for _, it := range m.Requests()[1].Input() {
		found = found || (it["type"] == "image_generation_call" && it["id"] == "ig_1" && it["result"] == b64)
	}
	if !found {
		t.Fatalf("the image generation call is not in the history: %s", strings.Join(m.Requests()[1].ToolNames(), ","))
	}
}
