package mockmodel_test

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// Each stamped delta is the time it was written, and the done item and
// response.completed carry exactly what the deltas sent.
func TestStampedTextStampsEachDeltaWhenWritten(t *testing.T) {
	s := mockmodel.New(t)
	s.Enqueue(mockmodel.Reply("r1", mockmodel.StampedText("msg_1", 5)).Pace(2 * time.Millisecond))
	before := time.Now().UnixNano()
	_, body := post(t, s, `{}`)
	after := time.Now().UnixNano()
	var sent strings.Builder
	var stamps []int64
	var done, completed string
	for _, e := range events(t, body) {
		switch e.Type {
		case "response.output_text.delta":
			d := e.Data["delta"].(string)
			sent.WriteString(d)
			got, ok := mockmodel.ParseStamps(d, nil)
			if !ok || len(got) != 1 {
				t.Fatalf("delta %q is not one stamp", d)
			}
			stamps = append(stamps, got[0])
		case "response.output_item.done":
			done = itemText(e.Data["item"])
		case "response.completed":
			out := e.Data["response"].(map[string]any)["output"].([]any)
			completed = itemText(out[0])
		}
	}
	if len(stamps) != 5 {
		t.Fatalf("%d stamped deltas, want 5", len(stamps))
	}
	for i, st := range stamps {
		if st < before || st > after || (i > 0 && st <= stamps[i-1]) {
			t.Errorf("stamp %d = %d: outside [%d, %d] or not after the one before", i, st, before, after)
		}
	}
	if done != sent.String() || completed != sent.String() {
		t.Errorf("done text %q, completed output %q; the deltas sent %q", done, completed, sent.String())
	}
	// A second playing of the same Response stamps anew.
	s.Enqueue(mockmodel.Reply("r2", mockmodel.StampedText("msg_1", 1)))
	_, body2 := post(t, s, `{}`)
	if strings.Contains(body2, sent.String()[:20]) {
		t.Errorf("second response repeats the first one's stamps")
	}
}

func itemText(v any) string {
	content, _ := v.(map[string]any)["content"].([]any)
	if len(content) != 1 {
		return ""
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

func TestParseStamps(t *testing.T) {
	got, ok := mockmodel.ParseStamps("t=1;t=22;", nil)
	if !ok || len(got) != 2 || got[0] != 1 || got[1] != 22 {
		t.Errorf("ParseStamps(two) = %v, %v", got, ok)
	}
	for _, bad := range []string{"t=1", "x=1;", "t=;", "t=1;junk"} {
		if _, ok := mockmodel.ParseStamps(bad, nil); ok {
			t.Errorf("ParseStamps(%q) accepted", bad)
		}
	}
}

// A server made by Serve answers from Respond once the script is empty,
// and with DropRequests keeps no request.
func TestServeRespondsOutsideATest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reported []string
	s := mockmodel.Serve(l, func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, f)
	},
		mockmodel.DropRequests(),
		mockmodel.Respond(func(r mockmodel.Request) mockmodel.Response {
			return mockmodel.Reply("gen", mockmodel.Text("m", "echo "+r.LastUserText()))
		}))
	defer s.Close()
	s.Enqueue(mockmodel.Reply("scripted", mockmodel.Text("m", "first")))
	_, body := post(t, s, `{"input":[]}`)
	if !strings.Contains(body, `"delta":"first"`) {
		t.Errorf("the scripted response was not served first: %q", body)
	}
	_, body = post(t, s, `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"ping"}]}]}`)
	if !strings.Contains(body, `"delta":"ping"`) {
		t.Errorf("Respond's answer not served: %q", body)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d requests kept with DropRequests", n)
	}
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 0 {
		t.Errorf("reported %q", reported)
	}
}
