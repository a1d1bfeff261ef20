package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

// slowEndSink stalls the recording of the first TurnComplete, as a slow
// fsync at turn end does.
type slowEndSink struct {
	entered, release chan struct{}
	once             bool
}

func (k *slowEndSink) RecordItem(string, model.ResponseItem) {}
func (k *slowEndSink) RecordEvent(ev Event) {
	if _, ok := ev.Msg.(TurnComplete); ok && !k.once {
		k.once = true
		close(k.entered)
		<-k.release
	}
}
func (k *slowEndSink) Flush(context.Context) error { return nil }
func (k *slowEndSink) Sync(context.Context) error  { return nil }

// Input that arrives while a turn is writing its end must start a new
// turn (or be refused), never be acknowledged as a steer of the ending turn.
func TestInputWhileTurnEndsIsNotLost(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_2", "b")})
	sink := &slowEndSink{entered: make(chan struct{}), release: make(chan struct{})}
	s := newTestSession(t, c, func(cfg *Config) { cfg.Sink = sink })
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), userInput("one")); err != nil {
		t.Fatal(err)
	}
	<-sink.entered // the turn has decided to end; its TurnComplete is being recorded
	_, ch, err := s.Submit(ctx10(t), userInput("two"))
	if err != nil {
		t.Fatal(err)
	}
	var r Reply
	select {
	case r = <-ch:
	case <-time.After(250 * time.Millisecond):
		// A fixed loop may hold the answer until the turn is gone.
	}
	close(sink.release)
	if r.Ack.Outcome == 0 && r.Err == nil {
		r = <-ch
	}
	if r.Err == nil && r.Ack.Outcome == AckSteered {
		t.Fatalf("input acknowledged as steering turn %s, which had already ended: the input is lost", r.Ack.TurnID)
	}
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "b" })
}

// A user shell command run during a turn is an item of that turn: the turn
// must not end before it, and nothing of it may follow the turn's end.
func TestUserShellDuringTurnEndsBeforeTurn(t *testing.T) {
	gate := make(chan struct{})
	c := newFakeClient(t, script{events: textEvents("msg_1", "a"), gate: gate, gateAt: 1})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), userInput("one")); err != nil {
		t.Fatal(err)
	}
	<-c.called
	ack, err := s.Call(ctx10(t), OpShellCommand{Command: "sleep 1; echo done"})
	if err != nil || ack.Outcome != AckSteered {
		t.Fatalf("%+v %v", ack, err)
	}
	col.waitFor(isMsg[ExecCommandBegin])
	close(gate)
	col.waitFor(func(ev Event) bool {
		m, ok := ev.Msg.(ItemCompleted)
		if !ok {
			return false
		}
		_, ok = m.Item.(CommandExecutionItem)
		return ok
	})
	evs := col.all()
	ended := false
	for _, ev := range evs {
		if turnEnded(ev) {
			ended = true
			continue
		}
		if m, ok := ev.Msg.(ItemCompleted); ok && ended {
			t.Fatalf("item/completed of %T after the turn ended; events: %s", m.Item, kinds(evs))
		}
	}
}

// slowSyncSink stalls Sync, as an fsync at shutdown does.
type slowSyncSink struct {
	entered, release chan struct{}
}

func (k *slowSyncSink) RecordItem(string, model.ResponseItem) {}
func (k *slowSyncSink) RecordEvent(Event)                     {}
func (k *slowSyncSink) Flush(context.Context) error           { return nil }
func (k *slowSyncSink) Sync(context.Context) error {
	close(k.entered)
	<-k.release
	return nil
}

// A submission queued while the session shuts down must be answered
// (refused), not left waiting forever.
func TestCallQueuedDuringShutdownIsAnswered(t *testing.T) {
	sink := &slowSyncSink{entered: make(chan struct{}), release: make(chan struct{})}
	s := newTestSession(t, newFakeClient(t), func(cfg *Config) { cfg.Sink = sink })
	collect(t, s, nil)
	if _, _, err := s.Submit(ctx10(t), OpShutdown{}); err != nil {
		t.Fatal(err)
	}
	<-sink.entered
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := s.Call(ctx, OpOverrideTurnContext{})
		errc <- err
	}()
	for s.subs.len() == 0 { // the op is queued behind the shutdown
		time.Sleep(time.Millisecond)
	}
	close(sink.release)
	err := <-errc
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Reason != RejectShutdown {
		t.Fatalf("Call queued behind OpShutdown returned %v; want a RejectShutdown at once", err)
	}
}
