package server

import (
	"context"
	"errors"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

// registerTurnAPI registers the turn methods.
func (a *app) registerTurnAPI() {
	a.s.Handle("turn/start", a.turnStart)
	a.s.Handle("turn/steer", a.turnSteer)
	a.s.Handle("turn/interrupt", a.turnInterrupt)
}

func coreInput(in []protocol.UserInput) []core.UserInput {
	out := make([]core.UserInput, 0, len(in))
	for _, u := range in {
		out = append(out, projection.CoreUserInput(u))
	}
	return out
}

// inProgressTurn is the turn a turn/start result carries.
func inProgressTurn(id string) protocol.Turn {
	return protocol.Turn{ID: id, RootTurnID: &id, Items: protocol.List[protocol.ThreadItem]{}, ItemsView: protocol.ItemsNotLoaded, Status: protocol.TurnInProgress}
}

func (a *app) turnStart(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.TurnStartParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	ov, err := turnContextOverrides(p, t.sess.TurnContext().Cwd)
	if err != nil {
		return nil, err
	}
	op := core.OpUserInput{Input: coreInput(p.Input), Overrides: ov}
	if p.ClientUserMessageID != nil {
		op.ClientMessageID = *p.ClientUserMessageID
	}
	// The result goes out before turn/started: hold the thread's events
	// until it is written.
	release := t.hold()
	var trace *core.TraceContext
	if tp, ts := TraceContext(ctx); tp != "" {
		trace = &core.TraceContext{Traceparent: tp, Tracestate: ts}
	}
	ack, err := t.sess.CallTraced(ctx, op, trace)
	if err != nil {
		release()
		return nil, rejectErr(err)
	}
	c.AfterResponse(ctx, release)
	t.subscribe(c)
	return protocol.TurnStartResponse{Turn: inProgressTurn(ack.TurnID)}, nil
}

func (a *app) turnSteer(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.TurnSteerParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	op := core.OpSteer{Input: coreInput(p.Input), ExpectedTurnID: p.ExpectedTurnID}
	if p.ClientUserMessageID != nil {
		op.ClientMessageID = *p.ClientUserMessageID
	}
	release := t.hold()
	ack, err := t.sess.Call(ctx, op)
	if err != nil {
		release()
		var rej *core.RejectError
		if errors.As(err, &rej) && rej.Reason == core.RejectNotSteerable {
			return nil, protocol.InvalidRequest("%s", rej.Message).WithData(map[string]any{
				"codexErrorInfo": map[string]any{"activeTurnNotSteerable": map[string]any{"turnKind": "compact"}}})
		}
		return nil, rejectErr(err)
	}
	c.AfterResponse(ctx, release)
	return protocol.TurnSteerResponse{TurnID: ack.TurnID}, nil
}

func (a *app) turnInterrupt(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.TurnInterruptParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	release := t.hold()
	if _, err := t.sess.Call(ctx, core.OpInterrupt{TurnID: p.TurnID}); err != nil {
		release()
		var rej *core.RejectError
		if errors.As(err, &rej) && rej.Reason == core.RejectTurnMismatch {
			return nil, protocol.InvalidRequest("no active turn to interrupt")
		}
		return nil, rejectErr(err)
	}
	c.AfterResponse(ctx, release)
	return protocol.Empty{}, nil
}
