package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
	"github.com/agentd-dev/agentd/test/proc"
)

// stallDeltas is the size of the turn the stalled reader ignores.
const stallDeltas = 100_000

// stallRSSLimit is the resident memory the daemon may reach while its
// stdio client reads nothing during a stallDeltas-delta turn. Measured on
// 2 cores: 23 MB, the deltas merged behind the stalled reader (29 MB since
// the outbound queue is bounded by memory, not by 1,024 messages); 62 MB
// when the event stream keeps every one of them.
const stallRSSLimit = 40 << 20

// interleavedMessages is a model reply of two assistant messages streamed
// at once, their deltas alternating (as two parallel commands interleave
// their output). The connection's queue merges a delta into the last
// queued delta of its own stream across the other stream's deltas, and the
// core's event stream merges behind a stalled thread: either keeps memory
// bounded here (with both disabled the daemon reached 73 MB), so this test
// guards the pair; core/eventqueue_test.go and server/rpc's outbox tests
// guard each one alone. It returns the reply's events before the items
// complete, the rest, and each message's text.
func interleavedMessages(n int) (streamed, rest []mockmodel.Events, texts [2]string) {
	ids := [2]string{"msg_a", "msg_b"}
	var b [2]strings.Builder
	add := func(id string) mockmodel.Events {
		return mockmodel.Raw("response.output_item.added", fmt.Sprintf(
			`{"output_index":0,"item":{"type":"message","id":%q,"role":"assistant","status":"in_progress","content":[]}}`, id))
	}
	streamed = append(streamed, mockmodel.Created("resp_1"), add(ids[0]), add(ids[1]))
	for i := 0; i < n; i++ {
		k := i % 2
		d := fmt.Sprintf("%s-%06d ", ids[k], i)
		b[k].WriteString(d)
		streamed = append(streamed, mockmodel.Raw("response.output_text.delta", fmt.Sprintf(
			`{"item_id":%q,"output_index":0,"content_index":0,"delta":%q}`, ids[k], d)))
	}
	for k, id := range ids {
		texts[k] = b[k].String()
		rest = append(rest, mockmodel.Raw("response.output_item.done", fmt.Sprintf(
			`{"output_index":0,"item":{"type":"message","id":%q,"role":"assistant","status":"completed","content":[{"type":"output_text","text":%q,"annotations":[]}]}}`, id, texts[k])))
	}
	rest = append(rest, mockmodel.Completed("resp_1", mockmodel.Usage{}))
	return streamed, rest, texts
}

// A stdio client that stops reading while a 100,000-delta turn runs costs
// the daemon bounded memory, and gets every delta's text (coalesced) and
// every item once it reads again.
func TestStalledStdioReaderCostsBoundedMemory(t *testing.T) {
	streamed, rest, texts := interleavedMessages(stallDeltas)
	nStreamed := 0
	for _, e := range streamed {
		nStreamed += len(e)
	}
	m := mockmodel.New(t)
	gate := mockmodel.NewGate()
	m.Enqueue(mockmodel.SSE(append(streamed, rest...)...).GateAfter(nStreamed, gate))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	in := json.NewEncoder(d.stdin)
	out := bufio.NewReaderSize(d.stdout, 1<<16)
	send := func(id int, method string, params any) {
		if err := in.Encode(map[string]any{"id": id, "method": method, "params": params}); err != nil {
			t.Fatal(err)
		}
	}
	// next reads one message; the test reads only when it means to.
	next := func() map[string]json.RawMessage {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("stdout: %v", err)
		}
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatalf("bad JSON %q: %v", line, err)
		}
		return msg
	}
	result := func(id int) json.RawMessage {
		for {
			msg := next()
			if string(msg["id"]) == strconv.Itoa(id) && msg["method"] == nil {
				if msg["error"] != nil {
					t.Fatalf("request %d: %s", id, msg["error"])
				}
				return msg["result"]
			}
		}
	}
	send(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "stall", "version": "1"}})
	result(1)
	send(2, "thread/start", map[string]any{"cwd": t.TempDir()})
	var started struct {
		Thread struct{ ID string } `json:"thread"`
	}
	if err := json.Unmarshal(result(2), &started); err != nil {
		t.Fatal(err)
	}
	send(3, "turn/start", map[string]any{"threadId": started.Thread.ID, "input": textInput("go")})

	// Stalled: the model streams every delta, the daemon takes them in.
	select {
	case <-gate.Reached():
	case <-time.After(turnTimeout):
		t.Fatal("the model's deltas were not all taken")
	}
	pid := d.Cmd.Process.Pid
	waitIdleCPU(t, pid)
	rss, err := procRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("daemon RSS with the reader stalled after %d deltas: %.1f MB", stallDeltas, float64(rss)/(1<<20))
	if rss > stallRSSLimit {
		t.Errorf("daemon RSS %.1f MB with a stalled reader, limit %d MB", float64(rss)/(1<<20), stallRSSLimit>>20)
	}

	// Reading again: the text of every delta arrives, in order per item,
	// then the items and the turn's end.
	gate.Open()
	var got [2]strings.Builder
	completed := map[string]bool{}
	for {
		msg := next()
		var method string
		_ = json.Unmarshal(msg["method"], &method)
		switch method {
		case "item/agentMessage/delta":
			var p struct {
				ItemID string `json:"itemId"`
				Delta  string `json:"delta"`
			}
			if err := json.Unmarshal(msg["params"], &p); err != nil {
				t.Fatal(err)
			}
			got[strings.Index("msg_a msg_b", p.ItemID)/6].WriteString(p.Delta)
		case "item/completed":
			var p struct {
				Item struct {
					ID   string `json:"id"`
					Text string `json:"text"`
				} `json:"item"`
			}
			_ = json.Unmarshal(msg["params"], &p)
			completed[p.Item.ID] = true
		case "turn/completed":
			for k := range texts {
				if got[k].String() != texts[k] {
					t.Fatalf("message %d: joined deltas (%d bytes) differ from the model's text (%d bytes)", k, got[k].Len(), len(texts[k]))
				}
			}
			if !completed["msg_a"] || !completed["msg_b"] {
				t.Fatalf("items completed: %v", completed)
			}
			return
		}
	}
}

// waitIdleCPU waits until process pid has used no CPU for a few samples
// in a row: it has taken in and queued what it was sent.
func waitIdleCPU(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(turnTimeout)
	last, quiet := time.Duration(-1), 0
	for quiet < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the daemon never went idle")
		}
		time.Sleep(100 * time.Millisecond)
		cpu, err := proc.CPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if cpu == last {
			quiet++
		} else {
			quiet = 0
		}
		last = cpu
	}
}
