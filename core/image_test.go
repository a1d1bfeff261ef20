package core

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd-dev/agentd/core/model"
)

// pngBytes is enough of a PNG for content sniffing.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDRtest")

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Images are checked before a turn takes them: each problem names the
// input, its kind and the file or URL; good local images are read into
// data URLs, relative paths from the working directory.
func TestPrepareImages(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "shot.png"), pngBytes)
	text := writeFile(t, filepath.Join(dir, "notes.txt"), []byte("not an image"))
	big := filepath.Join(dir, "big.png")
	writeFile(t, big, pngBytes)
	if err := os.Truncate(big, MaxImageBytes+1); err != nil {
		t.Fatal(err)
	}
	// A named pipe with no writer is refused at once, never waited on.
	fifo := filepath.Join(dir, "pipe.png")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	bad := []struct {
		in   UserInput
		want string
	}{
		{UserInput{Kind: InputLocalImage, Path: filepath.Join(dir, "missing.png")}, "input[1] (localImage): cannot read " + filepath.Join(dir, "missing.png") + ": no such file or directory"},
		{UserInput{Kind: InputLocalImage, Path: big}, "has 20971521 bytes, more than the 20971520 an image may have"},
		{UserInput{Kind: InputLocalImage, Path: text}, "is not a PNG, JPEG, GIF or WebP image (its content is text/plain"},
		{UserInput{Kind: InputLocalImage, Path: dir}, "is not a regular file"},
		{UserInput{Kind: InputLocalImage, Path: fifo}, fifo + " is not a regular file"},
		{UserInput{Kind: InputLocalImage}, "path is empty"},
		{UserInput{Kind: InputImage, ImageURL: "file:///etc/passwd"}, `input[1] (image): url "file:///etc/passwd" is neither an http(s) URL nor a data URL`},
		{UserInput{Kind: InputImage, ImageURL: "data:text/plain;base64,AAAA"}, "is not a data URL of an image with base64 data"},
		{UserInput{Kind: InputImage, ImageURL: "data:image/png;base64,%%%"}, "is not valid base64"},
		{UserInput{Kind: InputImage, ImageURL: "data:image/png;base64," + strings.Repeat("A", 30<<20)}, "more than the 20971520 an image may have"},
	}
	for _, tc := range bad {
		_, err := PrepareImages([]UserInput{TextInput("look"), tc.in}, dir)
		var ie *ImageInputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 600 {
			t.Errorf("%+v: %v, want %q", tc.in.Path+tc.in.ImageURL[:min(len(tc.in.ImageURL), 40)], err, tc.want)
		}
	}
	in := []UserInput{
		TextInput("look"),
		{Kind: InputLocalImage, Path: "shot.png"},
		{Kind: InputImage, ImageURL: "https://example.com/a.png", Detail: "low"},
		{Kind: InputImage, ImageURL: dataURL},
	}
	out, err := PrepareImages(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	if out[1].Path != good || out[1].ImageURL != dataURL || out[2].ImageURL != in[2].ImageURL || out[2].Detail != "low" || out[3].ImageURL != dataURL || out[3].Path != "" {
		t.Fatalf("prepared %+v", out)
	}
	// Many images together are too much for one message.
	var many []UserInput
	for range 3 {
		many = append(many, UserInput{Kind: InputImage, ImageURL: "data:image/png;base64," + strings.Repeat("A", 24<<20)})
	}
	if _, err := PrepareImages(many, dir); err == nil || !strings.Contains(err.Error(), "input[2] (image): the images of one message may have 50 MiB in all") {
		t.Fatalf("many images: %v", err)
	}
}

// The model gets each image between tags that number it and name its
// file; the item keeps the path, not the bytes.
func TestImageInputReachesTheModel(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "shot.png"), pngBytes)
	c := newFakeClient(t, script{events: textEvents("msg_1", "I see it")})
	s := newTestSession(t, c, func(cfg *Config) { cfg.Cwd = dir })
	col := collect(t, s, nil)
	in, err := PrepareImages([]UserInput{TextInput("what is this?"), {Kind: InputImage, ImageURL: "https://example.com/a.png", Detail: "high"}, {Kind: InputLocalImage, Path: "shot.png"}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Call(ctx10(t), OpUserInput{Input: in})
	evs := col.waitFor(turnEnded)
	req := c.requests()[0]
	var f model.MessageFields
	if err := req.Input[len(req.Input)-1].Decode(&f); err != nil {
		t.Fatal(err)
	}
	data := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	want := []model.ContentPart{
		{Type: "input_text", Text: "what is this?"},
		{Type: "input_text", Text: "<image name=[Image #1]>"},
		{Type: "input_image", ImageURL: "https://example.com/a.png", Detail: "high"},
		{Type: "input_text", Text: "</image>"},
		{Type: "input_text", Text: `<image name=[Image #2] path="` + path + `">`},
		{Type: "input_image", ImageURL: data},
		{Type: "input_text", Text: "</image>"},
	}
	if len(f.Content) != len(want) {
		t.Fatalf("content %+v", f.Content)
	}
	for i := range want {
		if f.Content[i].Type != want[i].Type || f.Content[i].Text != want[i].Text || f.Content[i].ImageURL != want[i].ImageURL || f.Content[i].Detail != want[i].Detail {
			t.Fatalf("part %d: %+v, want %+v", i, f.Content[i], want[i])
		}
	}
	for _, ev := range evs {
		if m, ok := ev.Msg.(ItemCompleted); ok {
			if um, ok := m.Item.(UserMessageItem); ok && (um.Content[2].Path != path || um.Content[2].ImageURL != "") {
				t.Fatalf("user message item %+v", um)
			}
		}
	}
}

// view_image attaches the image as the call's output and shows an
// imageView item; an image it cannot read is a text answer and no item.
func TestViewImage(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "shot.png"), pngBytes)
	c := newFakeClient(t,
		script{events: callEvents(functionCall("call_1", "view_image", map[string]any{"path": "shot.png"}),
			functionCall("call_2", "view_image", map[string]any{"path": "gone.png"}))},
		script{events: textEvents("msg_1", "a tiny image")},
	)
	s := newTestSession(t, c, func(cfg *Config) { cfg.Cwd = dir })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("look at shot.png"))
	evs := col.waitFor(turnEnded)
	var items []ImageViewItem
	for _, ev := range evs {
		if m, ok := ev.Msg.(ItemCompleted); ok {
			if it, ok := m.Item.(ImageViewItem); ok {
				items = append(items, it)
			}
		}
	}
	if len(items) != 1 || items[0] != (ImageViewItem{ID: "call_1", Path: path}) {
		t.Fatalf("imageView items %+v", items)
	}
	var outs = map[string]json.RawMessage{}
	for _, it := range c.requests()[1].Input {
		if it.Type() == model.TypeFunctionCallOutput {
			var f struct {
				Output json.RawMessage `json:"output"`
			}
			_ = it.Decode(&f)
			outs[it.CallID()] = f.Output
		}
	}
	data := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	if string(outs["call_1"]) != `[{"type":"input_image","image_url":"`+data+`"}]` {
		t.Fatalf("call_1 output %s", outs["call_1"])
	}
	var text string
	_ = json.Unmarshal(outs["call_2"], &text)
	if !strings.HasPrefix(text, "the image could not be attached: cannot read "+filepath.Join(dir, "gone.png")) {
		t.Fatalf("call_2 output %s", outs["call_2"])
	}
}
