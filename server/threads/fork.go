package threads

import (
	"context"
	"errors"

	"github.com/agentd-dev/agentd/server/rpc"

	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

func (sv *service) threadFork(ctx context.Context, r *rpc.Request, p *protocol.ThreadForkParams) (*protocol.ThreadStartResponse, error) {
	c := r.Conn()
	sv.refreshConfig(ctx, c)
	ov := overrides{model: p.Model, provider: p.ModelProvider, cwd: p.Cwd, approval: p.ApprovalPolicy,
		sandbox: p.Sandbox, config: p.Config, baseInstructions: p.BaseInstructions, developerInstructions: p.DeveloperInstructions,
		scope: c.Scope(), method: r.Method()}
	// Before anything is read or written: a refused fork leaves nothing
	// behind.
	ov, err := sv.permit(ov)
	if err != nil {
		return nil, err
	}
	opts := rollout.ForkOptions{SourceID: p.ThreadID, Adjust: func(m *rollout.SessionMeta) { m.Originator = c.ClientInfo().Name }}
	if p.Path != nil && *p.Path != "" {
		// As the reference: the file at path is the source, whatever
		// threadId says; the source's id is the one in its metadata.
		meta, err := sv.store.ReadMeta(ctx, *p.Path)
		if err != nil {
			return nil, pathErr(err)
		}
		opts.SourceID, opts.SourcePath = meta.ID, *p.Path
	}
	src := sv.threads.get(opts.SourceID)
	if src != nil && (src.rec == nil || !src.rec.Materialized()) {
		return nil, protocol.InvalidRequest("thread %s has no turns to fork", protocol.Cut(opts.SourceID))
	}
	if err := validApproval(p.ApprovalPolicy); err != nil {
		return nil, err
	}
	if p.LastTurnID != nil {
		opts.LastTurnID = *p.LastTurnID
	}
	rt, err := sv.store.Fork(ctx, opts)
	if err != nil {
		if errors.Is(err, rollout.ErrTurnNotFound) {
			return nil, protocol.InvalidRequest("turn not found: %s", protocol.Cut(opts.LastTurnID))
		}
		if errors.Is(err, rollout.ErrMetaTooLarge) {
			return nil, metaErr(r.Method(), err)
		}
		if opts.SourcePath != "" {
			return nil, pathErr(err)
		}
		return nil, storeErr(opts.SourceID, err)
	}
	id := rt.Meta.ID
	st, err := sv.apply(sv.storedSettings(ctx, rt), ov)
	if err != nil {
		sv.store.Delete(id)
		return nil, err
	}
	full, err := sv.store.Read(ctx, id, rollout.ReadOptions{})
	if err != nil {
		return nil, storeErr(id, err)
	}
	meta := metaOf(full)
	meta.cwd, meta.model, meta.effort, meta.provider = st.cwd, st.model, st.effort, st.provider.ID
	var rec *rollout.Recorder
	if p.Ephemeral {
		// An ephemeral fork keeps the copied history in memory only.
		if err := sv.store.Delete(id); err != nil {
			return nil, err
		}
		meta.ephemeral, meta.path = true, ""
	} else if rec, err = sv.store.Reopen(id); err != nil {
		return nil, storeErr(id, err)
	}
	status := protocol.StatusIdle()
	if full.LastTurnFailed {
		status = protocol.StatusSystemError()
	}
	t, err := sv.load(loadSpec{log: r.Logger(), id: id, settings: st, rec: rec, meta: meta, history: full.History, status: status})
	if err != nil {
		return nil, err
	}
	if !p.ExcludeTurns {
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
	}
	r.ResponseFirst()
	t.subscribe(c, true)
	wire := t.wire(false)
	started := wire
	if !p.ExcludeTurns {
		wire.Turns = wireTurns(full.Turns, protocol.ItemsFull)
	}
	if u := full.TokenUsage; u != nil {
		r.Then("thread/tokenUsage/updated", protocol.ThreadTokenUsageUpdatedNotification{ThreadID: id, TurnID: u.TurnID, TokenUsage: projection.TokenUsage(u.Info)})
	}
	r.Then("thread/started", protocol.ThreadStartedNotification{Thread: started})
	return sv.startResponse(t, wire, st), nil
}
