package test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// stampModel is a Responses server for the latency benchmark: one message
// of n deltas, paced, each delta "t=<unixnano>;" stamped just before it is
// written. mockmodel scripts its text in advance, so it cannot stamp; the
// other events are mockmodel's. The test process and the mock share the
// clock, so a client in the test process can subtract.
type stampModel struct {
	b    *testing.B
	n    int
	pace time.Duration
	// texts receives the whole streamed text of each response.
	texts chan string
}

func (s *stampModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.Error(w, "not served", http.StatusNotFound)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	seq := 0
	send := func(e mockmodel.Event) bool {
		e.Data["sequence_number"] = seq
		seq++
		data, err := json.Marshal(e.Data)
		if err != nil {
			s.b.Error(err)
			return false
		}
		var buf bytes.Buffer
		buf.WriteString("event: " + e.Type + "\ndata: ")
		buf.Write(data)
		buf.WriteString("\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	msg := mockmodel.TextN("msg_1", "x", 1) // added, one delta, done
	for _, e := range mockmodel.Created("resp_1") {
		send(e)
	}
	send(msg[0])
	var text strings.Builder
	for i := 0; i < s.n; i++ {
		if i > 0 {
			time.Sleep(s.pace)
		}
		d := msg[1]
		d.Data = map[string]any{"type": d.Type, "item_id": "msg_1", "output_index": 0, "content_index": 0}
		// The stamp is taken as late as possible: encoding comes after.
		stamp := "t=" + strconv.FormatInt(time.Now().UnixNano(), 10) + ";"
		d.Data["delta"] = stamp
		text.WriteString(stamp)
		if !send(d) {
			return
		}
	}
	done := mockmodel.TextN("msg_1", text.String(), 1)
	send(done[len(done)-1])
	send(mockmodel.Completed("resp_1", mockmodel.Usage{})[0])
	s.texts <- text.String()
}

// Latency figures: deltas per turn and the pace between them. 1,000
// deltas a second is far below what the pipeline carries (see
// BenchmarkTurn20kStdio), so nothing queues and nothing is coalesced.
const (
	latencyDeltas = 1000
	latencyPace   = time.Millisecond
)

// BenchmarkDeltaLatencyStdio measures the latency from a delta leaving the
// mock model (its stamp) to its item/agentMessage/delta being read by a
// stdio client, through the real binary, in the unsaturated case: 1,000
// deltas paced 1 ms apart per op (a fresh daemon each op). It reports the
// median, 99th percentile and maximum over all deltas of all ops, and
// coalesced/op (deltas that arrived merged with another: expected 0; a
// merged delta counts with the arrival time of its notification).
func BenchmarkDeltaLatencyStdio(b *testing.B) {
	model := &stampModel{b: b, n: latencyDeltas, pace: latencyPace, texts: make(chan string, 1)}
	srv := httptest.NewServer(model)
	defer srv.Close()
	var all []int64
	coalesced := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d := Start(b, Options{ConfigTOML: benchConfig(srv.URL + "/v1")})
		c := benchStdio(b, d, true)
		c.initialize()
		threadID := c.startThread(b.TempDir())
		b.StartTimer()
		c.request("turn/start", map[string]any{"threadId": threadID, "input": textInput("go")})
		status, _ := c.turnCompleted()
		b.StopTimer()
		if status != "completed" {
			b.Fatalf("turn %s", status)
		}
		var text string
		select {
		case text = <-model.texts:
		case <-time.After(WaitTimeout):
			b.Fatal("the model did not finish its response")
		}
		c.checkText(text)
		if len(c.latency) != latencyDeltas {
			b.Fatalf("%d stamps read, want %d", len(c.latency), latencyDeltas)
		}
		all = append(all, c.latency...)
		coalesced += latencyDeltas - c.deltas
		exitUsage(b, d, true)
		b.StartTimer()
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))]) / 1e3
	}
	b.ReportMetric(pct(0.5), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(all[len(all)-1])/1e3, "max-µs")
	b.ReportMetric(float64(coalesced)/float64(b.N), "coalesced/op")
}
