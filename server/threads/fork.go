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
		scope: c.Scope(), method: r.Method(), client: c.ClientInfo()}
	// Before anything is read or written: a refused fork leaves nothing
	// behind.
	ov, err := sv.permit(ov)
	if err != nil {
		return nil, err
	}
	opts := rollout.ForkOptions{SourceID: p.ThreadID, Adjust: func(m *rollout.SessionMeta) { m.Originator = c.ClientInfo().Originator }}
	if p.Path != nil && *p.Path != "" {
		// As the reference: the file at path is the source, whatever
		// threadId says; the source's id is the one in its metadata.
		meta, err := sv.store.ReadMeta(ctx, *p.Path)
		if err != nil {
			return nil, pathErr(err)
		}
		opts.SourceID, opts.SourcePath = meta.ID, *p.Path
	}
	if err := forkable(sv.threads.get(opts.SourceID)); err != nil {
		return nil, err
	}
	if p.Ephemeral && !p.ExcludeTurns {
		// As the reference, for which every thread's history is
		// paginated (historyMode): once the source is known to exist.
		if opts.SourcePath == "" {
			if err := sv.forkSourceExists(opts.SourceID); err != nil {
				return nil, err
			}
		}
		return nil, protocol.InvalidRequest("ephemeral paginated thread/fork requires `excludeTurns: true`")
	}
	if err := validApproval(p.ApprovalPolicy); err != nil {
		return nil, err
	}
	if p.LastTurnID != nil {
		opts.LastTurnID = *p.LastTurnID
	}
	f, err := sv.fork(ctx, r, opts, p.Ephemeral, func(rt *rollout.Thread) (threadSettings, error) {
		return sv.apply(sv.storedSettings(ctx, rt), ov)
	})
	if err != nil {
		return nil, err
	}
	t, id := f.t, f.t.id
	if !p.ExcludeTurns {
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
	}
	r.ResponseFirst()
	t.subscribe(c, true)
	wire := t.wire(false)
	started := wire
	if !p.ExcludeTurns {
		wire.Turns = wireTurns(f.rt.Turns, protocol.ItemsFull)
	}
	if u := f.rt.TokenUsage; u != nil {
		r.Then("thread/tokenUsage/updated", protocol.ThreadTokenUsageUpdatedNotification{ThreadID: id, TurnID: u.TurnID, TokenUsage: projection.TokenUsage(u.Info)})
	}
	r.Then("thread/started", protocol.ThreadStartedNotification{Thread: started})
	return sv.startResponse(t, wire, f.st), nil
}

// forkable refuses to fork a loaded thread that has no rollout to copy,
// an ephemeral one or one whose first turn has not started, as the
// reference does (nil: a thread that is not loaded, which the store looks
// for).
func forkable(src *thread) error {
	if src != nil && (src.rec == nil || !src.rec.Materialized()) {
		return protocol.InvalidRequest("no rollout found for thread id %s", src.id)
	}
	return nil
}

// forked is a loaded fork: the thread, its record as copied and its
// settings.
type forked struct {
	t  *thread
	rt *rollout.Thread
	st threadSettings
}

// fork copies a stored thread (thread/fork, a detached review) and loads
// the copy with the settings that settings derives from the copy's
// record; a refusal there deletes the copy. An ephemeral fork keeps the
// copied history in memory only. r's client is not subscribed.
func (sv *service) fork(ctx context.Context, r *rpc.Request, opts rollout.ForkOptions, ephemeral bool, settings func(*rollout.Thread) (threadSettings, error)) (forked, error) {
	rt, err := sv.store.Fork(ctx, opts)
	if err != nil {
		if errors.Is(err, rollout.ErrTurnNotFound) {
			return forked{}, protocol.InvalidRequest("turn not found: %s", protocol.Cut(opts.LastTurnID))
		}
		if errors.Is(err, rollout.ErrMetaTooLarge) {
			return forked{}, metaErr(r.Method(), err)
		}
		if opts.SourcePath != "" {
			return forked{}, pathErr(err)
		}
		return forked{}, storeErr(opts.SourceID, err)
	}
	id := rt.Meta.ID
	st, err := settings(rt)
	if err != nil {
		sv.store.Delete(id)
		return forked{}, err
	}
	full, err := sv.store.Read(ctx, id, rollout.ReadOptions{})
	if err != nil {
		return forked{}, storeErr(id, err)
	}
	meta := metaOf(full)
	meta.cwd, meta.model, meta.effort, meta.provider = st.cwd, st.model, st.effort, st.provider.ID
	var rec *rollout.Recorder
	if ephemeral {
		if err := sv.store.Delete(id); err != nil {
			return forked{}, err
		}
		meta.ephemeral, meta.path = true, ""
	} else if rec, err = sv.store.Reopen(id); err != nil {
		return forked{}, storeErr(id, err)
	}
	status := protocol.StatusIdle()
	if full.LastTurnFailed {
		status = protocol.StatusSystemError()
	}
	t, err := sv.load(loadSpec{log: r.Logger(), id: id, settings: st, rec: rec, meta: meta, history: full.History, status: status})
	if err != nil {
		return forked{}, err
	}
	return forked{t: t, rt: full, st: st}, nil
}
