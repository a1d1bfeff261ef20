package model_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// These tests run in a synctest bubble over the mock's in-memory network,
// so the idle timeout and the retry waits use the bubble's fake clock: they
// are exact and take no real time.

func TestIdleTimeoutMidStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mockmodel.NewInMemory(t)
		srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "a b c")).StallAfter(3))
		p := provider(srv)
		p.StreamIdleTimeout = 7 * time.Second
		c := model.NewClient(p, model.WithHTTPClient(srv.HTTPClient()))
		st, err := c.Stream(t.Context(), request("hi"), meta)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := st.Next(); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		_, err = st.Next()
		me := modelError(t, err)
		if me.Kind != model.ErrStreamIdleTimeout || !me.Retryable() || me.Message != "idle timeout waiting for SSE" {
			t.Errorf("got %v %q, want a retryable idle timeout", me.Kind, me.Message)
		}
		if waited := time.Since(start); waited != 7*time.Second {
			t.Errorf("timed out after %v of silence, want 7s", waited)
		}
		<-srv.Disconnected(0)
		st.Close()
	})
}

func TestIdleTimerResetByData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mockmodel.NewInMemory(t)
		// 6 s between events, 7 s idle timeout: slow but never idle.
		srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one two three four")).Pace(6 * time.Second))
		p := provider(srv)
		p.StreamIdleTimeout = 7 * time.Second
		c := model.NewClient(p, model.WithHTTPClient(srv.HTTPClient()))
		start := time.Now()
		st, err := c.Stream(t.Context(), request("hi"), meta)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := readAll(st)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 8 || time.Since(start) != 7*6*time.Second {
			t.Errorf("%d events in %v, want 8 in 42s", len(evs), time.Since(start))
		}
	})
}

func TestIdleTimeoutBeforeHeadersIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mockmodel.NewInMemory(t)
		srv.Enqueue(
			mockmodel.Reply("resp_1").HoldHeaders(nil),
			mockmodel.Reply("resp_2").HoldHeaders(nil),
		)
		p := provider(srv)
		p.StreamIdleTimeout = 10 * time.Second
		p.RequestMaxRetries = 1
		var sl sleeps
		c := model.NewClient(p, model.WithHTTPClient(srv.HTTPClient()), model.WithSleep(sl.sleep))
		start := time.Now()
		_, err := c.Stream(t.Context(), request("hi"), meta)
		if me := modelError(t, err); me.Kind != model.ErrStreamIdleTimeout {
			t.Errorf("got %v, want an idle timeout", me)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
		if d := time.Since(start); d != 20*time.Second {
			t.Errorf("gave up after %v, want 2 × 10s", d)
		}
		<-srv.Disconnected(1)
	})
}

func TestDefaultRetryWaitUsesBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mockmodel.NewInMemory(t)
		srv.Enqueue(mockmodel.Status(500, ``), mockmodel.Status(500, ``), mockmodel.Status(500, ``),
			mockmodel.Reply("resp_1"))
		p := provider(srv)
		p.RequestMaxRetries = 3
		c := model.NewClient(p, model.WithHTTPClient(srv.HTTPClient()))
		start := time.Now()
		st, err := c.Stream(t.Context(), request("hi"), meta)
		if err != nil {
			t.Fatal(err)
		}
		waited := time.Since(start)
		// 200 + 400 + 800 ms, each ±10 %.
		if lo, hi := 1260*time.Millisecond, 1540*time.Millisecond; waited < lo || waited > hi {
			t.Errorf("waited %v before the 4th attempt, want within [%v, %v]", waited, lo, hi)
		}
		if _, err := readAll(st); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCancelWhileWaitingForRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mockmodel.NewInMemory(t, mockmodel.AllowUnused())
		srv.Enqueue(mockmodel.Status(500, ``), mockmodel.Reply("resp_1"))
		p := provider(srv)
		p.RequestMaxRetries = 3
		c := model.NewClient(p, model.WithHTTPClient(srv.HTTPClient()))
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := c.Stream(ctx, request("hi"), meta); err != context.DeadlineExceeded {
			t.Errorf("Stream = %v, want context.DeadlineExceeded", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}
