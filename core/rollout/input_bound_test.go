package rollout

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// jsonLen is never below what encoding/json (HTML escaping, invalid UTF-8
// replaced) writes, nor far above it for plain text.
func TestJSONLenBoundsTheEncoding(t *testing.T) {
	for _, s := range []string{
		"", "plain text", "quote \" and \\ backslash", "<tag> & more", "line\nbreak\ttab\x00nul\x1f",
		"naïve 日本語 😀", "bad \xff\xfe utf-8 \xe2\x82", "separators \u2028 \u2029", strings.Repeat("\x01<", 100),
	} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var plain bytes.Buffer
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := jsonLen(s); got < int64(len(b)) || got < int64(plain.Len()-1) {
			t.Errorf("jsonLen(%q) = %d, encoded %d bytes (%d without HTML escapes)", s, got, len(b), plain.Len()-1)
		}
	}
	if got, want := jsonLen("plain text"), int64(len(`"plain text"`)); got != want {
		t.Errorf("jsonLen of plain text %d, want %d", got, want)
	}
}

// The lines that record a user message, its history item and its event,
// are within the bound, whatever the input holds: texts to escape, text
// elements, images sent inline, local images by path, and the whole input
// again in agentd_content.
func TestUserInputLineBoundHoldsTheRecordedLines(t *testing.T) {
	s, _ := openStore(t, Options{})
	r, err := s.Create(testMeta("t-bound", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	inline := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG pixels ", 4000)))
	local := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG local ", 9000)))
	type input struct {
		in       []core.UserInput
		clientID string
	}
	// U+0085: two bytes, six as %q, seven once JSON-escapes the %q.
	odd := "/work/\u0085\u200b\U0001F600 \"dir\"\\shot.png" + strings.Repeat("\u0085", 20000)
	inputs := []input{
		{in: []core.UserInput{core.TextInput("look <here> & \"there\"\n\x01" + strings.Repeat("é", 300))}},
		{in: []core.UserInput{core.TextInput("see"), {Kind: core.InputImage, ImageURL: inline}}},
		{in: []core.UserInput{{Kind: core.InputImage, ImageURL: inline, Detail: "low"}, {Kind: core.InputImage, ImageURL: inline}}},
		{in: []core.UserInput{{Kind: core.InputImage, ImageURL: inline, Detail: "high"}, core.TextInput(""), {Kind: core.InputLocalImage, Path: "/work/a <b>.png", ImageURL: local}}},
		{in: []core.UserInput{{Kind: core.InputText, Text: "[img] and $skill", TextElements: []core.TextElement{{Start: 0, End: 5, Placeholder: "[img]"}}},
			{Kind: core.InputSkill, Name: "deploy", Path: "/skills/deploy/SKILL.md"}, {Kind: core.InputLocalImage, Path: "/tmp/x.png", ImageURL: local}}},
		// The client's own id, long; offsets as long as they get; a path
		// that %q and JSON escape at length.
		{in: []core.UserInput{core.TextInput("hi")}, clientID: strings.Repeat("id-", 30000)},
		{in: []core.UserInput{{Kind: core.InputText, Text: "x", TextElements: slices.Repeat([]core.TextElement{{Start: math.MaxInt64, End: math.MinInt64 + 1}}, 2000)},
			{Kind: core.InputImage, ImageURL: inline, Detail: "low"}}},
		{in: []core.UserInput{{Kind: core.InputLocalImage, Path: odd, ImageURL: local}}},
	}
	for i, tc := range inputs {
		in := tc.in
		turn := "turn-" + string(rune('a'+i))
		shown := make([]core.UserInput, len(in))
		var parts []model.ContentPart
		for j, u := range in {
			shown[j] = u
			switch u.Kind {
			case core.InputLocalImage:
				shown[j].ImageURL = ""
				parts = append(parts, model.ContentPart{Type: "input_text", Text: fmt.Sprintf("<image name=[Image #1] path=%q>", u.Path)},
					model.ContentPart{Type: "input_image", ImageURL: u.ImageURL, Detail: u.Detail}, model.ContentPart{Type: "input_text", Text: "</image>"})
			case core.InputImage:
				parts = append(parts, model.ContentPart{Type: "input_text", Text: "<image name=[Image #1]>"},
					model.ContentPart{Type: "input_image", ImageURL: u.ImageURL, Detail: u.Detail}, model.ContentPart{Type: "input_text", Text: "</image>"})
			default:
				parts = append(parts, model.ContentPart{Type: "input_text", Text: u.Text + u.Name + u.Path})
			}
		}
		um := core.UserMessageItem{ID: turn + "-user", Content: shown, ClientID: tc.clientID}
		r.RecordEvent(core.Event{TurnID: turn, Time: baseTime, Msg: core.ItemStarted{Item: um}})
		r.RecordItem(turn, model.NewMessage("", "user", parts...))
		r.RecordEvent(core.Event{TurnID: turn, Time: baseTime, Msg: core.ItemCompleted{Item: um}})
		if err := r.Flush(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(r.Path())
		if err != nil {
			t.Fatal(err)
		}
		bound := UserInputLineBound(in, tc.clientID)
		for n, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, turn) && int64(len(line)) > bound {
				t.Errorf("input %d: line %d has %d bytes, over the bound %d: %.200s", i, n+1, len(line), bound, line)
			}
		}
		if i < 5 && bound > 3*int64(len(inline)+len(local))+64<<10 {
			t.Errorf("input %d: bound %d is far above what the input holds", i, bound)
		}
	}
}
