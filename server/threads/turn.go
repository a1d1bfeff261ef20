package threads

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/server/rpc"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/scope"
)

func coreInput(in []protocol.UserInput) []core.UserInput {
	out := make([]core.UserInput, 0, len(in))
	for _, u := range in {
		out = append(out, projection.CoreUserInput(u))
	}
	return out
}

// turnInput maps a turn's input for the core and checks its images,
// reading local ones (relative to cwd): an image that cannot be sent is
// the client's error (-32600, naming the input and the file or URL), and
// no turn starts. So is an input whose record would be longer than a
// rollout line may be (maxLine): the thread could not be read back.
func turnInput(in []protocol.UserInput, clientID *string, cwd string, maxLine int64) ([]core.UserInput, error) {
	if err := inputTooLong(in); err != nil {
		return nil, err
	}
	for i, u := range in {
		if u.Image != nil && u.Image.URL == nil {
			return nil, protocol.InvalidRequest("input[%d] (image): images by fileId are not supported; send a url (https or a data URL) or a localImage", i)
		}
	}
	out, err := core.PrepareImages(coreInput(in), cwd)
	if err != nil {
		return nil, protocol.InvalidRequest("%v", err)
	}
	id := ""
	if clientID != nil {
		id = *clientID
	}
	if n := rollout.UserInputLineBound(out, id); n > maxLine {
		return nil, protocol.InvalidRequest("input: this message would take up to %s in the thread's record, which holds at most %s a line ([server] rollout_max_line_bytes); send less text, or fewer or smaller images",
			sizeText(n, math.Ceil), sizeText(maxLine, math.Floor))
	}
	return out, nil
}

// maxInputChars bounds a message's text, as the reference does: the
// characters (not bytes) of its text inputs together.
const maxInputChars = 1 << 20

// inputTooLong refuses a message whose text is longer than maxInputChars,
// with the reference's error (-32602, and data saying by how much).
func inputTooLong(in []protocol.UserInput) error {
	n := 0
	for _, u := range in {
		if u.Text != nil {
			n += utf8.RuneCountInString(u.Text.Text)
		}
	}
	if n <= maxInputChars {
		return nil
	}
	return protocol.Errorf(protocol.CodeInvalidParams, "Input exceeds the maximum length of %d characters.", maxInputChars).
		WithData(map[string]any{"input_error_code": "input_too_large", "max_chars": maxInputChars, "actual_chars": n})
}

// inProgressTurn is the turn a turn/start result carries.
func inProgressTurn(id string) protocol.Turn {
	return protocol.Turn{ID: id, RootTurnID: &id, Items: protocol.List[protocol.ThreadItem]{}, ItemsView: protocol.ItemsNotLoaded, Status: protocol.TurnInProgress}
}

func (sv *service) turnStart(ctx context.Context, r *rpc.Request, p *protocol.TurnStartParams) (*protocol.TurnStartResponse, error) {
	c := r.Conn()
	if err := sv.permitTurn(r, p.ApprovalPolicy, p.SandboxPolicy); err != nil {
		return nil, err
	}
	t, release, err := sv.heldThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	defer release()
	ov, err := turnContextOverrides(p, t.sess.TurnContext().Cwd)
	if err != nil {
		return nil, err
	}
	if err := sv.boundTurn(r, t, &ov); err != nil {
		return nil, err
	}
	cwd := t.sess.TurnContext().Cwd
	if ov.Cwd != nil {
		cwd = *ov.Cwd
	}
	input, err := turnInput(p.Input, p.ClientUserMessageID, cwd, sv.live.Get().Server.RolloutMaxLineBytes)
	if err != nil {
		return nil, err
	}
	op := core.OpUserInput{Input: input, Overrides: ov,
		ClientMetadata: p.ResponsesapiClientMetadata, ClientMetadataPatch: p.ResponsesapiClientMetadataPatch}
	if p.ClientUserMessageID != nil {
		op.ClientMessageID = *p.ClientUserMessageID
	}
	ack, err := t.submitTurn(ctx, r, op, inputRefused)
	if err != nil {
		return nil, err
	}
	// The line that ties the request to the turn's own lines.
	r.Logger().Debug("turn started", zap.String("thread", t.id), zap.String("turn", ack.TurnID))
	return &protocol.TurnStartResponse{Turn: inProgressTurn(ack.TurnID)}, nil
}

func (sv *service) turnSteer(ctx context.Context, r *rpc.Request, p *protocol.TurnSteerParams) (*protocol.TurnSteerResponse, error) {
	t, err := sv.loadedThread(ctx, r.Conn(), p.ThreadID)
	if err != nil {
		return nil, err
	}
	input, err := turnInput(p.Input, p.ClientUserMessageID, t.sess.TurnContext().Cwd, sv.live.Get().Server.RolloutMaxLineBytes)
	if err != nil {
		return nil, err
	}
	op := core.OpSteer{Input: input, ExpectedTurnID: p.ExpectedTurnID,
		ClientMetadata: p.ResponsesapiClientMetadata, ClientMetadataPatch: p.ResponsesapiClientMetadataPatch}
	if p.ClientUserMessageID != nil {
		op.ClientMessageID = *p.ClientUserMessageID
	}
	r.ResponseFirst() // before the events of the steer
	ack, err := t.sess.Call(ctx, op)
	if err != nil {
		return nil, steerRefused(err)
	}
	return &protocol.TurnSteerResponse{TurnID: ack.TurnID}, nil
}

func (sv *service) turnInterrupt(ctx context.Context, r *rpc.Request, p *protocol.TurnInterruptParams) (*protocol.Empty, error) {
	t, err := sv.loadedThread(ctx, r.Conn(), p.ThreadID)
	if err != nil {
		return nil, err
	}
	r.ResponseFirst() // before turn/completed
	if _, err := t.sess.Call(ctx, core.OpInterrupt{TurnID: p.TurnID}); err != nil {
		var rej *core.RejectError
		if errors.As(err, &rej) && rej.Reason == core.RejectTurnMismatch {
			return nil, protocol.InvalidRequest("no active turn to interrupt")
		}
		return nil, rejectErr(err)
	}
	return &protocol.Empty{}, nil
}

// permitTurn refuses the turn settings (turn/start, thread/settings/
// update) that the client's scope may not set: a sandbox policy without
// agentd's sandbox, approvals "never" where the configuration does not
// say so.
func (sv *service) permitTurn(r *rpc.Request, ap *protocol.AskForApproval, sp *protocol.SandboxPolicy) error {
	sc := r.Conn().Scope()
	if perr := scope.SandboxPolicy(sc, r.Method(), sp); perr != nil {
		return perr
	}
	if perr := scope.Approval(sc, r.Method(), ap, string(sv.config().ApprovalPolicy)); perr != nil {
		return perr
	}
	return nil
}

// boundTurn keeps, below admin, a turn's settings (turn/start, thread/
// settings/update) within the configuration: it refuses a sandbox wider
// than the configured one and a writable cwd that would make agentd's
// home writable, and narrows what the thread already runs with (an
// admin's loaded thread may run wider) by adding overrides to o.
func (sv *service) boundTurn(r *rpc.Request, t *thread, o *core.TurnOverrides) error {
	sc, method := r.Conn().Scope(), r.Method()
	if sc.Allows(scope.Admin) {
		return nil
	}
	cfg := sv.config()
	tc := t.sess.TurnContext()
	cwd, sp, ap := tc.Cwd, tc.Sandbox, tc.ApprovalPolicy
	if o.Cwd != nil {
		cwd = *o.Cwd
	}
	if o.ApprovalPolicy != nil {
		ap = *o.ApprovalPolicy
	}
	_, coreLimit := cfg.ThreadPolicies(cwd)
	limit := projection.SandboxPolicy(coreLimit)
	if o.Sandbox != nil {
		if perr := scope.Sandbox(sc, method, projection.SandboxPolicy(*o.Sandbox), limit, cwd); perr != nil {
			return perr
		}
		sp = *o.Sandbox
	}
	wsp, wap, changed := scope.Clamp(sc, projection.SandboxPolicy(sp), limit, cwd, string(ap), string(cfg.ApprovalPolicy))
	if perr := scope.HomeCwd(sc, method, cwd, cfg.Home, wsp); perr != nil {
		if o.Cwd != nil || o.Sandbox != nil {
			return perr
		}
		wsp, changed = projection.SandboxPolicy(policy.ReadOnly()), true
	}
	if changed {
		nsp, nap := projection.CoreSandboxPolicy(wsp), policy.ApprovalPolicy(wap)
		o.Sandbox, o.ApprovalPolicy = &nsp, &nap
	}
	return nil
}

// turnContextOverrides maps turn/start's settings to the core's overrides.
func turnContextOverrides(p *protocol.TurnStartParams, base string) (core.TurnOverrides, error) {
	var o core.TurnOverrides
	if p.Cwd != nil {
		cwd, err := resolveCwd(*p.Cwd, base)
		if err != nil {
			return o, err
		}
		o.Cwd = &cwd
	}
	if p.Model != nil {
		o.Model = p.Model
	}
	if p.Effort != nil {
		e := string(*p.Effort)
		o.Effort = &e
	}
	if p.Summary != nil {
		s := string(*p.Summary)
		o.Summary = &s
	}
	if p.ApprovalPolicy != nil {
		if err := validApproval(p.ApprovalPolicy); err != nil {
			return o, err
		}
		ap := policy.ApprovalOnRequest
		if p.ApprovalPolicy.Granular == nil {
			ap = policy.ApprovalPolicy(p.ApprovalPolicy.Mode)
		}
		o.ApprovalPolicy = &ap
	}
	if p.SandboxPolicy != nil {
		sp := projection.CoreSandboxPolicy(*p.SandboxPolicy)
		o.Sandbox = &sp
	}
	modeOverrides(&o, p.CollaborationMode)
	if p.OutputSchema != nil {
		b, err := json.Marshal(p.OutputSchema)
		if err != nil {
			return o, protocol.InvalidRequest("Invalid request: outputSchema: %v", err)
		}
		o.OutputSchema = b
	}
	return o, nil
}

// submitTurn submits op, which starts a turn for r's client (turn/start,
// review/start). The result goes out before turn/started, and the client
// is subscribed before the turn can start, so it misses none of it; a
// refusal is mapped by refused.
func (t *thread) submitTurn(ctx context.Context, r *rpc.Request, op core.Op, refused func(error) error) (core.Ack, error) {
	c := r.Conn()
	var trace *core.TraceContext
	if tp, ts := r.Trace(); tp != "" {
		trace = &core.TraceContext{Traceparent: tp, Tracestate: ts}
	}
	r.ResponseFirst()
	t.mu.Lock()
	t.turnClient = c.ClientInfo().Name
	t.mu.Unlock()
	undo := t.subscribeTentatively(c)
	ack, err := t.sess.CallTraced(ctx, op, trace)
	if err != nil {
		undo()
		return ack, refused(err)
	}
	t.replay(c)
	return ack, nil
}
