package threads

import (
	"context"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/review"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// reviewDetached runs a review on a fork of parent (review/start with
// delivery "detached", agentd's extension: the reference's 0.169 schema
// has inline only). The fork is a thread/fork of the parent as it is
// now (a turn running there is copied as interrupted, and goes on in the
// parent), with the parent's current settings, review_model as its model
// when config.toml sets one, and the client's scope narrowing them as
// thread/fork's. The client gets thread/started for the fork and is
// subscribed to it; then the review runs as a turn of the fork, by
// the inline path. The parent gets no item and no turn, and may run
// turns of its own meanwhile.
func (sv *service) reviewDetached(ctx context.Context, r *rpc.Request, parent *thread, req review.Request) (*protocol.ReviewStartResponse, error) {
	c := r.Conn()
	if !parent.rec.Materialized() {
		// A thread before its first turn has no rollout yet to copy:
		// it gets one (its session metadata only; it stays out of
		// thread/list until it has a turn).
		if err := parent.rec.Persist(ctx); err != nil {
			return nil, storeErr(parent.id, err)
		}
	}
	opts := rollout.ForkOptions{SourceID: parent.id, Adjust: func(m *rollout.SessionMeta) { m.Originator = c.ClientInfo().Originator }}
	f, err := sv.fork(ctx, r, opts, false, func(rt *rollout.Thread) (threadSettings, error) {
		st := parent.current(sv.storedSettings(ctx, rt))
		ov := overrides{scope: c.Scope(), method: r.Method(), client: c.ClientInfo()}
		if m := st.cfg.ReviewModel; m != "" {
			ov.model = &m
		}
		return sv.apply(st, ov)
	})
	if err != nil {
		return nil, err
	}
	t := f.t
	t.subscribe(c, true)
	// Before the result, which names the fork: a client knows the
	// thread before it learns that its review runs there.
	c.Notify("thread/started", protocol.ThreadStartedNotification{Thread: t.wire(false)})
	op := core.OpReview{Request: req, Model: f.st.cfg.ReviewModel}
	if err := sv.boundTurn(r, t, &op.Overrides); err != nil {
		return nil, err
	}
	ack, err := t.submitTurn(ctx, r, op, rejectErr)
	if err != nil {
		return nil, err
	}
	r.Logger().Debug("detached review started", zap.String("thread", parent.id), zap.String("reviewThread", t.id),
		zap.String("turn", ack.TurnID), zap.String("target", string(req.Target.Kind)))
	return &protocol.ReviewStartResponse{Turn: reviewTurn(ack.TurnID, req.Hint), ReviewThreadID: t.id}, nil
}

// current returns st with the settings t runs with now (its working
// directory, model, provider, reasoning, approvals, sandbox and mode):
// a thread's stored settings lag behind those a client changed before
// its next turn, and a fork must not run wider than its source does.
func (t *thread) current(st threadSettings) threadSettings {
	tc := t.sess.TurnContext()
	st.cwd, st.model, st.effort, st.summary = tc.Cwd, tc.Model, tc.Effort, tc.Summary
	st.approval, st.sandbox, st.mode = tc.ApprovalPolicy, tc.Sandbox, tc.Mode
	t.mu.Lock()
	provider := t.meta.provider
	t.mu.Unlock()
	if p, ok := providerIn(st.cfg, provider); ok {
		st.provider = p
	}
	return st
}

// forkSourceExists refuses, as thread/fork does, a thread that is
// neither loaded nor stored.
func (sv *service) forkSourceExists(id string) error {
	if sv.threads.get(id) != nil {
		return nil
	}
	if _, err := sv.store.Find(id); err != nil {
		return storeErr(id, err)
	}
	return nil
}
