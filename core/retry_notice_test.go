package core

import (
	"context"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

// A retry notice after an HTTP 5xx carries no HTTP status, as the
// reference's "Reconnecting... n/m" errors show (httpStatusCode null in
// failed-500-turn.jsonl); a retried 429 keeps its status.
func TestRetryNoticeHTTPStatus(t *testing.T) {
	c := newFakeClient(t,
		script{connectErr: &model.Error{Kind: model.ErrInternalServer, HTTPStatus: 500, Message: "busy"}},
		script{connectErr: &model.Error{Kind: model.ErrRateLimited, HTTPStatus: 429, Message: "slow down"}},
		script{events: textEvents("msg_1", "ok")},
	)
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	var notices []StreamError
	for _, ev := range col.waitFor(turnEnded) {
		if m, ok := ev.Msg.(StreamError); ok {
			notices = append(notices, m)
		}
	}
	if len(notices) != 2 {
		t.Fatalf("notices = %+v", notices)
	}
	if notices[0].Kind != KindStreamDisconnected || notices[0].HTTPStatus != 0 {
		t.Errorf("after a 500: %+v, want kind %v and no HTTP status", notices[0], KindStreamDisconnected)
	}
	if notices[1].HTTPStatus != 429 {
		t.Errorf("after a 429: %+v, want HTTP status 429", notices[1])
	}
}

// A plain 429 fails the turn at once (no retry notice), as the reference;
// with Retry-After the turn retries it after that delay, each retry
// announced as a stream disconnect with status 429.
func TestHTTP429RetriedByTheTurnOnlyWithRetryAfter(t *testing.T) {
	plain := &model.Error{Kind: model.ErrRetryLimit, HTTPStatus: 429, Message: "exceeded retry limit, last status: 429 Too Many Requests"}
	c := newFakeClient(t, script{connectErr: plain})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	for _, ev := range col.waitFor(turnEnded) {
		if _, ok := ev.Msg.(StreamError); ok {
			t.Fatalf("plain 429 was retried")
		}
		if m, ok := ev.Msg.(Error); ok && (m.Err.Kind != KindTooManyFailedAttempts || m.Err.HTTPStatus != 429) {
			t.Fatalf("error %+v", m.Err)
		}
	}

	after := *plain
	after.RetryAfter = 2 * time.Second
	c = newFakeClient(t, script{connectErr: &after}, script{events: textEvents("msg_1", "ok")})
	var waits []time.Duration
	s = newTestSession(t, c, func(cfg *Config) {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	})
	col = collect(t, s, nil)
	s.Call(ctx10(t), userInput("go"))
	var notices []StreamError
	for _, ev := range col.waitFor(turnEnded) {
		if m, ok := ev.Msg.(StreamError); ok {
			notices = append(notices, m)
		}
	}
	if len(notices) != 1 || notices[0].HTTPStatus != 429 || notices[0].Kind != KindStreamDisconnected || notices[0].Details != plain.Message {
		t.Fatalf("notices %+v", notices)
	}
	if len(waits) != 1 || waits[0] != 2*time.Second {
		t.Fatalf("waits %v", waits)
	}
}
