package rollout

import (
	"os"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// A record longer than a line of a rollout may be (Limits.MaxLineBytes:
// a reader refuses the whole thread for it) is shortened as it is
// written: its longest strings keep their start and say how much went, an
// image's data URL becomes a one-pixel image. The thread reads back, with
// every record that fitted as it was.
func TestLongRecordsAreShortenedToBeRead(t *testing.T) {
	var w warnings
	const maxLine = 64 << 10
	s, _ := openStore(t, Options{OnWarning: w.add, Limits: Limits{MaxLineBytes: maxLine}})
	ctx := testCtx(t)
	r, err := s.Create(testMeta("t-long", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t1", prompt: "small <prompt> & \"quotes\"", end: "completed"})
	big := strings.Repeat("<out> ", 40_000) // 240 KB, 1.4 MB if HTML-escaped
	image := "data:image/png;base64," + strings.Repeat("iVBORw0K", 20_000)
	ev := func(msg core.EventMsg) core.Event { return core.Event{TurnID: "t2", Time: baseTime, Msg: msg} }
	r.RecordEvent(ev(core.TurnStarted{Kind: core.TurnRegular, StartedAt: baseTime}))
	r.RecordItem("t2", model.NewMessage("", "user", model.ContentPart{Type: "input_text", Text: "look"}, model.ContentPart{Type: "input_image", ImageURL: image}))
	r.RecordItem("t2", model.NewFunctionCallOutput("", "call_big", big))
	r.RecordEvent(ev(core.ItemCompleted{Item: core.AgentMessageItem{ID: "msg_big", Text: big}}))
	r.RecordEvent(ev(core.TurnComplete{LastAgentMessage: "done", CompletedAt: baseTime}))
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	for n, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if len(line) > maxLine {
			t.Errorf("line %d has %d bytes", n+1, len(line))
		}
	}
	if !strings.Contains(string(b), `"small <prompt> & \"quotes\""`) {
		t.Error("a record that fitted was changed")
	}
	th, err := s.Read(ctx, "t-long", ReadOptions{})
	if err != nil {
		t.Fatalf("the thread does not read back: %v", err)
	}
	var sawImage, sawOutput bool
	for _, it := range th.History {
		raw := string(it.Raw())
		if strings.Contains(raw, "input_image") {
			sawImage = strings.Contains(raw, `"image_url":"`+tinyPNG+`"`)
		}
		if strings.Contains(raw, "call_big") {
			sawOutput = strings.Contains(raw, "<out> <out>") && strings.Contains(raw, "bytes left out: too long for a line of the thread's record]")
		}
	}
	if !sawImage || !sawOutput {
		t.Errorf("history: the image made one pixel %v, the output shortened %v", sawImage, sawOutput)
	}
	var msg core.AgentMessageItem
	for _, it := range th.Turns[1].Items {
		if m, ok := it.(core.AgentMessageItem); ok && m.ID == "msg_big" {
			msg = m
		}
	}
	if !strings.HasPrefix(msg.Text, "<out> <out>") || !strings.HasSuffix(msg.Text, "bytes left out: too long for a line of the thread's record]") || th.Turns[1].Status != TurnCompleted {
		t.Errorf("the shortened message read back as %.60q…, the turn %v", msg.Text, th.Turns[1].Status)
	}
	if n := strings.Count(strings.Join(w.list(), "\n"), "was longer than a line of a rollout may be (65536 bytes); its longest strings were shortened"); n != 3 {
		t.Errorf("%d warnings: %v", n, w.list())
	}
}

// shrinkPayload gives up, and says so, when shortening every string is not
// enough; a string that is short already is kept whole.
func TestShrinkPayloadLimits(t *testing.T) {
	many := "[" + strings.Repeat(`"a",`, 10_000) + `"a"]`
	if _, ok := shrinkPayload([]byte(many), 1000); ok {
		t.Error("10,000 strings fit in 1,000 bytes")
	}
	short := `{"a":"x","b":"` + strings.Repeat("y", 10_000) + `","n":12345678901234567890}`
	got, ok := shrinkPayload([]byte(short), 5000)
	if !ok || len(got) > 5000 || !strings.Contains(string(got), `"a":"x"`) || !strings.Contains(string(got), "12345678901234567890") {
		t.Errorf("%v %s", ok, got)
	}
}
