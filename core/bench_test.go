package core

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// benchDelta is a typical text delta: a word or two, as models stream.
const benchDelta = "hello, "

// deltaClient is an in-memory model client whose one response is a
// message of n text deltas, made as they are read (so the script costs no
// memory per delta and the figures are the core's).
type deltaClient struct{ n int }

func (c deltaClient) Stream(ctx context.Context, _ *model.Request, _ model.CallMeta) (model.Stream, error) {
	return &deltaStream{ctx: ctx, n: c.n}, nil
}

type deltaStream struct {
	ctx context.Context
	n   int
	i   int // events returned so far
}

func (s *deltaStream) RateLimits() model.RateLimitSnapshot {
	return model.RateLimitSnapshot{LimitID: model.DefaultLimitID}
}

// Next yields created, item added, n deltas, item done, completed.
func (s *deltaStream) Next() (model.StreamEvent, error) {
	if err := s.ctx.Err(); err != nil {
		return model.StreamEvent{}, err
	}
	i := s.i
	s.i++
	switch {
	case i == 0:
		return evCreated(), nil
	case i == 1:
		return model.StreamEvent{Kind: model.EventOutputItemAdded, Item: model.NewResponseItem(map[string]any{
			"type": "message", "id": "msg_1", "role": "assistant", "content": []any{}})}, nil
	case i < s.n+2:
		return model.StreamEvent{Kind: model.EventOutputTextDelta, ItemID: "msg_1", Delta: benchDelta}, nil
	case i == s.n+2:
		// The done item's text is not the concatenation: building it would
		// cost the benchmark n*len(benchDelta) bytes up front, and the core
		// takes the done item's text as it is.
		return model.StreamEvent{Kind: model.EventOutputItemDone, Item: assistantItem("msg_1", "done")}, nil
	case i == s.n+3:
		return evCompleted(nil), nil
	}
	return model.StreamEvent{}, io.EOF
}

func (s *deltaStream) Close() error { return nil }

// BenchmarkCoreDelta measures the core's cost per streamed text delta:
// from the model stream's event to the AgentMessageDelta read from the
// session's Events(), with one reader draining the stream as the server's
// pump does. One op is one delta of a turn of b.N deltas; the turn's fixed
// cost (start, context items, request, end) is included and amortised.
// merged-frac is the share of deltas the event stream merged because the
// reader fell behind (it does on 2 cores, where the reader competes with
// the producer).
func BenchmarkCoreDelta(b *testing.B) {
	for _, sink := range []bool{false, true} {
		name := "nosink"
		if sink {
			name = "sink"
		}
		b.Run(name, func(b *testing.B) { benchCoreDelta(b, sink) })
	}
}

// discardSink is a Sink that keeps nothing, to include the sink calls the
// server's rollout recorder receives without measuring the recorder.
type discardSink struct{}

func (discardSink) RecordItem(string, model.ResponseItem) {}
func (discardSink) RecordEvent(Event)                     {}
func (discardSink) Flush(context.Context) error           { return nil }
func (discardSink) Sync(context.Context) error            { return nil }

func benchCoreDelta(b *testing.B, withSink bool) {
	cfg := Config{
		ThreadID:       "thread-bench",
		Model:          "test-model",
		Provider:       "test",
		Client:         deltaClient{n: b.N},
		Cwd:            b.TempDir(),
		ApprovalPolicy: policy.ApprovalNever,
		Sandbox:        policy.ReadOnly(),
	}
	if withSink {
		cfg.Sink = discardSink{}
	}
	s, err := NewSession(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	type result struct {
		deltas, bytes int
		err           error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for {
			ev, err := s.Events().Next(ctx)
			if err != nil {
				r.err = err
				done <- r
				return
			}
			switch m := ev.Msg.(type) {
			case AgentMessageDelta:
				r.deltas++
				r.bytes += len(m.Delta)
			case TurnComplete:
				if m.Error != nil {
					r.err = &RejectError{Message: m.Error.Message}
				}
				done <- r
				return
			}
		}
	}()

	b.ReportAllocs()
	b.ResetTimer()
	if _, err := s.Call(ctx, userInput("go")); err != nil {
		b.Fatal(err)
	}
	r := <-done
	b.StopTimer()
	if r.err != nil {
		b.Fatal(r.err)
	}
	// A reader that falls 1,024 events behind gets deltas merged: the text
	// must be whole, the number of events may be smaller.
	if r.bytes != b.N*len(benchDelta) || r.deltas > b.N {
		b.Fatalf("read %d deltas (%d bytes), want the text of %d", r.deltas, r.bytes, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deltas/s")
	b.ReportMetric(float64(b.N-r.deltas)/float64(b.N), "merged-frac")
}
