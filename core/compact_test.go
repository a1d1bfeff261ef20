package core

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/model"
)

// A response that fills the context up to the limit makes the turn
// compact before it samples again.
func TestAutoCompactNearLimit(t *testing.T) {
	big := callEvents(functionCall("call_1", "update_plan", map[string]any{"plan": []any{map[string]any{"step": "a", "status": "pending"}}}))
	big[len(big)-1].Usage = &model.TokenUsage{InputTokens: 950, OutputTokens: 10, TotalTokens: 960}
	c := newFakeClient(t, script{events: big}, script{events: textEvents("msg_s", "summary of work")}, script{events: textEvents("msg_1", "finished")})
	s := newTestSession(t, c, func(cfg *Config) { cfg.ContextWindow = 1000 })
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("do the thing"))
	evs := col.waitFor(turnEnded)
	if tc := evs[len(evs)-1].Msg.(TurnComplete); tc.LastAgentMessage != "finished" || tc.Error != nil {
		t.Fatalf("turn = %+v", tc)
	}
	if len(eventsOf[ContextCompacted](evs)) != 1 {
		t.Fatalf("no compaction: %s", kinds(evs))
	}
	reqs := c.requests()
	if len(reqs[1].Tools) != 0 || !strings.Contains(rawList(reqs[1].Input), "Summarise this conversation") {
		t.Fatalf("second request is not the compaction")
	}
	third := rawList(reqs[2].Input)
	if !strings.Contains(third, "summary of work") || !strings.Contains(third, "do the thing") || strings.Contains(third, "call_1") {
		t.Fatalf("request after compaction:\n%s", third)
	}
}

// A context-window error compacts once and retries; a second one fails
// the turn.
func TestContextWindowExceededCompactsOnce(t *testing.T) {
	tooLong := &model.Error{Kind: model.ErrContextWindowExceeded, HTTPStatus: 400, Message: "context too long"}
	c := newFakeClient(t, script{connectErr: tooLong}, script{events: textEvents("msg_s", "short summary")}, script{connectErr: tooLong})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	evs := col.waitFor(turnEnded)
	tc := evs[len(evs)-1].Msg.(TurnComplete)
	if tc.Error == nil || tc.Error.Kind != KindContextWindowExceeded {
		t.Fatalf("turn = %+v", tc)
	}
	if len(eventsOf[ContextCompacted](evs)) != 1 || len(c.requests()) != 3 {
		t.Fatalf("%d requests, events %s", len(c.requests()), kinds(evs))
	}
}
