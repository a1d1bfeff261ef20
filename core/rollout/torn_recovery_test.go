package rollout

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tornThenGood is a thread whose turn's last record (written by agentd
// with a turnId) was cut short, with the record another program appended
// after it on the same line: the turn's completion.
func tornThenGood(t *testing.T, torn []byte) []byte {
	t.Helper()
	meta := testMeta(uuid7At(baseTime, 9), baseTime)
	b, _ := metaLine(meta)
	b = appendLine(b, baseTime, LineEventMsg, "t1", []byte(`{"type":"task_started","turn_id":"t1"}`))
	b = appendLine(b, baseTime, LineEventMsg, "t1", []byte(`{"type":"user_message","message":"hi","images":[],"local_images":[],"text_elements":[]}`))
	b = append(b, torn[:len(torn)-40]...)
	return appendLine(b, baseTime.Add(time.Second), LineEventMsg, "", []byte(`{"type":"task_complete","turn_id":"t1","last_agent_message":null}`))
}

// A torn record before a good one is skipped and the good one kept, for
// the records read lazily too (tool starts), in thread/read and in the
// index.
func TestTornRecordBeforeAGoodOne(t *testing.T) {
	for name, torn := range map[string][]byte{
		"tool start":    appendLine(nil, baseTime, LineEventMsg, "t1", []byte(`{"type":"exec_command_begin","call_id":"c1","turn_id":"t1","command":["ls"],"cwd":"/x","parsed_cmd":[],"source":"agent"}`)),
		"history item":  appendLine(nil, baseTime, LineResponseItem, "t1", []byte(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a long answer that was cut short here"}]}`)),
		"skipped event": appendLine(nil, baseTime, LineEventMsg, "t1", []byte(`{"type":"token_count","info":null,"rate_limits":null,"padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)),
	} {
		t.Run(name, func(t *testing.T) {
			b := tornThenGood(t, torn)
			p := filepath.Join(t.TempDir(), "rollout.jsonl")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			th := mustRead(t, p, ReadOptions{})
			if len(th.Turns) != 1 || th.Turns[0].Status != TurnCompleted {
				t.Fatalf("read: turns %+v (warnings %q)", th.Turns, th.Warnings)
			}
			s, _, err := continueSummary(bytes.NewReader(b), int64(len(b)), summaryLimits(Limits{}, 0), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Turns) != 1 || s.CurOpen {
				t.Fatalf("index: turns %+v, open %v", s.Turns, s.CurOpen)
			}
		})
	}
}

// A last line without its newline (being written) is not folded into the
// index's summary; the next scan, resuming before it, reads it once.
func TestIndexDoesNotApplyAnUnfinishedLineTwice(t *testing.T) {
	meta := testMeta(uuid7At(baseTime, 3), baseTime)
	b, _ := metaLine(meta)
	for _, id := range []string{"t1", "t2", "t3"} {
		b = appendLine(b, baseTime, LineEventMsg, id, []byte(`{"type":"task_started","turn_id":"`+id+`"}`))
		b = appendLine(b, baseTime, LineEventMsg, id, []byte(`{"type":"task_complete","turn_id":"`+id+`","last_agent_message":null}`))
	}
	rb := appendLine(nil, baseTime, LineEventMsg, "", []byte(`{"type":"thread_rolled_back","num_turns":1}`))
	partial := append(append([]byte{}, b...), rb[:len(rb)-1]...) // the record, not yet its newline
	s1, off, err := continueSummary(bytes.NewReader(partial), int64(len(partial)), summaryLimits(Limits{}, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	full := append(append([]byte{}, b...), rb...)
	s2, _, err := continueSummary(bytes.NewReader(full[off:]), int64(len(full))-off, summaryLimits(Limits{}, off), s1)
	if err != nil {
		t.Fatal(err)
	}
	th, _ := rebuild(context.Background(), bytes.NewReader(full), int64(len(full)), "x", ReadOptions{})
	if len(s2.Turns) != 2 || len(th.Turns) != 2 {
		t.Fatalf("index %d turns, read %d, want 2 and 2", len(s2.Turns), len(th.Turns))
	}
}
