package model

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmaxmax/go-sse"
	"go.uber.org/zap"
)

// A typical text delta as OpenAI sends it.
const benchDelta = "event: response.output_text.delta\n" +
	`data: {"type":"response.output_text.delta","sequence_number":42,"item_id":"msg_0123456789abcdef0123456789abcdef","output_index":1,"content_index":0,"delta":" token","logprobs":[],"obfuscation":"Zx9q"}` + "\n\n"

const benchHead = "event: response.created\n" +
	`data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"bench"}}` + "\n\n" +
	"event: response.output_item.added\n" +
	`data: {"type":"response.output_item.added","sequence_number":1,"output_index":1,"item":{"id":"msg_0123456789abcdef0123456789abcdef","type":"message","status":"in_progress","content":[],"role":"assistant"}}` + "\n\n"

const benchTail = "event: response.completed\n" +
	`data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","model":"bench","usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}}` + "\n\n"

// deltaBody is a reader of benchHead, n text deltas and benchTail, made
// without holding n deltas in memory.
type deltaBody struct {
	left int // deltas still to produce
	cur  string
}

func newDeltaBody(n int) *deltaBody {
	return &deltaBody{left: n, cur: benchHead}
}

func (r *deltaBody) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if r.cur == "" {
			switch {
			case r.left > 0:
				// 32 deltas per refill keeps reads large.
				k := min(r.left, 32)
				r.cur = strings.Repeat(benchDelta, k)
				r.left -= k
			case r.left == 0:
				r.cur, r.left = benchTail, -1
			default:
				if total == 0 {
					return 0, io.EOF
				}
				return total, nil
			}
		}
		n := copy(p, r.cur)
		r.cur = r.cur[n:]
		p = p[n:]
		total += n
	}
	return total, nil
}

func (r *deltaBody) Close() error { return nil }

// benchStream wraps body as a stream without HTTP.
func benchStream(body io.ReadCloser) *sseStream {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sseStream{ctx: ctx, cancel: cancel, log: zap.NewNop(), model: "bench", idle: time.Minute}
	s.timer = time.AfterFunc(time.Minute, s.onIdle)
	s.start(body)
	return s
}

func consume(b *testing.B, st Stream, want int) {
	deltas := 0
	for {
		ev, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if ev.Kind == EventOutputTextDelta {
			deltas++
		}
	}
	if deltas != want {
		b.Fatalf("%d deltas, want %d", deltas, want)
	}
}

// BenchmarkParseDeltas: SSE bytes in memory to StreamEvents (go-sse framing
// plus our parser); one op is one text delta.
func BenchmarkParseDeltas(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchDelta)))
	st := benchStream(newDeltaBody(b.N))
	b.ResetTimer()
	consume(b, st, b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkGoSSEOnly is the floor set by go-sse itself: framing the same
// bytes into events, no JSON.
func BenchmarkGoSSEOnly(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchDelta)))
	n := 0
	for ev, err := range sse.Read(newDeltaBody(b.N), sseReadConfig) {
		if err != nil {
			b.Fatal(err)
		}
		n += len(ev.Data)
	}
	if n == 0 {
		b.Fatal("no events")
	}
}

// BenchmarkScanDelta and BenchmarkUnmarshalDelta compare our scanner with
// encoding/json on the data of one delta.
func BenchmarkScanDelta(b *testing.B) {
	data := benchDelta[strings.Index(benchDelta, "{") : len(benchDelta)-2]
	b.ReportAllocs()
	var f eventFields
	for b.Loop() {
		if err := scanEvent(data, &f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalDelta(b *testing.B) {
	data := []byte(benchDelta[strings.Index(benchDelta, "{") : len(benchDelta)-2])
	b.ReportAllocs()
	var f struct {
		Type         string `json:"type"`
		ItemID       string `json:"item_id"`
		Delta        string `json:"delta"`
		ContentIndex int    `json:"content_index"`
	}
	for b.Loop() {
		if err := json.Unmarshal(data, &f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientDelta: the whole client over loopback HTTP, from bytes on
// the socket to StreamEvent; one op is one text delta. The server side
// (writing the pre-built stream) runs on the same machine and is included.
func BenchmarkClientDelta(b *testing.B) {
	for _, perResponse := range []int{1000, 100000} {
		b.Run("deltas="+strconv.Itoa(perResponse), func(b *testing.B) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n, _ := strconv.Atoi(r.URL.Query().Get("n"))
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.Copy(w, newDeltaBody(n))
			}))
			defer hs.Close()
			b.ReportAllocs()
			b.SetBytes(int64(len(benchDelta)))
			req := &Request{Model: "bench", Stream: true}
			for left := b.N; left > 0; left -= perResponse {
				n := min(left, perResponse)
				c := NewClient(Provider{BaseURL: hs.URL + "/v1", QueryParams: map[string]string{"n": strconv.Itoa(n)}},
					WithHTTPClient(hs.Client()))
				st, err := c.Stream(context.Background(), req, CallMeta{})
				if err != nil {
					b.Fatal(err)
				}
				consume(b, st, n)
				st.Close()
			}
		})
	}
}
