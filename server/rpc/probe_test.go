package rpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The prober's requests are answered through a connection of its own,
// which is not counted, listed or broadcast to; once it is closed, a
// probe fails.
func TestProberAndStatus(t *testing.T) {
	obs := &countingObserver{}
	s := newTestServer(t, func(o *Options) { o.Observer = obs })
	s.Gauge("threads loaded", func() int { return 7 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := s.NewProber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := p.Probe(ctx); err != nil {
			t.Fatalf("probe: %v", err)
		}
	}
	s.Broadcast("test/broadcast", map[string]any{})
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("probe after a broadcast: %v", err)
	}
	if got := s.Status(); got != "0 connections, 7 threads loaded" {
		t.Fatalf("status %q", got)
	}
	if len(s.Conns()) != 0 {
		t.Fatal("the probe connection is listed")
	}
	if n := obs.n.Load(); n != 0 {
		t.Fatalf("%d probe requests reached the metrics", n)
	}
	_ = p.Close()
	if err := p.Probe(ctx); err == nil {
		t.Fatal("a probe on a closed connection succeeded")
	}
}

type countingObserver struct{ n atomic.Int64 }

func (o *countingObserver) RequestDone(string, string, time.Duration) { o.n.Add(1) }

// A probe is answered only while requests are dispatched: held, it is
// not answered (within a quiet window, ended by its deadline); released,
// it is, and so is the next.
func TestProbeWaitsForAHeldDispatch(t *testing.T) {
	s := newTestServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := s.NewProber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	release := s.HoldDispatch()
	quiet, cancelQuiet := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelQuiet()
	if err := p.Probe(quiet); err == nil {
		t.Fatal("a probe was answered while the dispatch was held")
	}
	release()
	release()
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("probe after release: %v", err)
	}
}
