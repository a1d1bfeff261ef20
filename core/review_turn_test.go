package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/review"
)

func reviewOp(instructions string) OpReview {
	t := review.Target{Kind: review.Custom, Instructions: instructions}
	return OpReview{Request: review.Request{Target: t, Hint: t.Hint(), Prompt: instructions, Changes: "the diff"}, Model: "review-model"}
}

// A review turn: enteredReviewMode before anything else of the turn, the
// reviewer's task, no message or usage of the reviewer's, then the review
// as exitedReviewMode and an agent message, which alone reach the
// thread's history. The reviewer's request is a sub-agent's.
func TestReviewTurn(t *testing.T) {
	answer := `{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Fine.","overall_confidence_score":0.9}`
	c := newFakeClient(t, script{events: textEvents("msg_r", answer[:10], answer[10:])})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	ack, err := s.Call(ctx10(t), reviewOp("check it"))
	if err != nil || ack.Outcome != AckStarted {
		t.Fatalf("ack %+v, %v", ack, err)
	}
	evs := col.waitFor(turnEnded)
	var kinds []string
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			kinds = append(kinds, "started "+itemName(m.Item))
		case ItemCompleted:
			kinds = append(kinds, "completed "+itemName(m.Item))
		default:
			kinds = append(kinds, typeName(ev.Msg))
		}
	}
	want := []string{
		"SessionConfigured", "TurnStarted",
		"started EnteredReviewModeItem", "completed EnteredReviewModeItem",
		"started UserMessageItem", "completed UserMessageItem",
		"RawResponseCompleted", "RateLimits",
		"started ExitedReviewModeItem", "RawResponseItem", "completed ExitedReviewModeItem",
		"started AgentMessageItem", "RawResponseItem", "completed AgentMessageItem", "AgentMessage",
		"TurnComplete",
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events:\n got %v\nwant %v", kinds, want)
	}
	if k := evs[1].Msg.(TurnStarted).Kind; k != TurnReview {
		t.Fatalf("turn kind %q", k)
	}
	if done := evs[len(evs)-1].Msg.(TurnComplete); done.LastAgentMessage != "Fine." || done.Error != nil {
		t.Fatalf("turn end %+v", done)
	}
	exited := evs[10].Msg.(ItemCompleted).Item.(ExitedReviewModeItem)
	if exited.Review != "Fine." || exited.Output == nil || exited.Output.OverallCorrectness != "patch is correct" {
		t.Fatalf("exited %+v", exited)
	}

	hist := s.History()
	if len(hist) != 2 || hist[0].Role() != "user" || !strings.Contains(hist[0].MessageText(), "Fine.") ||
		!strings.Contains(hist[0].MessageText(), "check it") || hist[1].Role() != "assistant" || hist[1].MessageText() != "Fine." {
		t.Fatalf("thread history after the review: %s", rawList(hist))
	}

	req, meta := c.requests()[0], c.callMetas()[0]
	if req.Model != "review-model" || req.PromptCacheKey != "thread-1" || len(req.Input) != 3 ||
		req.Input[0].MessageText() != review.Instructions || req.Input[2].MessageText() != "check it\n\nthe diff" {
		t.Fatalf("reviewer request %s", rawList(req.Input))
	}
	if meta.SubAgent != "review" || meta.ParentThreadID != "thread-1" || meta.SessionID != "thread-1" || meta.ThreadID == "thread-1" || meta.ThreadID == "" {
		t.Fatalf("reviewer call meta %+v", meta)
	}
}

func itemName(it TurnItem) string { return strings.TrimPrefix(fmt.Sprintf("%T", it), "core.") }

// A running review takes no input: a steer and a new turn's input are
// refused with the turn's kind, and the review ends as it would have.
func TestReviewTurnRefusesInput(t *testing.T) {
	gate := make(chan struct{})
	c := newFakeClient(t, script{events: textEvents("msg_r", "Looks fine."), gate: gate, gateAt: 1})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	ack, err := s.Call(ctx10(t), reviewOp("check it"))
	if err != nil {
		t.Fatal(err)
	}
	<-c.called
	for _, op := range []Op{OpSteer{Input: []UserInput{TextInput("hey")}, ExpectedTurnID: ack.TurnID}, userInput("hey")} {
		_, err := s.Call(ctx10(t), op)
		var rej *RejectError
		if !errors.As(err, &rej) || rej.Reason != RejectNotSteerable || rej.TurnKind != TurnReview {
			t.Fatalf("%T during a review: %v", op, err)
		}
	}
	close(gate)
	evs := col.waitFor(turnEnded)
	if done := evs[len(evs)-1].Msg.(TurnComplete); done.LastAgentMessage != "Looks fine." {
		t.Fatalf("turn end %+v", done)
	}
	if n := len(c.requests()); n != 1 {
		t.Fatalf("%d model requests", n)
	}
}

// A review replaces a running turn: the turn is interrupted, then the
// review starts.
func TestReviewInterruptsRunningTurn(t *testing.T) {
	c := newFakeClient(t,
		script{events: textEvents("msg_1", "never", " finished"), gate: make(chan struct{}), gateAt: 2},
		script{events: textEvents("msg_r", "Fine.")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	first, err := s.Call(ctx10(t), userInput("work"))
	if err != nil {
		t.Fatal(err)
	}
	<-c.called
	rv, err := s.Call(ctx10(t), reviewOp("check it"))
	if err != nil || rv.Outcome != AckStarted || rv.TurnID == first.TurnID {
		t.Fatalf("review during a turn: %+v, %v", rv, err)
	}
	evs := col.waitFor(func(ev Event) bool { _, ok := ev.Msg.(TurnComplete); return ok })
	var ends []string
	for _, ev := range evs {
		switch ev.Msg.(type) {
		case TurnAborted, TurnComplete, TurnStarted:
			ends = append(ends, typeName(ev.Msg)+" "+ev.TurnID)
		}
	}
	want := []string{"TurnStarted " + first.TurnID, "TurnAborted " + first.TurnID, "TurnStarted " + rv.TurnID, "TurnComplete " + rv.TurnID}
	if !slices.Equal(ends, want) {
		t.Fatalf("turns %v, want %v", ends, want)
	}
}
