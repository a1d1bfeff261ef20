package core

import (
	"testing"

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
