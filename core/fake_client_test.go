package core

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

// fakeClient is a unit-test ModelClient: each Stream call takes the next
// script. End-to-end tests use the HTTP mock in test/mockmodel instead.
type fakeClient struct {
	t       *testing.T
	mu      sync.Mutex
	scripts []script
	reqs    []*model.Request
	metas   []model.CallMeta
	called  chan struct{}
}

// script is one scripted response: events, then err (nil: io.EOF after
// the events). If gate is set, the stream blocks before event gateAt until
// the gate is closed or the stream's context ends. limits are the rate
// limits of its headers (nil: an empty snapshot).
type script struct {
	connectErr error
	limits     *model.RateLimitSnapshot
	events     []model.StreamEvent
	err        error
	gate       chan struct{}
	gateAt     int
}

func newFakeClient(t *testing.T, scripts ...script) *fakeClient {
	return &fakeClient{t: t, scripts: scripts, called: make(chan struct{}, 100)}
}

func (c *fakeClient) requests() []*model.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*model.Request(nil), c.reqs...)
}

func (c *fakeClient) callMetas() []model.CallMeta {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]model.CallMeta(nil), c.metas...)
}

func (c *fakeClient) Stream(ctx context.Context, req *model.Request, meta model.CallMeta) (model.Stream, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.metas = append(c.metas, meta)
	if len(c.scripts) == 0 {
		c.mu.Unlock()
		c.t.Errorf("unexpected model request #%d", len(c.reqs))
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "no script"}
	}
	sc := c.scripts[0]
	c.scripts = c.scripts[1:]
	c.mu.Unlock()
	c.called <- struct{}{}
	if sc.connectErr != nil {
		return nil, sc.connectErr
	}
	return &fakeStream{ctx: ctx, sc: sc}, nil
}

type fakeStream struct {
	ctx context.Context
	sc  script
	i   int
}

func (s *fakeStream) Next() (model.StreamEvent, error) {
	if err := s.ctx.Err(); err != nil {
		return model.StreamEvent{}, err
	}
	if s.sc.gate != nil && s.i == s.sc.gateAt {
		select {
		case <-s.sc.gate:
			s.sc.gate = nil
		case <-s.ctx.Done():
			return model.StreamEvent{}, s.ctx.Err()
		}
	}
	if s.i < len(s.sc.events) {
		ev := s.sc.events[s.i]
		s.i++
		return ev, nil
	}
	if s.sc.err != nil {
		return model.StreamEvent{}, s.sc.err
	}
	return model.StreamEvent{}, io.EOF
}

func (s *fakeStream) Close() error { return nil }

func (s *fakeStream) RateLimits() model.RateLimitSnapshot {
	if s.sc.limits != nil {
		return *s.sc.limits
	}
	return model.RateLimitSnapshot{LimitID: model.DefaultLimitID}
}

// Builders for scripted events.

func evCreated() model.StreamEvent {
	return model.StreamEvent{Kind: model.EventCreated, ResponseID: "resp_1"}
}

func evCompleted(endTurn *bool) model.StreamEvent {
	return model.StreamEvent{Kind: model.EventCompleted, ResponseID: "resp_1", EndTurn: endTurn,
		Usage: &model.TokenUsage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}
}

func assistantItem(id, text string) model.ResponseItem {
	return model.NewResponseItem(map[string]any{
		"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	})
}

// textEvents scripts a message streamed in the given pieces.
func textEvents(id string, pieces ...string) []model.StreamEvent {
	evs := []model.StreamEvent{evCreated(), {Kind: model.EventOutputItemAdded, Item: model.NewResponseItem(map[string]any{"type": "message", "id": id, "role": "assistant", "content": []any{}})}}
	full := ""
	for _, p := range pieces {
		evs = append(evs, model.StreamEvent{Kind: model.EventOutputTextDelta, ItemID: id, Delta: p})
		full += p
	}
	return append(evs, model.StreamEvent{Kind: model.EventOutputItemDone, Item: assistantItem(id, full)}, evCompleted(nil))
}

func functionCall(callID, name string, args any) model.ResponseItem {
	b, _ := json.Marshal(args)
	return model.NewResponseItem(map[string]any{
		"type": "function_call", "id": "fc_" + callID, "status": "completed", "name": name, "arguments": string(b), "call_id": callID,
	})
}

// callEvents scripts a response that makes the given tool calls.
func callEvents(calls ...model.ResponseItem) []model.StreamEvent {
	evs := []model.StreamEvent{evCreated()}
	for _, c := range calls {
		evs = append(evs, model.StreamEvent{Kind: model.EventOutputItemAdded, Item: c}, model.StreamEvent{Kind: model.EventOutputItemDone, Item: c})
	}
	return append(evs, evCompleted(nil))
}

// collector reads a session's events in the background.
type collector struct {
	t    *testing.T
	mu   sync.Mutex
	evs  []Event
	more chan struct{}
}

func collect(t *testing.T, s *Session, check func(Event)) *collector {
	c := &collector{t: t, more: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for {
			ev, err := s.Events().Next(ctx)
			if err != nil {
				return
			}
			if check != nil {
				check(ev)
			}
			c.mu.Lock()
			c.evs = append(c.evs, ev)
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

// waitFor returns the events up to and including the first that matches.
func (c *collector) waitFor(pred func(Event) bool) []Event {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for i, ev := range c.evs {
			if pred(ev) {
				out := append([]Event(nil), c.evs[:i+1]...)
				c.mu.Unlock()
				return out
			}
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-deadline:
			c.t.Fatalf("timed out waiting for an event; have %d: %s", len(c.all()), kinds(c.all()))
		}
	}
}

func (c *collector) all() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.evs...)
}

func isMsg[T EventMsg](ev Event) bool {
	_, ok := ev.Msg.(T)
	return ok
}

func turnEnded(ev Event) bool {
	switch ev.Msg.(type) {
	case TurnComplete, TurnAborted:
		return true
	}
	return false
}

func kinds(evs []Event) string {
	s := ""
	for _, ev := range evs {
		s += typeName(ev.Msg) + " "
	}
	return s
}
