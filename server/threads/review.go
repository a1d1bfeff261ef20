package threads

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/review"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// reviewStart runs a code review: as a turn of the thread (inline, the
// default), or as a turn of a fork of it (detached,
// reviewDetached). The target is checked and its diff computed with git
// in the thread's working directory before anything starts, so that a
// bad target (no repository, an unknown branch or commit) is this
// request's error and leaves nothing behind.
func (sv *service) reviewStart(ctx context.Context, r *rpc.Request, p *protocol.ReviewStartParams) (*protocol.ReviewStartResponse, error) {
	c := r.Conn()
	target := reviewTarget(p.Target)
	if err := target.Validate(); err != nil {
		return nil, protocol.InvalidRequest("%s", err.Error())
	}
	detached := p.Delivery != nil && *p.Delivery == protocol.ReviewDetached
	if detached {
		// A thread that does not exist is refused as thread/fork
		// refuses it.
		if err := sv.forkSourceExists(p.ThreadID); err != nil {
			return nil, err
		}
	}
	t, err := sv.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	if detached && t.rec == nil {
		return nil, forkable(t)
	}
	req, err := review.Resolve(ctx, t.sess.TurnContext().Cwd, target)
	if err != nil {
		return nil, protocol.InvalidRequest("%s", err.Error())
	}
	if detached {
		return sv.reviewDetached(ctx, r, t, req)
	}
	op := core.OpReview{Request: req, Model: t.cfg.ReviewModel}
	// As for turn/start: below admin, the review runs within the
	// configured limits, whatever a wider thread was loaded with.
	if err := sv.boundTurn(r, t, &op.Overrides); err != nil {
		return nil, err
	}
	ack, err := t.submitTurn(ctx, r, op, rejectErr)
	if err != nil {
		return nil, err
	}
	r.Logger().Debug("review started", zap.String("thread", t.id), zap.String("turn", ack.TurnID), zap.String("target", string(target.Kind)))
	return &protocol.ReviewStartResponse{Turn: reviewTurn(ack.TurnID, req.Hint), ReviewThreadID: t.id}, nil
}

// reviewTarget maps the wire's target to the core's.
func reviewTarget(w protocol.ReviewTarget) review.Target {
	switch {
	case w.BaseBranch != nil:
		return review.Target{Kind: review.BaseBranch, Branch: w.BaseBranch.Branch}
	case w.Commit != nil:
		t := review.Target{Kind: review.Commit, SHA: w.Commit.Sha}
		if w.Commit.Title != nil {
			t.Title = *w.Commit.Title
		}
		return t
	case w.Custom != nil:
		return review.Target{Kind: review.Custom, Instructions: w.Custom.Instructions}
	}
	return review.Target{Kind: review.UncommittedChanges}
}

// reviewTurn is the turn review/start answers with, as the reference
// shapes it: no root turn yet, and one user message (whose id is the
// turn's) with the review's label.
func reviewTurn(id, hint string) protocol.Turn {
	label := protocol.UserInput{Text: &protocol.TextInput{Text: hint, TextElements: protocol.List[protocol.TextElement]{}}}
	return protocol.Turn{
		ID: id,
		Items: protocol.List[protocol.ThreadItem]{{UserMessage: &protocol.UserMessageItem{
			ID: id, Content: protocol.List[protocol.UserInput]{label},
		}}},
		ItemsView: protocol.ItemsNotLoaded,
		Status:    protocol.TurnInProgress,
	}
}

// notSteerableKind is the protocol's name of a turn kind that takes no
// input, false for a kind the protocol does not name.
func notSteerableKind(k core.TurnKind) (protocol.NonSteerableTurnKind, bool) {
	switch k {
	case core.TurnReview:
		return protocol.NonSteerableReview, true
	case core.TurnCompact:
		return protocol.NonSteerableCompact, true
	}
	return "", false
}

// steerRefused is turn/steer's error for a running turn that takes no
// input, as the reference sends it: its text, and as data the turn error
// whose codexErrorInfo says which kind of turn refused.
func steerRefused(err error) error {
	var rej *core.RejectError
	if !errors.As(err, &rej) || rej.Reason != core.RejectNotSteerable {
		return rejectErr(err)
	}
	kind, ok := notSteerableKind(rej.TurnKind)
	if !ok {
		return rejectErr(err)
	}
	msg := "cannot steer a " + string(kind) + " turn"
	return protocol.InvalidRequest("%s", msg).WithData(protocol.TurnError{
		Message:        msg,
		CodexErrorInfo: &protocol.CodexErrorInfo{ActiveTurnNotSteerable: &protocol.NotSteerableInfo{TurnKind: kind}},
	})
}

// inputRefused is turn/start's error for a running turn that takes no
// input: the reference's internal error, which names the turn kind.
func inputRefused(err error) error {
	var rej *core.RejectError
	if !errors.As(err, &rej) || rej.Reason != core.RejectNotSteerable {
		return rejectErr(err)
	}
	name := map[core.TurnKind]string{core.TurnReview: "Review", core.TurnCompact: "Compact"}[rej.TurnKind]
	if name == "" {
		return rejectErr(err)
	}
	return protocol.Errorf(protocol.CodeInternalError, "failed to submit turn input: ActiveTurnNotSteerable { turn_kind: %s }", name)
}
