package core

import (
	"strings"
	"testing"
	"time"
)

// loopRunning reports whether the session's loop goroutine runs.
func loopRunning(s *Session) bool {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	return s.subs.running
}

// waitLoopStopped waits until the session's loop has returned.
func waitLoopStopped(t *testing.T, s *Session) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for loopRunning(s) {
		if time.Now().After(deadline) {
			t.Fatal("the idle session's loop never returned")
		}
		time.Sleep(time.Millisecond)
	}
}

// An idle session holds no loop goroutine: the loop returns once the
// queue is empty and no turn runs, and the next submission starts it
// again, with the state of the last run (the model gets the whole
// history).
func TestIdleSessionLoopStopsAndRestarts(t *testing.T) {
	c := newFakeClient(t,
		script{events: textEvents("msg_1", "first answer")},
		script{events: textEvents("msg_2", "second answer")},
	)
	s := newTestSession(t, c, nil)
	if loopRunning(s) {
		t.Fatal("a new session runs its loop before any submission")
	}
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), userInput("first question")); err != nil {
		t.Fatal(err)
	}
	col.waitFor(turnEnded)
	waitLoopStopped(t, s)
	if st, _ := s.Status(); st != StatusIdle {
		t.Fatalf("status %v after the turn", st)
	}
	if _, err := s.Call(ctx10(t), OpOverrideTurnContext{}); err != nil {
		t.Fatal(err)
	}
	waitLoopStopped(t, s)
	ack, err := s.Call(ctx10(t), userInput("second question"))
	if err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(func(ev Event) bool { return turnEnded(ev) && ev.TurnID == ack.TurnID })
	if done, ok := evs[len(evs)-1].Msg.(TurnComplete); !ok || done.Error != nil || done.LastAgentMessage != "second answer" {
		t.Fatalf("the second turn ended with %+v", evs[len(evs)-1].Msg)
	}
	waitLoopStopped(t, s)
	var texts []string
	for _, it := range c.requests()[1].Input {
		if txt := it.MessageText(); txt == "first question" || txt == "first answer" || txt == "second question" {
			texts = append(texts, txt)
		}
	}
	if strings.Join(texts, "|") != "first question|first answer|second question" {
		t.Fatalf("the second request's history: %q", texts)
	}
}
