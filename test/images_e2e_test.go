package test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// testPNG is enough of a PNG for content sniffing.
var testPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01e2e image")

// imagePartsOf returns the input_image URLs of a request's last user
// message, in order.
func imagePartsOf(r mockmodel.Request) []string {
	var last map[string]any
	for _, it := range r.Input() {
		if it["type"] == "message" && it["role"] == "user" {
			last = it
		}
	}
	var out []string
	parts, _ := last["content"].([]any)
	for _, p := range parts {
		if m, _ := p.(map[string]any); m["type"] == "input_image" {
			u, _ := m["image_url"].(string)
			out = append(out, u)
		}
	}
	return out
}

// Image inputs end to end: a local file, a data URL and an https URL reach
// the model as input_image parts, the file as a data URL of its very
// bytes; the userMessage item shows the inputs as sent (the file by its
// path). The model then looks at a file with view_image: an imageView
// item, and the image in the call's output.
func TestImageInputsAndViewImage(t *testing.T) {
	work := t.TempDir()
	shot := filepath.Join(work, "shot.png")
	if err := os.WriteFile(shot, testPNG, 0o600); err != nil {
		t.Fatal(err)
	}
	diagram := filepath.Join(work, "diagram.png")
	if err := os.WriteFile(diagram, append([]byte(nil), append(testPNG, " the diagram"...)...), 0o600); err != nil {
		t.Fatal(err)
	}
	fileURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(testPNG)
	sentURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nsent inline"))
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.FunctionCall("call_1", "view_image", `{"path":"diagram.png"}`)),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_1", "Two screenshots and a diagram.")),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	// The configured model takes images (clients offer to attach them).
	models := unmarshal(t, validResult(t, "model/list", c.Call("model/list", map[string]any{}), nil))
	if str(models, "data", 0, "model") != "mock-model" || str(models, "data", 0, "inputModalities", 1) != "image" {
		t.Fatalf("model/list %v", models)
	}
	id := startThread(t, c, map[string]any{"cwd": work})
	input := []any{
		map[string]any{"type": "text", "text": "what are these?"},
		map[string]any{"type": "localImage", "path": shot},
		map[string]any{"type": "image", "url": sentURL, "detail": "high"},
		map[string]any{"type": "image", "url": "https://example.com/screen.png"},
	}
	c.Request("turn/start", map[string]any{"threadId": id, "input": input})
	msgs := validTurn(t, c)

	um := itemOf(t, msgs, "item/completed", "userMessage")
	if str(um, "content", 1, "type") != "localImage" || str(um, "content", 1, "path") != shot || path(um, "content", 1, "detail") != nil ||
		str(um, "content", 2, "url") != sentURL || str(um, "content", 2, "detail") != "high" {
		content, _ := json.Marshal(um["content"])
		t.Fatalf("userMessage content %s", content)
	}
	req := m.Requests()[0]
	got := imagePartsOf(req)
	if len(got) != 3 || got[0] != fileURL || got[1] != sentURL || got[2] != "https://example.com/screen.png" {
		t.Fatalf("input_image parts %.120q", got)
	}

	view := itemOf(t, msgs, "item/completed", "imageView")
	if view["id"] != "call_1" || view["path"] != diagram {
		t.Fatalf("imageView %v", view)
	}
	itemOf(t, msgs, "item/started", "imageView")
	out, ok := m.Requests()[1].ToolOutput("call_1")
	wantOut := `[{"image_url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(append(testPNG, " the diagram"...)) + `","type":"input_image"}]`
	if !ok || out != wantOut {
		t.Fatalf("view_image output %.200s", out)
	}
}

// A localImage that is missing, too large or not an image, and an image
// URL of another scheme, are refused at turn/start with -32600 naming the
// input and the file; no turn starts and the model is not called.
func TestImageInputErrors(t *testing.T) {
	work := t.TempDir()
	big := filepath.Join(work, "big.png")
	if err := os.WriteFile(big, testPNG, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 20<<20+1); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(work, "notes.txt")
	if err := os.WriteFile(notes, []byte("plain text"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := mockmodel.New(t)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	missing := filepath.Join(work, "missing.png")
	cases := []struct {
		input map[string]any
		want  string
	}{
		{map[string]any{"type": "localImage", "path": missing}, "input[1] (localImage): cannot read " + missing + ": no such file or directory"},
		{map[string]any{"type": "localImage", "path": "big.png"}, "input[1] (localImage): " + big + " has 20971521 bytes, more than the 20971520 an image may have"},
		{map[string]any{"type": "localImage", "path": notes}, "input[1] (localImage): " + notes + " is not a PNG, JPEG, GIF or WebP image"},
		{map[string]any{"type": "image", "url": "file:///etc/hostname"}, `input[1] (image): url "file:///etc/hostname" is neither an http(s) URL nor a data URL`},
		{map[string]any{"type": "image", "fileId": "file_123"}, "input[1] (image): images by fileId are not supported"},
	}
	for _, tc := range cases {
		res := c.Call("turn/start", map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "look"}, tc.input}})
		if res.Error == nil || res.Error.Code != -32600 || !strings.HasPrefix(res.Error.Message, tc.want) {
			t.Fatalf("%v: %s, want -32600 %q", tc.input, res.Raw, tc.want)
		}
	}
	// Nothing started: the next message is the answer to a request made
	// now, and the model was never called.
	c.Request("thread/loaded/list", map[string]any{})
	if next := c.Next(); next.Method != "" {
		t.Fatalf("a notification after refused turns: %s", next.Raw)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

// A message whose record would be longer than a rollout line may be
// ([server] rollout_max_line_bytes) is refused before its turn runs: once
// recorded, the thread could not be read back. One under the cap runs,
// its longest line is within the bound the check used, and the thread
// reads back after a restart.
func TestImageInputLongerThanARecordLine(t *testing.T) {
	const maxLine = 1 << 20
	work, home := t.TempDir(), t.TempDir()
	image := func(name string, size int) string {
		p := filepath.Join(work, name)
		data := append(append([]byte(nil), testPNG...), bytes.Repeat([]byte{0xa7}, size-len(testPNG))...)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	image("over.png", 800<<10) // 1.04 MiB as base64
	under := image("under.png", 700<<10)
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "Seen.")))
	opts := Options{Home: home, ConfigTOML: mockConfig(m, ""), Config: []string{fmt.Sprintf("server.rollout_max_line_bytes=%d", maxLine)}}
	d := Start(t, opts)
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": work})
	input := func(name string) []any {
		return []any{map[string]any{"type": "text", "text": "look at <this> \"one\"\n"}, map[string]any{"type": "localImage", "path": name}}
	}
	res := c.Call("turn/start", map[string]any{"threadId": id, "input": input("over.png")})
	want := "input: this message would take up to 1.1 MiB in the thread's record, which holds at most 1 MiB a line ([server] rollout_max_line_bytes); send less text, or fewer or smaller images"
	if res.Error == nil || res.Error.Code != -32600 || res.Error.Message != want {
		t.Fatalf("over the cap: %s, want -32600 %q", res.Raw, want)
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("%d model requests for a refused turn", n)
	}
	WantResult(t, c.Call("turn/start", map[string]any{"threadId": id, "input": input("under.png")}))
	c.ReadUntil(isMethod("turn/completed"))
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id})))
	rolloutPath := str(read, "thread", "path")
	longest := 0
	for _, line := range strings.Split(readFile(t, rolloutPath), "\n") {
		longest = max(longest, len(line))
	}
	prepared, err := core.PrepareImages([]core.UserInput{core.TextInput("look at <this> \"one\"\n"), {Kind: core.InputLocalImage, Path: under}}, work)
	if err != nil {
		t.Fatal(err)
	}
	if bound := rollout.UserInputLineBound(prepared, ""); longest < 700<<10*4/3 || int64(longest) > bound || bound > maxLine {
		t.Fatalf("longest line %d bytes, bound %d, cap %d", longest, bound, maxLine)
	}
	d.CloseStdin()
	d.Wait()

	d = Start(t, opts)
	c = d.Stdio()
	c.Initialize("e2e", nil)
	read = unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	if got := str(read, "thread", "turns", 0, "items", 0, "content", 1, "path"); got != under {
		t.Fatalf("the turn read back after a restart: %v", path(read, "thread", "turns"))
	}
	WantResult(t, c.Call("thread/resume", map[string]any{"threadId": id}))
}
