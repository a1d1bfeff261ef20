package core

import (
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/review"
)

// reviewSubAgent names a reviewer to the provider (x-openai-subagent).
const reviewSubAgent = "review"

// Texts of a review that ended without the reviewer's answer.
const (
	reviewInterrupted = "The review was interrupted."
	reviewFailed      = "The review did not finish: the reviewer failed."
)

// newReviewer is the sub-agent of a review turn: a conversation of its
// own, under a thread id of its own, with the review model if one is set.
func newReviewer(modelName string) *subAgent {
	return &subAgent{kind: reviewSubAgent, threadID: newItemID(), model: modelName}
}

// runReviewTurn runs a code review. The turn enters review mode (an
// enteredReviewMode item with the target's label), the reviewer works on
// its task in a conversation of its own (its tool calls are the turn's
// items, its messages are not shown), and the turn leaves review mode with
// the review: an exitedReviewMode item and an agent message with the
// rendered review, which the thread's conversation keeps for the turns
// after it. The reviewer's conversation is dropped with the turn.
func (s *Session) runReviewTurn(t *turn, op OpReview) {
	req := op.Request
	s.emitTurnStarted(t, TurnReview)
	entered := EnteredReviewModeItem{ID: newItemID(), Target: req.Target, Hint: req.Hint}
	s.emit(t.subID, t.id, ItemStarted{Item: entered})
	s.emit(t.subID, t.id, ItemCompleted{Item: entered})
	s.startReviewer(t, req)
	last, terr := s.runReviewer(t)
	s.exitReview(t, req, last, terr)
}

// startReviewer gives the reviewer its instructions, the environment (with
// the user's AGENTS.md instructions, which may say how to review) and its
// task; the task is the turn's user message, shown without the diff.
func (s *Session) startReviewer(t *turn, req review.Request) {
	var parts []model.ContentPart
	if doc := projectDocText(s.cfg.ProjectDoc, t.tc.Cwd); doc != "" {
		parts = append(parts, model.ContentPart{Type: "input_text", Text: doc})
	}
	parts = append(parts, model.ContentPart{Type: "input_text", Text: environmentContext(t.tc, s.cfg.Now())})
	s.recordTurn(t,
		model.NewTextMessage(newMessageID(), "developer", review.Instructions),
		model.NewMessage(newMessageID(), "user", parts...))
	task := UserMessageItem{ID: newItemID(), Content: []UserInput{{Kind: InputText, Text: req.Prompt}}}
	s.emit(t.subID, t.id, ItemStarted{Item: task})
	s.recordTurn(t, model.NewTextMessage(newMessageID(), "user", req.ModelText()))
	s.emit(t.subID, t.id, ItemCompleted{Item: task})
}

// runReviewer samples until the reviewer has nothing more to do, and
// returns its last message. A reviewer takes no steered input and its
// conversation is not compacted: it is short-lived and its own.
func (s *Session) runReviewer(t *turn) (string, *TurnError) {
	var last string
	rerouted := false
	for t.ctx.Err() == nil {
		res, err := s.sample(t, &rerouted)
		if res.lastMessage != "" {
			last = res.lastMessage
		}
		if err != nil {
			if t.ctx.Err() != nil {
				break
			}
			return last, turnErrorFrom(err)
		}
		if !res.followUp {
			break
		}
	}
	return last, nil
}

// exitReview ends the review turn. An answer is parsed (structured
// findings, or the text as it is) and rendered; the thread's conversation
// records it as the user's review results followed by the review as the
// assistant's message. An interrupted or failed review still leaves
// review mode, so that a client does not stay in it.
func (s *Session) exitReview(t *turn, req review.Request, last string, terr *TurnError) {
	exited := ExitedReviewModeItem{ID: newItemID()}
	switch {
	case t.aborted() != "":
		exited.Review = reviewInterrupted
	case terr != nil:
		exited.Review = reviewFailed
	default:
		out := review.Parse(last)
		exited.Output, exited.Review = &out, out.Render()
	}
	s.emit(t.subID, t.id, ItemStarted{Item: exited})
	if exited.Output == nil {
		s.emit(t.subID, t.id, ItemCompleted{Item: exited})
		s.endTurn(t, "", terr)
		return
	}
	s.record(t.id, model.NewTextMessage(newMessageID(), "user", review.ResultsMessage(req.Hint, exited.Review)))
	s.emit(t.subID, t.id, ItemCompleted{Item: exited})
	msg := AgentMessageItem{ID: newMessageID(), Text: exited.Review}
	s.emit(t.subID, t.id, ItemStarted{Item: msg})
	s.record(t.id, model.NewTextMessage(msg.ID, "assistant", msg.Text))
	s.emit(t.subID, t.id, ItemCompleted{Item: msg})
	s.emit(t.subID, t.id, AgentMessage{ItemID: msg.ID, Message: msg.Text})
	s.endTurn(t, msg.Text, nil)
}
