package model_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// waitTimeout bounds every wait in these tests; it is generous on purpose.
const waitTimeout = 10 * time.Second

// sleeps records the delays the client waits between connection retries
// without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// provider returns a provider for srv with no retries unless set.
func provider(srv *mockmodel.Server) model.Provider {
	return model.Provider{ID: "mock", Name: "Mock", BaseURL: srv.URL(), WireAPI: "responses"}
}

func request(text string) *model.Request {
	return &model.Request{
		Model:             "mock-model",
		Input:             []model.ResponseItem{model.NewTextMessage("", "user", text)},
		Tools:             nil,
		ToolChoice:        "auto",
		ParallelToolCalls: true,
		Stream:            true,
		Include:           []string{"reasoning.encrypted_content"},
	}
}

var meta = model.CallMeta{Originator: "agentd-tests", UserAgent: "agentd-tests/0.1", ThreadID: "thr_1", TurnID: "turn_1"}

// drain reads st to its end: the events, and the error that ended it (nil
// for a clean io.EOF after response.completed). It fails the test if the
// stream does not end within waitTimeout.
func drain(t *testing.T, st model.Stream) ([]model.StreamEvent, error) {
	t.Helper()
	type result struct {
		evs []model.StreamEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for {
			ev, err := st.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.err = err
				break
			}
			r.evs = append(r.evs, ev)
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r.evs, r.err
	case <-time.After(waitTimeout):
		st.Close()
		t.Fatalf("stream did not end within %v", waitTimeout)
		return nil, nil
	}
}

// readAll reads st to its end without a timeout, for synctest bubbles
// (where a hang is reported as a deadlock and time.After is fake).
func readAll(st model.Stream) ([]model.StreamEvent, error) {
	var evs []model.StreamEvent
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// modelError asserts that err is a *model.Error and returns it.
func modelError(t *testing.T, err error) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	return me
}

func kinds(evs []model.StreamEvent) []model.StreamEventKind {
	out := make([]model.StreamEventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}
