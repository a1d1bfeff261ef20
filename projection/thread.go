package projection

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/protocol"
)

// Audience says which subscribed connections get an output.
type Audience uint8

const (
	// Everyone subscribed to the thread.
	Everyone Audience = iota
	// RawEvents: only connections with the experimental API, on threads
	// started with experimentalRawEvents.
	RawEvents
)

// Output is one thing to send to the thread's subscribers, in order.
// Exactly one of Method (a notification), Request (a server request) or
// Resolved (send serverRequest/resolved for that request to each
// connection it was sent to) is set.
type Output struct {
	Method   string
	Params   any
	Audience Audience
	Request  *Pending
	Resolved *Pending
}

// RequestKind names a kind of server request.
type RequestKind uint8

const (
	ExecApproval RequestKind = iota + 1
	PatchApproval
	UserInputReq
	DynamicToolReq
	// McpApprovalReq asks to run an MCP tool; McpElicitationReq is an MCP
	// server's form. Both are mcpServer/elicitation/request.
	McpApprovalReq
	McpElicitationReq
)

// Pending is a server request waiting for its first answer.
type Pending struct {
	CallID string
	TurnID string
	Kind   RequestKind
	Method string
	Params any
	// answered: the first answer came; the request stays in the table
	// until the core has acted on it, so the status flag clears in the
	// reference's order.
	answered bool
	// awaitingItem: an exec approval whose item/started has not been
	// sent yet; the request goes out right after it.
	awaitingItem bool
	// Route is where the request was sent (the connections it reached),
	// kept by the thread layer with the rest of the request's state, so
	// that a thread has one table of server requests: this one. Projection
	// never reads it.
	Route any
}

// Thread is the projection state of one thread.
type Thread struct {
	threadID string
	// status is the status last reported.
	status protocol.ThreadStatus
	turn   *turnState
	// pending requests in the order they were made.
	pending []*Pending
	// itemStart holds item start times (ms) until the item completes.
	itemStart map[string]int64
	// utf8Tail holds an incomplete UTF-8 sequence at the end of a
	// command's output, until the rest arrives.
	utf8Tail map[string][]byte
}

type turnState struct {
	id        string
	startedAt int64 // seconds
	lastMsg   *protocol.ThreadItem
	// startHeld: turn/started waits for the enteredReviewMode item of a
	// review turn, which the reference sends before it.
	startHeld bool
}

// NewThread returns the projection of a thread whose status is initially
// status (idle for a new thread, or as restored).
func NewThread(threadID string, status protocol.ThreadStatus) *Thread {
	return &Thread{threadID: threadID, status: status, itemStart: map[string]int64{}, utf8Tail: map[string][]byte{}}
}

// Status returns the status last reported.
func (p *Thread) Status() protocol.ThreadStatus { return p.status }

// ActiveTurnID returns the id of the running turn, "" if none.
func (p *Thread) ActiveTurnID() string {
	if p.turn == nil {
		return ""
	}
	return p.turn.id
}

// PendingRequests returns the requests still waiting for an answer, in
// the order they were made (to re-send to a connection that subscribes
// late).
func (p *Thread) PendingRequests() []*Pending {
	var out []*Pending
	for _, r := range p.pending {
		if !r.answered && !r.awaitingItem {
			out = append(out, r)
		}
	}
	return out
}

// Requests returns every request in the table: waiting, or answered and
// not yet settled.
func (p *Thread) Requests() []*Pending { return p.pending }

// Waiting reports whether r is still waiting for its first answer: made,
// neither answered nor resolved.
func (p *Thread) Waiting(r *Pending) bool {
	for _, x := range p.pending {
		if x == r {
			return !r.answered
		}
	}
	return false
}

// Lookup returns the pending request for callID.
func (p *Thread) Lookup(callID string) (*Pending, bool) {
	for _, r := range p.pending {
		if r.CallID == callID {
			return r, true
		}
	}
	return nil, false
}

func (p *Thread) notify(method string, params any) Output {
	return Output{Method: method, Params: params}
}

// setStatus reports s if it differs from the status last reported.
func (p *Thread) setStatus(out []Output, s protocol.ThreadStatus) []Output {
	if statusEqual(p.status, s) {
		return out
	}
	p.status = s
	return append(out, p.notify("thread/status/changed", protocol.ThreadStatusChangedNotification{ThreadID: p.threadID, Status: s}))
}

// activeStatus is the active status with the flags of the requests that
// still wait for the user.
func (p *Thread) activeStatus() protocol.ThreadStatus {
	var approval, input bool
	for _, r := range p.pending {
		if r.answered {
			continue
		}
		switch r.Kind {
		case ExecApproval, PatchApproval, McpApprovalReq:
			approval = true
		case UserInputReq, McpElicitationReq:
			input = true
		}
	}
	var flags []protocol.ThreadActiveFlag
	if approval {
		flags = append(flags, protocol.FlagWaitingOnApproval)
	}
	if input {
		flags = append(flags, protocol.FlagWaitingOnUserInput)
	}
	return protocol.StatusActive(flags...)
}

// Answered records the first answer to the request for callID and returns
// what to send now: serverRequest/resolved, and the status change when
// nothing more from the core will carry it. ok is false when no request
// waits on callID (unknown or already settled: the answer is ignored).
func (p *Thread) Answered(callID string) (out []Output, ok bool) {
	r, found := p.Lookup(callID)
	if !found || r.answered {
		return nil, false
	}
	r.answered = true
	out = append(out, Output{Resolved: r})
	switch r.Kind {
	case ExecApproval, PatchApproval:
		// The flag clears when the core acts on the decision (see
		// settle), as the reference orders it.
	default:
		p.remove(r)
		if p.turn != nil {
			out = p.setStatus(out, p.activeStatus())
		}
	}
	return out, true
}

func (p *Thread) remove(r *Pending) {
	for i, x := range p.pending {
		if x == r {
			p.pending = append(p.pending[:i], p.pending[i+1:]...)
			return
		}
	}
}

// settle is called for core events about callID: an answered approval is
// done once the core acts on it, and the waiting flag is cleared.
func (p *Thread) settle(out []Output, callID string) []Output {
	r, ok := p.Lookup(callID)
	if !ok || !r.answered {
		return out
	}
	p.remove(r)
	if p.turn != nil {
		out = p.setStatus(out, p.activeStatus())
	}
	return out
}

// resolveAll ends every pending request (a turn transition): each gets a
// serverRequest/resolved.
func (p *Thread) resolveAll(out []Output) []Output {
	for _, r := range p.pending {
		if !r.answered && !r.awaitingItem {
			out = append(out, Output{Resolved: r})
		}
	}
	p.pending = nil
	return out
}

// Apply maps one core event to what the thread's subscribers are sent, in
// order. Every variant has a decision; none falls through silently.
func (p *Thread) Apply(ev core.Event) []Output {
	ms := ev.Time.UnixMilli()
	turnID := ev.TurnID
	var out []Output
	switch m := ev.Msg.(type) {
	case core.SessionConfigured:
		// Dropped: thread/started (with the whole thread) comes from the
		// thread API, which knows what the client asked for.
		return nil
	case core.TurnStarted:
		p.turn = &turnState{id: turnID, startedAt: m.StartedAt.Unix()}
		if m.Kind == core.TurnReview {
			// The review's enteredReviewMode item goes first, then the
			// status and turn/started (the reference's order).
			p.turn.startHeld = true
			return nil
		}
		return p.turnStarted(out)
	case core.TurnComplete:
		out = p.releaseStart(out)
		turn := p.endedTurn(turnID, m.CompletedAt.Unix(), m.Duration.Milliseconds())
		if m.Error != nil {
			te := TurnError(*m.Error)
			turn.Status, turn.Error = protocol.TurnFailed, &te
			out = p.setStatus(out, protocol.StatusSystemError())
		} else {
			turn.Status = protocol.TurnCompleted
			turn.ItemsView = protocol.ItemsSummary
			if p.turn != nil && p.turn.lastMsg != nil {
				turn.Items = append(turn.Items, *p.turn.lastMsg)
			}
			out = p.setStatus(out, protocol.StatusIdle())
		}
		p.turn = nil
		p.forgetItems()
		out = append(out, p.notify("turn/completed", protocol.TurnNotification{ThreadID: p.threadID, Turn: turn}))
		return p.resolveAll(out)
	case core.TurnAborted:
		out = p.releaseStart(out)
		turn := p.endedTurn(turnID, m.CompletedAt.Unix(), m.Duration.Milliseconds())
		turn.Status = protocol.TurnInterrupted
		p.turn = nil
		p.forgetItems()
		out = p.setStatus(out, protocol.StatusIdle())
		out = append(out, p.notify("turn/completed", protocol.TurnNotification{ThreadID: p.threadID, Turn: turn}))
		return p.resolveAll(out)
	case core.ItemStarted:
		id := m.Item.ItemID()
		p.itemStart[id] = ms
		out = append(out, p.notify("item/started", protocol.ItemStartedNotification{
			Item: Item(m.Item, ms, 0), ThreadID: p.threadID, TurnID: turnID, StartedAtMs: ms,
		}))
		if r, ok := p.Lookup(id); ok && r.awaitingItem {
			r.awaitingItem = false
			setStartedAt(r, ms)
			out = append(out, Output{Request: r})
		}
		return out
	case core.ItemCompleted:
		id := m.Item.ItemID()
		start := p.itemStart[id]
		delete(p.itemStart, id)
		delete(p.utf8Tail, id)
		item := Item(m.Item, start, ms)
		if _, ok := m.Item.(core.AgentMessageItem); ok && p.turn != nil {
			p.turn.lastMsg = &item
		}
		if r, ok := p.Lookup(id); ok && r.Kind == PatchApproval {
			// A declined patch clears the flag before its item
			// completes; a declined command after (the reference's
			// orders).
			out = p.settle(out, id)
		}
		out = append(out, p.notify("item/completed", protocol.ItemCompletedNotification{
			Item: item, ThreadID: p.threadID, TurnID: turnID, CompletedAtMs: ms,
		}))
		if _, ok := m.Item.(core.EnteredReviewModeItem); ok {
			out = p.releaseStart(out)
		}
		return p.settle(out, id)
	case core.AgentMessageDelta:
		return append(out, p.notify("item/agentMessage/delta", protocol.ItemDeltaNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.ItemID, Delta: m.Delta}))
	case core.PlanDelta:
		return append(out, p.notify("item/plan/delta", protocol.ItemDeltaNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.ItemID, Delta: m.Delta}))
	case core.AgentMessage:
		// Dropped: first-generation whole message; v2 clients get it as
		// item/completed.
		return nil
	case core.ReasoningSummaryPartAdded:
		return append(out, p.notify("item/reasoning/summaryPartAdded", protocol.ReasoningSummaryPartAddedNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.ItemID, SummaryIndex: int64(m.SummaryIndex)}))
	case core.ReasoningSummaryDelta:
		return append(out, p.notify("item/reasoning/summaryTextDelta", protocol.ReasoningSummaryTextDeltaNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.ItemID, Delta: m.Delta, SummaryIndex: int64(m.SummaryIndex)}))
	case core.ReasoningRawDelta:
		return append(out, p.notify("item/reasoning/textDelta", protocol.ReasoningTextDeltaNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.ItemID, Delta: m.Delta, ContentIndex: int64(m.ContentIndex)}))
	case core.ExecCommandBegin:
		// Dropped: item/started carries the command. It marks the core
		// acting on an approval, though.
		return p.settle(out, m.CallID)
	case core.ExecCommandOutputDelta:
		text := p.utf8(m.CallID, m.Chunk)
		if text == "" {
			return nil
		}
		return append(out, p.notify("item/commandExecution/outputDelta", protocol.ItemDeltaNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.CallID, Delta: text}))
	case core.TerminalInteraction:
		return append(out, p.notify("item/commandExecution/terminalInteraction", protocol.TerminalInteractionNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.CallID, ProcessID: m.ProcessID, Stdin: m.Stdin}))
	case core.ExecCommandEnd:
		// Dropped: item/completed carries the result.
		return nil
	case core.PatchApplyBegin:
		// Dropped: item/started carries the changes. Marks an approval
		// acted on.
		return p.settle(out, m.CallID)
	case core.PatchApplyEnd:
		// Dropped: item/completed carries the result.
		return nil
	case core.PatchPreview:
		return append(out, p.notify("item/fileChange/patchUpdated", protocol.FileChangePatchUpdatedNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.CallID, Changes: FileChanges(m.Changes)}))
	case core.ExecApprovalRequest:
		r := &Pending{CallID: m.CallID, TurnID: turnID, Kind: ExecApproval, Method: "item/commandExecution/requestApproval", awaitingItem: true}
		r.Params = execApprovalParams(p.threadID, turnID, m)
		p.pending = append(p.pending, r)
		out = p.setStatus(out, p.activeStatus())
		if started, ok := p.itemStart[m.CallID]; ok {
			// The item is already out (a rerun outside the sandbox
			// asks after the first run): the request goes now.
			r.awaitingItem = false
			setStartedAt(r, started)
			return append(out, Output{Request: r})
		}
		// Status first, then item/started, then the request (the
		// reference's order for commands).
		return out
	case core.PatchApprovalRequest:
		r := &Pending{CallID: m.CallID, TurnID: turnID, Kind: PatchApproval, Method: "item/fileChange/requestApproval"}
		r.Params = protocol.FileChangeRequestApprovalParams{ThreadID: p.threadID, TurnID: turnID, ItemID: m.CallID, StartedAtMs: p.startedAt(m.CallID, ms), Reason: strPtr(m.Reason), GrantRoot: strPtr(m.GrantRoot)}
		p.pending = append(p.pending, r)
		out = p.setStatus(out, p.activeStatus())
		return append(out, Output{Request: r})
	case core.UserInputRequest:
		qs := make(protocol.List[protocol.ToolRequestUserInputQuestion], 0, len(m.Questions))
		for _, q := range m.Questions {
			opts := make([]protocol.ToolRequestUserInputOption, 0, len(q.Options))
			for _, o := range q.Options {
				opts = append(opts, protocol.ToolRequestUserInputOption(o))
			}
			var optsPtr []protocol.ToolRequestUserInputOption
			if len(opts) > 0 {
				optsPtr = opts
			}
			qs = append(qs, protocol.ToolRequestUserInputQuestion{ID: q.ID, Header: q.Header, Question: q.Question, IsOther: q.IsOther, IsSecret: q.IsSecret, Options: optsPtr})
		}
		r := &Pending{CallID: m.CallID, TurnID: turnID, Kind: UserInputReq, Method: "item/tool/requestUserInput",
			Params: protocol.ToolRequestUserInputParams{ThreadID: p.threadID, TurnID: turnID, ItemID: m.CallID, Questions: qs, IsBlocking: true}}
		p.pending = append(p.pending, r)
		out = p.setStatus(out, p.activeStatus())
		return append(out, Output{Request: r})
	case core.DynamicToolCallRequest:
		r := &Pending{CallID: m.CallID, TurnID: turnID, Kind: DynamicToolReq, Method: "item/tool/call",
			Params: protocol.DynamicToolCallParams{ThreadID: p.threadID, TurnID: turnID, CallID: m.CallID, Namespace: strPtr(m.Namespace), Tool: m.Tool, Arguments: rawOrNull(m.Arguments)}}
		p.pending = append(p.pending, r)
		return append(out, Output{Request: r})
	case core.McpToolCallProgress:
		return append(out, p.notify("item/mcpToolCall/progress", protocol.McpToolCallProgressNotification{ThreadID: p.threadID, TurnID: turnID, ItemID: m.ItemID, Message: m.Message}))
	case core.McpToolApprovalRequest:
		return p.request(out, &Pending{CallID: m.CallID, TurnID: turnID, Kind: McpApprovalReq, Method: elicitationMethod,
			Params: mcpApprovalParams(p.threadID, turnID, m)})
	case core.McpElicitationRequest:
		tid := turnID
		params := protocol.McpServerElicitationRequestParams{ThreadID: p.threadID, TurnID: &tid, ServerName: m.Server, Mode: "form",
			Message: m.Message, RequestedSchema: rawOrNull(m.RequestedSchema)}
		if len(m.Meta) > 0 {
			params.Meta = m.Meta
		}
		return p.request(out, &Pending{CallID: m.CallID, TurnID: turnID, Kind: McpElicitationReq, Method: elicitationMethod, Params: params})
	case core.McpElicitationEnded:
		// The server gave up waiting: the request is withdrawn.
		r, ok := p.Lookup(m.CallID)
		if !ok || r.answered {
			return nil
		}
		p.remove(r)
		out = append(out, Output{Resolved: r})
		if p.turn != nil {
			out = p.setStatus(out, p.activeStatus())
		}
		return out
	case core.PlanUpdate:
		steps := make(protocol.List[protocol.TurnPlanStep], 0, len(m.Plan))
		for _, s := range m.Plan {
			steps = append(steps, protocol.TurnPlanStep{Step: s.Step, Status: planStatus(s.Status)})
		}
		return append(out, p.notify("turn/plan/updated", protocol.TurnPlanUpdatedNotification{ThreadID: p.threadID, TurnID: turnID, Explanation: strPtr(m.Explanation), Plan: steps}))
	case core.TurnDiff:
		return append(out, p.notify("turn/diff/updated", protocol.TurnDiffUpdatedNotification{ThreadID: p.threadID, TurnID: turnID, Diff: m.UnifiedDiff}))
	case core.TokenCount:
		return append(out, p.notify("thread/tokenUsage/updated", protocol.ThreadTokenUsageUpdatedNotification{ThreadID: p.threadID, TurnID: turnID, TokenUsage: TokenUsage(m.Info)}))
	case core.RateLimits:
		// The account's state, sent to the thread's subscribers as the
		// reference does.
		return append(out, p.notify("account/rateLimits/updated", protocol.AccountRateLimitsUpdatedNotification{RateLimits: RateLimits(m.Snapshot)}))
	case core.StreamError:
		te := TurnError(core.TurnError{Message: m.Message, Kind: m.Kind, HTTPStatus: m.HTTPStatus, Details: m.Details})
		return append(out, p.notify("error", protocol.ErrorNotification{Error: te, WillRetry: true, ThreadID: p.threadID, TurnID: turnID}))
	case core.Warning:
		tid := p.threadID
		return append(out, p.notify("warning", protocol.WarningNotification{ThreadID: &tid, Message: m.Message}))
	case core.Error:
		out = p.setStatus(out, protocol.StatusSystemError())
		return append(out, p.notify("error", protocol.ErrorNotification{Error: TurnError(m.Err), WillRetry: false, ThreadID: p.threadID, TurnID: turnID}))
	case core.ModelReroute:
		// The protocol's only reason is the backend's safety reroute,
		// which is the one cause of a served model differing from the
		// one asked for.
		return append(out, p.notify("model/rerouted", protocol.ModelReroutedNotification{ThreadID: p.threadID, TurnID: turnID, FromModel: m.From, ToModel: m.To, Reason: protocol.RerouteHighRiskCyberActivity}))
	case core.RawResponseItem:
		return append(out, Output{Method: "rawResponseItem/completed", Audience: RawEvents,
			Params: protocol.RawResponseItemCompletedNotification{ThreadID: p.threadID, TurnID: turnID, Item: m.Item.Raw()}})
	case core.RawResponseCompleted:
		var meta any = json.RawMessage(m.RawUsage)
		if len(m.RawUsage) == 0 {
			meta = nil
		}
		return append(out, Output{Method: "rawResponse/completed", Audience: RawEvents,
			Params: protocol.RawResponseCompletedNotification{ThreadID: p.threadID, TurnID: turnID, ResponseID: m.ResponseID, Usage: breakdown(m.Usage), UsageMetadata: protocol.RawUsageMetadata{Metadata: meta}}})
	case core.ContextCompacted:
		// Dropped: the contextCompaction item is the v2 form; the
		// reference does not send the deprecated thread/compacted either.
		return nil
	case core.ShutdownComplete:
		// Dropped: the thread registry reports unloading itself
		// (thread/status/changed notLoaded, thread/closed).
		return nil
	}
	panic("projection: no decision for core event " + typeOf(ev.Msg))
}

// request adds a server request to the table and sends it after the
// status change it causes.
func (p *Thread) request(out []Output, r *Pending) []Output {
	p.pending = append(p.pending, r)
	out = p.setStatus(out, p.activeStatus())
	return append(out, Output{Request: r})
}

// turnStarted reports the running turn's start: the active status, then
// turn/started.
func (p *Thread) turnStarted(out []Output) []Output {
	out = p.setStatus(out, protocol.StatusActive())
	started := p.turn.startedAt
	id, root := p.turn.id, p.turn.id // copies, so that the state does not escape
	return append(out, p.notify("turn/started", protocol.TurnNotification{ThreadID: p.threadID, Turn: protocol.Turn{
		ID: id, RootTurnID: &root, Items: protocol.List[protocol.ThreadItem]{}, ItemsView: protocol.ItemsNotLoaded,
		Status: protocol.TurnInProgress, StartedAt: &started,
	}}))
}

// releaseStart sends the turn/started a review turn held, if it still
// holds it: after its enteredReviewMode item, or at the latest before the
// turn ends.
func (p *Thread) releaseStart(out []Output) []Output {
	if p.turn == nil || !p.turn.startHeld {
		return out
	}
	p.turn.startHeld = false
	return p.turnStarted(out)
}

// forgetItems drops the per-item state of a turn that ended: items it
// left open (a message cut by an interrupt) never complete, so their
// entries would otherwise stay for the life of the thread.
func (p *Thread) forgetItems() {
	clear(p.itemStart)
	clear(p.utf8Tail)
}

// endedTurn builds the Turn of a turn/completed.
func (p *Thread) endedTurn(turnID string, completed, durationMs int64) protocol.Turn {
	t := protocol.Turn{ID: turnID, RootTurnID: &turnID, Items: protocol.List[protocol.ThreadItem]{}, ItemsView: protocol.ItemsNotLoaded,
		CompletedAt: &completed, DurationMs: &durationMs}
	if p.turn != nil && p.turn.id == turnID {
		started := p.turn.startedAt
		t.StartedAt = &started
	}
	return t
}

func (p *Thread) startedAt(itemID string, fallback int64) int64 {
	if ms, ok := p.itemStart[itemID]; ok {
		return ms
	}
	return fallback
}

// utf8 returns the valid UTF-8 text of chunk, keeping an incomplete
// sequence at its end for the next chunk of the same call.
func (p *Thread) utf8(callID string, chunk []byte) string {
	if tail := p.utf8Tail[callID]; len(tail) > 0 {
		chunk = append(tail, chunk...)
		delete(p.utf8Tail, callID)
	}
	cut := len(chunk)
	for i := len(chunk) - 1; i >= 0 && i >= len(chunk)-utf8.UTFMax; i-- {
		if utf8.RuneStart(chunk[i]) {
			if !utf8.FullRune(chunk[i:]) {
				cut = i
			}
			break
		}
	}
	if cut < len(chunk) {
		p.utf8Tail[callID] = append([]byte(nil), chunk[cut:]...)
	}
	return string(chunk[:cut])
}

func setStartedAt(r *Pending, ms int64) {
	if params, ok := r.Params.(protocol.CommandExecutionRequestApprovalParams); ok {
		params.StartedAtMs = ms
		r.Params = params
	}
}

func planStatus(s core.PlanStepStatus) protocol.TurnPlanStepStatus {
	switch s {
	case core.PlanInProgress:
		return protocol.StepInProgress
	case core.PlanCompleted:
		return protocol.StepCompleted
	}
	return protocol.StepPending
}

func breakdown(u model.TokenUsage) protocol.TokenUsageBreakdown {
	return protocol.TokenUsageBreakdown{
		TotalTokens:           u.TotalTokens,
		InputTokens:           u.InputTokens,
		CachedInputTokens:     u.CachedInputTokens,
		OutputTokens:          u.OutputTokens,
		ReasoningOutputTokens: u.ReasoningOutputTokens,
	}
}

func statusEqual(a, b protocol.ThreadStatus) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
