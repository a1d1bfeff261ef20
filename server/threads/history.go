package threads

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/agentd-dev/agentd/server/rpc"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
)

func (sv *service) threadCompact(ctx context.Context, r *rpc.Request, p *protocol.ThreadIDParams) (*protocol.Empty, error) {
	t, err := sv.loadedThread(ctx, r.Conn(), p.ThreadID)
	if err != nil {
		return nil, err
	}
	r.ResponseFirst() // before the events it causes
	if _, err := t.sess.Call(ctx, core.OpCompact{}); err != nil {
		return nil, rejectErr(err)
	}
	return &protocol.Empty{}, nil
}

func (sv *service) threadShellCommand(ctx context.Context, r *rpc.Request, p *protocol.ThreadShellCommandParams) (*protocol.Empty, error) {
	t, err := sv.loadedThread(ctx, r.Conn(), p.ThreadID)
	if err != nil {
		return nil, err
	}
	if p.Command == "" {
		return nil, protocol.InvalidRequest("command must not be empty")
	}
	op := core.OpShellCommand{Command: p.Command}
	if p.TimeoutMs != nil && *p.TimeoutMs > 0 {
		op.Timeout = time.Duration(*p.TimeoutMs) * time.Millisecond
	}
	r.ResponseFirst() // before the events it causes
	if _, err := t.sess.Call(ctx, op); err != nil {
		return nil, rejectErr(err)
	}
	return &protocol.Empty{}, nil
}

func (sv *service) threadInjectItems(ctx context.Context, r *rpc.Request, p *protocol.ThreadInjectItemsParams) (*protocol.Empty, error) {
	t, err := sv.loadedThread(ctx, r.Conn(), p.ThreadID)
	if err != nil {
		return nil, err
	}
	items := make([]model.ResponseItem, 0, len(p.Items))
	maxLine := sv.live.Get().Server.RolloutMaxLineBytes
	for i, raw := range p.Items {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, protocol.InvalidRequest("Invalid request: items[%d]: %v", i, err)
		}
		// Each item is one line of the thread's record, with its envelope:
		// a longer one could not be read back.
		if n := int64(len(b)) + recordEnvelope; n > maxLine {
			return nil, protocol.InvalidRequest("Invalid request: items[%d]: it would take up to %s in the thread's record, which holds at most %s a line ([server] rollout_max_line_bytes)",
				i, sizeText(n, math.Ceil), sizeText(maxLine, math.Floor))
		}
		it, err := model.ParseResponseItem(b)
		if err != nil {
			return nil, protocol.InvalidRequest("Invalid request: items[%d]: %v", i, err)
		}
		items = append(items, it)
	}
	if _, err := t.sess.Call(ctx, core.OpInjectItems{Items: items}); err != nil {
		return nil, rejectErr(err)
	}
	return &protocol.Empty{}, nil
}

// recordEnvelope bounds what a rollout line adds to the item it records
// (time, type, ids).
const recordEnvelope = 4096

// threadRevert drops beforeTurnId and every later turn from the thread's
// model context, recorded as a rollback marker.
func (sv *service) threadRevert(ctx context.Context, r *rpc.Request, p *protocol.ThreadRevertParams) (*protocol.ThreadRevertResponse, error) {
	t, err := sv.loadedThread(ctx, r.Conn(), p.ThreadID)
	if err != nil {
		return nil, err
	}
	turns, err := sv.turnsOf(ctx, t.id, t)
	if err != nil {
		return nil, err
	}
	pos := -1
	for i, rt := range turns {
		if rt.ID == p.BeforeTurnID {
			pos = i
		}
	}
	if pos < 0 {
		return nil, protocol.InvalidRequest("turn not found: %s", protocol.Cut(p.BeforeTurnID))
	}
	n := 0
	for _, rt := range turns[pos:] {
		if rt.Kind != core.TurnCompact {
			n++
		}
	}
	op := core.OpRollback{NumTurns: n}
	if t.rec != nil {
		// Recorded by the session once it has checked no turn runs, so a
		// refused rollback leaves nothing on disk.
		op.Persist = func() ([]model.ResponseItem, error) {
			if err := t.rec.Rollback(ctx, n); err != nil {
				return nil, err
			}
			rt, err := sv.store.Read(ctx, t.id, rollout.ReadOptions{})
			if err != nil {
				return nil, err
			}
			turns = rt.Turns
			if rt.History == nil {
				return []model.ResponseItem{}, nil
			}
			return rt.History, nil
		}
	} else {
		turns = turns[:pos]
	}
	if _, err := t.sess.Call(ctx, op); err != nil {
		return nil, rejectErr(err)
	}
	th := t.wire(false)
	th.Turns = wireTurns(turns, protocol.ItemsFull)
	out := &protocol.ThreadRevertResponse{Thread: th}
	out.TurnsBackwardsCursor, out.ItemsBackwardsCursor = backCursors(t.id, turns)
	return out, nil
}
