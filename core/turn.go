package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/skills"
	"github.com/agentd-dev/agentd/core/tools/patch"
)

// turn is one running turn. The session loop creates it and talks to it
// through steer, deliver and abort; its own goroutine runs the work.
type turn struct {
	id    string
	subID string
	kind  TurnKind
	// trace is the trace context of the submission that started the turn.
	trace *TraceContext
	// usage sums the token usage of the turn's model responses; only the
	// turn's goroutine touches it.
	usage     model.TokenUsage
	tc        TurnContext
	startedAt time.Time
	// log is the session's logger with the turn's id (turn).
	log *zap.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// abortReason is set once, by abort.
	abortReason AbortReason
	// ending is set once the turn has decided to end: it takes no more
	// input, and the session waits for done before starting another.
	ending bool
	// aux counts work attached to the turn that it must wait for before
	// it ends (user shell commands run during it).
	aux    sync.WaitGroup
	steers []steerInput
	// streamCancel abandons the in-flight model stream (for a steer).
	streamCancel context.CancelFunc
	pending      map[string]chan any

	// sub is set when a sub-agent does the turn's work (a reviewer): its
	// conversation and how its requests are marked.
	sub *subAgent

	// diff aggregates what the turn's patches changed.
	diffMu sync.Mutex
	diff   *patch.TurnDiffTracker
	// onWaiting is called when the number of pending requests changes.
	onWaiting func(waiting bool)
	// plans counts the proposed plans of the turn (its goroutine only).
	plans int
	// clientMeta is the client's metadata for the turn's model requests
	// (guarded by mu).
	clientMeta map[string]string
}

// setClientMetadata applies a turn/start's or turn/steer's metadata, as
// the reference does: a map given replaces the client's entries (an empty
// one clears them), then the patch's entries are added over them.
func (t *turn) setClientMetadata(replace, patch map[string]string) {
	if replace == nil && len(patch) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if replace != nil {
		t.clientMeta = maps.Clone(replace)
	}
	if len(patch) > 0 && t.clientMeta == nil {
		t.clientMeta = map[string]string{}
	}
	maps.Copy(t.clientMeta, patch)
}

func (t *turn) clientMetadata() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.clientMeta)
}

// nextPlanID is the id of the turn's next proposed plan item: the
// reference's "<turn id>-plan" for the first, "-plan-2" and on after it.
func (t *turn) nextPlanID() string {
	t.plans++
	if t.plans == 1 {
		return t.id + "-plan"
	}
	return fmt.Sprintf("%s-plan-%d", t.id, t.plans)
}

// subAgent is a sub-agent working for a turn: it talks to the model in a
// conversation of its own, which the thread's history and rollout never
// see, under a thread id of its own.
type subAgent struct {
	// kind names it to the provider (x-openai-subagent).
	kind string
	// threadID is its own conversation's id.
	threadID string
	// hist is its conversation.
	hist history
	// model, when set, replaces the turn's model.
	model string
}

// model is the model t's requests use.
func (t *turn) model() string {
	if t.sub != nil && t.sub.model != "" {
		return t.sub.model
	}
	return t.tc.Model
}

type steerInput struct {
	items    []UserInput
	clientID string
}

func (s *Session) startTurn(subID string, kind TurnKind, tc TurnContext) *turn {
	ctx, cancel := context.WithCancel(context.Background())
	t := &turn{
		id:        subID,
		subID:     subID,
		kind:      kind,
		tc:        tc,
		startedAt: s.cfg.Now(),
		log:       s.log.WithLazy(zap.String("turn", subID)),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		pending:   map[string]chan any{},
	}
	t.onWaiting = func(waiting bool) {
		if waiting {
			s.status.set(StatusWaiting)
		} else {
			s.status.set(StatusRunning)
		}
	}
	s.active = t
	s.status.set(StatusRunning)
	return t
}

func (t *turn) steerable() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kind == TurnRegular && t.abortReason == "" && !t.ending
}

// isEnding reports whether the turn no longer takes input (it is ending
// or was aborted).
func (t *turn) isEnding() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ending || t.abortReason != ""
}

// markEnding stops the turn taking input.
func (t *turn) markEnding() {
	t.mu.Lock()
	t.ending = true
	t.mu.Unlock()
}

// takeSteersOrEnd returns the steered input waiting, or, when there is
// none, marks the turn ending in the same step, so no input can slip in
// between the last look and the end.
func (t *turn) takeSteersOrEnd() []steerInput {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.steers
	t.steers = nil
	if len(s) == 0 {
		t.ending = true
	}
	return s
}

// addAux attaches work to the turn; it fails once the turn is ending.
func (t *turn) addAux() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ending || t.abortReason != "" {
		return false
	}
	t.aux.Add(1)
	return true
}

// steer queues input for the turn and abandons the in-flight stream, so
// the next request carries it.
func (t *turn) steer(in steerInput) {
	t.mu.Lock()
	t.steers = append(t.steers, in)
	cancel := t.streamCancel
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (t *turn) takeSteers() []steerInput {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.steers
	t.steers = nil
	return s
}

func (t *turn) hasSteers() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.steers) > 0
}

func (t *turn) abort(reason AbortReason) {
	t.mu.Lock()
	if t.abortReason == "" {
		t.abortReason = reason
	}
	t.mu.Unlock()
	t.cancel()
}

func (t *turn) aborted() AbortReason {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.abortReason
}

// await registers a pending request for callID; deliver completes it.
func (t *turn) await(callID string) chan any {
	ch, _ := t.register(callID, false)
	return ch
}

// awaitOpen is await for a request that may come from outside the turn's
// own work (an MCP server's elicitation, which can arrive as the turn
// ends): it registers nothing, and reports false, once the turn is ending,
// so that a request is never left waiting on a turn that is over.
func (t *turn) awaitOpen(callID string) (chan any, bool) {
	return t.register(callID, true)
}

// register adds a pending request for callID, unless onlyOpen is set and
// the turn is ending.
func (t *turn) register(callID string, onlyOpen bool) (chan any, bool) {
	t.mu.Lock()
	if onlyOpen && (t.ending || t.abortReason != "") {
		t.mu.Unlock()
		return nil, false
	}
	ch := make(chan any, 1)
	t.pending[callID] = ch
	n := len(t.pending)
	t.mu.Unlock()
	if n == 1 {
		t.onWaiting(true)
	}
	return ch, true
}

func (t *turn) forget(callID string) {
	t.mu.Lock()
	_, had := t.pending[callID]
	delete(t.pending, callID)
	n := len(t.pending)
	t.mu.Unlock()
	if had && n == 0 && t.ctx.Err() == nil {
		t.onWaiting(false)
	}
}

func (t *turn) deliver(callID string, v any) bool {
	t.mu.Lock()
	ch, ok := t.pending[callID]
	delete(t.pending, callID)
	n := len(t.pending)
	t.mu.Unlock()
	if !ok {
		return false
	}
	ch <- v
	if n == 0 {
		t.onWaiting(false)
	}
	return true
}

func (t *turn) waiting() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending) > 0
}

// finishTurn ends t. The end event is recorded and made durable first;
// then the turn is marked done, so the session loop learns of the end
// before any client can; then the event is published.
func (s *Session) finishTurn(t *turn, msg EventMsg) {
	t.markEnding()
	t.aux.Wait()
	s.emitMu.Lock()
	s.seq++
	ev := Event{Seq: s.seq, SubmissionID: t.subID, TurnID: t.id, Time: s.cfg.Now(), Msg: msg}
	if s.cfg.Sink != nil {
		s.cfg.Sink.RecordEvent(ev)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := s.cfg.Sink.Sync(ctx); err != nil {
			t.log.Warn("rollout sync failed at turn end", zap.Error(err))
		}
		cancel()
	}
	t.cancel()
	close(t.done)
	s.events.put(ev)
	s.emitMu.Unlock()
	select {
	case s.turnEnded <- t:
	default:
	}
}

// endTurn emits the right end event for t: TurnAborted if it was aborted,
// else TurnComplete (failed when terr is set).
func (s *Session) endTurn(t *turn, lastMessage string, terr *TurnError) {
	now := s.cfg.Now()
	if reason := t.aborted(); reason != "" {
		s.finishTurn(t, TurnAborted{Reason: reason, CompletedAt: now, Duration: now.Sub(t.startedAt)})
		return
	}
	if terr != nil {
		s.emit(t.subID, t.id, Error{Err: *terr})
	}
	s.finishTurn(t, TurnComplete{LastAgentMessage: lastMessage, Error: terr, CompletedAt: now, Duration: now.Sub(t.startedAt)})
}

func (s *Session) emitTurnStarted(t *turn, kind TurnKind) {
	s.emit(t.subID, t.id, TurnStarted{Kind: kind, StartedAt: t.startedAt, ModelContextWindow: s.cfg.ContextWindow, Context: t.tc})
}

// runRegularTurn is the turn loop: sample, run tools as their calls
// complete, collect their outputs in call order, and sample again until the
// model has nothing more to do.
func (s *Session) runRegularTurn(t *turn, first steerInput) {
	s.emitTurnStarted(t, TurnRegular)
	s.recordContext(t.id, t.tc)
	if len(first.items) > 0 {
		s.recordUserInput(t, first)
	}
	var last string
	rerouted := false
	retriedAfterCompaction := false
	for {
		if t.ctx.Err() != nil {
			break
		}
		res, err := s.sample(t, &rerouted)
		if res.lastMessage != "" {
			last = res.lastMessage
		}
		if err != nil {
			if t.ctx.Err() != nil {
				break
			}
			// The context is too long: compact once and try again.
			if isContextWindowExceeded(err) && !retriedAfterCompaction {
				retriedAfterCompaction = true
				if s.compactInTurn(t) == nil {
					continue
				}
			}
			s.endTurn(t, last, turnErrorFrom(err))
			return
		}
		if res.followUp && s.nearContextLimit() {
			if err := s.compactInTurn(t); err != nil && t.ctx.Err() == nil {
				s.endTurn(t, last, turnErrorFrom(err))
				return
			}
		}
		if steers := t.takeSteers(); len(steers) > 0 {
			for _, in := range steers {
				s.recordUserInput(t, in)
			}
			continue
		}
		if res.followUp {
			continue
		}
		if steers := t.takeSteersOrEnd(); len(steers) > 0 {
			for _, in := range steers {
				s.recordUserInput(t, in)
			}
			continue
		}
		break
	}
	if t.aborted() != "" {
		s.record(t.id, model.NewTextMessage("", "user", interruptedMarker))
	}
	s.endTurn(t, last, nil)
}

// interruptedMarker tells the model, in the next turn, that the user
// stopped the previous one.
const interruptedMarker = "<turn_aborted>\nThe user interrupted the previous turn. Work in it may be incomplete; do not assume it finished.\n</turn_aborted>"

// recordTurn records items of t's conversation with the model: the
// thread's (history, sink, raw event), or its sub-agent's own.
func (s *Session) recordTurn(t *turn, items ...model.ResponseItem) {
	if t.sub != nil {
		t.sub.hist.append(t.id, items...)
		return
	}
	s.record(t.id, items...)
}

// turnHistory is the conversation t's requests carry.
func (s *Session) turnHistory(t *turn) []model.ResponseItem {
	if t.sub != nil {
		return t.sub.hist.snapshot()
	}
	return s.hist.snapshot()
}

// callMeta says who makes t's requests: the thread, or its sub-agent
// under its own thread id, in the thread's session.
func (s *Session) callMeta(t *turn) model.CallMeta {
	meta := model.CallMeta{
		Originator: s.cfg.Originator,
		UserAgent:  s.cfg.UserAgent,
		ThreadID:   s.cfg.ThreadID,
		TurnID:     t.id,
	}
	if t.sub != nil {
		meta.ThreadID = t.sub.threadID
		meta.SessionID = s.cfg.ThreadID
		meta.SubAgent = t.sub.kind
		meta.ParentThreadID = s.cfg.ThreadID
	}
	if t.trace != nil {
		meta.Traceparent, meta.Tracestate = t.trace.Traceparent, t.trace.Tracestate
	}
	return meta
}

// recordContext puts the developer instructions, the user's AGENTS.md
// instructions and the environment context in the history when the thread
// has none yet (the environment context again when it changed since the
// last turn), and the collaboration mode of tc when the model has not
// been told about it yet. It records them as items of turn turnID ("" for
// items recorded between turns, such as the context that items injected
// into a new thread come after).
func (s *Session) recordContext(turnID string, tc TurnContext) {
	var items []model.ResponseItem
	if !s.envSent {
		instr := s.cfg.BaseInstructions
		if instr == "" {
			instr = baseInstructions
		}
		items = append(items, model.NewTextMessage(newMessageID(), "developer", instr))
		if s.cfg.DeveloperInstructions != "" {
			items = append(items, model.NewTextMessage(newMessageID(), "developer", s.cfg.DeveloperInstructions))
		}
		if text, omitted := skills.Instructions(s.cfg.Skills); text != "" {
			if omitted > 0 {
				s.log.Warn("the skill list is too long for the model's instructions: skills left out",
					zap.Int("omitted", omitted), zap.Int("maxBytes", skills.MaxInstructionBytes))
				// The thread's client is told once, when the list is
				// first given to the model, as the reference does.
				s.emit("", turnID, Warning{Message: skillsOmittedWarning})
			}
			items = append(items, model.NewTextMessage(newMessageID(), "developer", text))
		}
	}
	if text := tc.Mode.Text(); text != "" && text != s.lastMode {
		items = append(items, modeMessage(tc.Mode))
		s.lastMode = text
	}
	env := environmentContext(tc, s.cfg.Now())
	if !s.envSent || env != s.lastEnv {
		var parts []model.ContentPart
		if doc := projectDocText(s.cfg.ProjectDoc, tc.Cwd); doc != "" && !s.envSent {
			parts = append(parts, model.ContentPart{Type: "input_text", Text: doc})
		}
		parts = append(parts, model.ContentPart{Type: "input_text", Text: env})
		items = append(items, model.NewMessage(newMessageID(), "user", parts...))
		s.lastEnv = env
	}
	s.envSent = true
	s.record(turnID, items...)
}

// recordUserInput records a user message: item started, history, item
// completed.
func (s *Session) recordUserInput(t *turn, in steerInput) {
	id := newItemID()
	shown := make([]UserInput, len(in.items))
	for i, u := range in.items {
		if u.Kind == InputLocalImage {
			u.ImageURL = "" // the item shows the path; the bytes are for the model
		}
		shown[i] = u
	}
	item := UserMessageItem{ID: id, Content: shown, ClientID: in.clientID}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	s.record(t.id, userInputToResponseItem(in.items))
	s.emit(t.subID, t.id, ItemCompleted{Item: item})
}

// sampleResult is what one model call produced.
type sampleResult struct {
	lastMessage string
	// followUp: the model must be sampled again (tool calls were made,
	// or it said the turn is not over).
	followUp bool
}

// sample makes one model call, retrying the stream as allowed, runs the
// tools it asks for, and records everything.
func (s *Session) sample(t *turn, rerouted *bool) (sampleResult, error) {
	var res sampleResult
	err := s.retrying(t, func() error {
		var err error
		res, err = s.sampleOnce(t, rerouted)
		if errors.Is(err, errSteered) {
			return nil
		}
		return err
	})
	return res, err
}

// retrying runs attempt until it succeeds, fails for good, or the turn
// ends. A retryable model error is retried up to StreamMaxRetries times,
// each announced with a StreamError, after the server's delay or the
// backoff.
func (s *Session) retrying(t *turn, attempt func() error) error {
	maxRetries := s.cfg.StreamMaxRetries
	for n := 1; ; n++ {
		err := attempt()
		if err == nil || t.ctx.Err() != nil {
			return err
		}
		var me *model.Error
		if !errors.As(err, &me) || !me.Retryable() || n > maxRetries {
			return err
		}
		delay := me.RetryAfter
		if delay == 0 {
			delay = model.Backoff(n)
		}
		kind, status := errorKindOf(me)
		if kind == KindInternalServerError {
			// The reference reports a 5xx as a condition of its own,
			// without a status, and its retry notices say so too
			// (httpStatusCode null); clients see the same as from it.
			status = 0
		}
		s.emit(t.subID, t.id, StreamError{
			Message:    fmt.Sprintf("Reconnecting... %d/%d", n, maxRetries),
			Attempt:    n,
			Max:        maxRetries,
			Kind:       KindStreamDisconnected,
			HTTPStatus: status,
			Details:    me.Message,
		})
		if err := s.cfg.Sleep(t.ctx, delay); err != nil {
			return err
		}
	}
}

// errSteered ends a stream that was abandoned for steered input.
var errSteered = errors.New("stream abandoned for steered input")

// sampleOnce streams one response. Tool calls start as soon as their item
// is done; their outputs are recorded in call order once the stream ends,
// whatever way it ends, so every call in the history has its output.
func (s *Session) sampleOnce(t *turn, rerouted *bool) (res sampleResult, err error) {
	streamCtx, cancel := context.WithCancel(t.ctx)
	t.mu.Lock()
	t.streamCancel = cancel
	steered := len(t.steers) > 0
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.streamCancel = nil
		t.mu.Unlock()
		cancel()
	}()
	if steered {
		return res, errSteered
	}
	req := s.buildRequest(t)
	meta := s.callMeta(t)
	req.ClientMetadata = requestMetadata(&meta, t.clientMetadata())
	stream, err := s.cfg.Client.Stream(streamCtx, req, meta)
	if err != nil {
		if t.hasSteers() && t.ctx.Err() == nil {
			return res, errSteered
		}
		return res, err
	}
	defer stream.Close()

	st := newStreamState(s, t)
	var calls []*toolRun
	var completed *model.StreamEvent
	for {
		ev, nerr := stream.Next()
		if nerr == io.EOF {
			break
		}
		if nerr != nil {
			err = nerr
			break
		}
		switch ev.Kind {
		case model.EventCreated:
			s.checkReroute(t, req.Model, ev.Model, rerouted)
		case model.EventOutputItemDone:
			if call := st.itemDone(ev.Item); call != nil {
				if slices.ContainsFunc(calls, func(r *toolRun) bool { return r.call.callID == call.callID }) {
					// A call id used twice in one response cannot be
					// answered twice: the second gets an error at once.
					calls = append(calls, doneTool(call, call.output("call id "+call.callID+" was already used in this response; use a new call id")))
				} else {
					calls = append(calls, s.startTool(t, call))
				}
			}
		case model.EventCompleted:
			c := ev
			completed = &c
			s.checkReroute(t, req.Model, ev.Model, rerouted)
		default:
			st.handle(ev)
		}
	}
	if err != nil && t.hasSteers() && t.ctx.Err() == nil {
		err = errSteered
	}
	if err == nil && completed == nil {
		err = &model.Error{Kind: model.ErrStreamDisconnected, Message: "stream closed before response.completed"}
	}
	res.lastMessage = st.lastMessage
	if completed != nil {
		usage := model.TokenUsage{}
		if completed.Usage != nil {
			usage = *completed.Usage
		}
		s.emit(t.subID, t.id, RawResponseCompleted{ResponseID: completed.ResponseID, Usage: usage, RawUsage: completed.RawUsage})
	}
	// Collect tool outputs in the order the model issued the calls.
	for _, c := range calls {
		<-c.done
		s.recordTurn(t, c.output)
	}
	if completed != nil {
		if completed.Usage != nil {
			s.countUsage(t, *completed.Usage)
		}
		res.followUp = len(calls) > 0 || (completed.EndTurn != nil && !*completed.EndTurn)
	}
	s.emit(t.subID, t.id, RateLimits{Snapshot: stream.RateLimits()})
	return res, err
}

// countUsage adds a response's usage to the turn's and the thread's
// accounts and reports them. A sub-agent's usage is not the thread's: its
// conversation is not the thread's context (whose size the last usage
// tells, and compaction watches), so it is neither counted nor reported,
// as the reference keeps it on the sub-agent's own thread.
func (s *Session) countUsage(t *turn, u model.TokenUsage) {
	t.usage = t.usage.Add(u)
	if t.sub != nil {
		return
	}
	s.tokenTotal = s.tokenTotal.Add(u)
	s.lastUsage = u
	s.emit(t.subID, t.id, TokenCount{Info: TokenUsageInfo{
		Total:              s.tokenTotal,
		Turn:               t.usage,
		Last:               u,
		ModelContextWindow: s.cfg.ContextWindow,
	}})
}

func (s *Session) checkReroute(t *turn, asked, served string, done *bool) {
	if *done || served == "" || asked == "" || strings.EqualFold(served, asked) {
		return
	}
	*done = true
	s.emit(t.subID, t.id, ModelReroute{From: asked, To: served, Reason: "served by a different model"})
	s.emit(t.subID, t.id, Warning{Message: rerouteWarning})
}

// skillsOmittedWarning is the reference's warning for a skill list cut
// to fit the model's context (its wording for skills left out with their
// descriptions kept; agentd never shortens descriptions).
const skillsOmittedWarning = "Exceeded skills context budget. Some skills were not included in the model-visible skills list."

// rerouteWarning is the warning that follows a reroute, the reference's
// text word for word: its only cause of a reroute is the backend's safety
// fallback, and it names the models of that fallback whatever they were.
const rerouteWarning = "Your account was flagged for potentially high-risk cyber activity and this request was routed to gpt-5.2 as a fallback. To regain access to gpt-5.3-codex, apply for trusted access: https://chatgpt.com/cyber or learn more: https://developers.openai.com/codex/concepts/cyber-safety"

// buildRequest assembles the Responses request for the turn's next call.
func (s *Session) buildRequest(t *turn) *model.Request {
	req := &model.Request{
		Model:             t.model(),
		Input:             s.turnHistory(t),
		Tools:             s.toolSpecs(t),
		ToolChoice:        "auto",
		ParallelToolCalls: true,
		Store:             false,
		Stream:            true,
		Include:           []string{"reasoning.encrypted_content"},
		PromptCacheKey:    s.cfg.ThreadID,
	}
	if t.tc.Effort != "" || t.tc.Summary != "" {
		r := &model.Reasoning{Effort: t.tc.Effort}
		if t.tc.Summary != "" && t.tc.Summary != "none" {
			r.Summary = t.tc.Summary
		}
		req.Reasoning = r
	}
	if len(t.tc.OutputSchema) > 0 || s.cfg.Verbosity != "" {
		req.Text = &model.TextControls{Verbosity: s.cfg.Verbosity}
	}
	if len(t.tc.OutputSchema) > 0 {
		req.Text.Format = &model.TextFormat{
			Type: "json_schema", Name: outputSchemaName, Schema: t.tc.OutputSchema, Strict: true,
		}
	}
	return req
}

// turnMetadataKey is the client_metadata key (and the header) that holds
// the turn's metadata as a JSON object, as the reference names it.
const turnMetadataKey = "x-codex-turn-metadata"

// reservedMetadataKeys are the reference's own turn metadata keys: a
// client's entry with one of these names is dropped, whether or not
// agentd sends that key.
var reservedMetadataKeys = map[string]bool{
	"installation_id": true, "x-codex-installation-id": true, "session_id": true, "thread_id": true,
	"turn_id": true, "window_id": true, "x-codex-window-id": true, turnMetadataKey: true,
	"request_kind": true, "compaction": true, "turn_started_at_unix_ms": true, "forked_from_thread_id": true,
}

// requestMetadata returns a model request's client_metadata and sets
// meta's turn metadata (sent as the x-codex-turn-metadata header), as the
// reference does: the session, thread and turn ids at the top level, and
// under x-codex-turn-metadata a JSON object of the same ids with the
// client's entries (client) added. The client's entries never replace
// the daemon's own keys and are not top-level keys.
func requestMetadata(meta *model.CallMeta, client map[string]string) map[string]string {
	session := meta.SessionID
	if session == "" {
		session = meta.ThreadID
	}
	own := map[string]string{"session_id": session, "thread_id": meta.ThreadID, "turn_id": meta.TurnID}
	turnMeta := make(map[string]string, len(own)+len(client))
	for k, v := range client {
		if !reservedMetadataKeys[k] {
			turnMeta[k] = v
		}
	}
	maps.Copy(turnMeta, own)
	b, _ := json.Marshal(turnMeta)
	meta.TurnMetadata = string(b)
	own[turnMetadataKey] = meta.TurnMetadata
	return own
}

// outputSchemaName is the name of a turn's output schema in the request's
// text.format, the reference's.
const outputSchemaName = "codex_output_schema"

// turnErrorFrom classifies a failure that ends a turn.
func turnErrorFrom(err error) *TurnError {
	var me *model.Error
	if errors.As(err, &me) {
		kind, status := errorKindOf(me)
		return &TurnError{Message: me.Message, Kind: kind, HTTPStatus: status}
	}
	return &TurnError{Message: err.Error(), Kind: KindOther}
}

// errorKindOf maps a model error to the error class clients see when it
// ends a turn, as the reference reports them: an HTTP 400 is "other" with
// the body as text, and so is a response.failed. (While the core retries,
// every failure is reported as a stream disconnect.)
func errorKindOf(me *model.Error) (ErrorKind, int) {
	switch me.Kind {
	case model.ErrContextWindowExceeded:
		return KindContextWindowExceeded, me.HTTPStatus
	case model.ErrQuotaExceeded:
		return KindUsageLimitExceeded, me.HTTPStatus
	case model.ErrUnauthorized:
		return KindUnauthorized, me.HTTPStatus
	case model.ErrServerOverloaded:
		return KindServerOverloaded, me.HTTPStatus
	case model.ErrModelNotFound:
		return KindModelNotFound, me.HTTPStatus
	case model.ErrInternalServer:
		return KindInternalServerError, me.HTTPStatus
	case model.ErrConnectionFailed:
		return KindHTTPConnectionFailed, me.HTTPStatus
	case model.ErrStreamDisconnected, model.ErrStreamIdleTimeout, model.ErrResponseIncomplete:
		return KindStreamDisconnected, me.HTTPStatus
	case model.ErrRetryLimit:
		return KindTooManyFailedAttempts, me.HTTPStatus
	}
	return KindOther, me.HTTPStatus
}

func newItemID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

func newMessageID() string { return "msg_" + newItemID() }
