package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/catalog"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/projectdoc"
	"github.com/agentd-dev/agentd/core/skills"
	"github.com/agentd-dev/agentd/core/tools/exec"
)

// SubmissionQueueCapacity bounds the inbound river. A full queue makes
// Submit wait (until its context ends); nothing is ever dropped.
const SubmissionQueueCapacity = 512

// ModelClient streams model responses. *model.Client implements it.
type ModelClient interface {
	Stream(ctx context.Context, req *model.Request, meta model.CallMeta) (model.Stream, error)
}

// Config is what a session is built from.
type Config struct {
	ThreadID string
	// Model and Provider name the model; Client streams from it.
	Model    string
	Provider string
	Client   ModelClient
	// StreamMaxRetries bounds stream retries per model call.
	StreamMaxRetries int
	// ContextWindow is the model's context window in tokens, 0 if unknown.
	ContextWindow int64
	// AutoCompactTokens compacts the history inside a turn once a model
	// response used this many tokens; 0 means 90% of ContextWindow (and
	// never when that is unknown), -1 never.
	AutoCompactTokens int64

	Cwd            string
	ApprovalPolicy policy.ApprovalPolicy
	Sandbox        policy.SandboxPolicy
	Effort         string
	Summary        string
	// Mode is the collaboration mode of the thread's next turn.
	Mode CollaborationMode
	// Verbosity is the Responses API text verbosity; "" leaves it out.
	Verbosity string
	// WebSearch offers the provider's hosted web_search tool ("" or
	// disabled: not offered).
	WebSearch WebSearchMode
	// GeneratedImagesDir is where images from the hosted image generation
	// are saved, one directory per thread ("": not saved).
	GeneratedImagesDir string
	// ToolOutputTokenLimit caps every tool output the model reads, in
	// tokens (about four bytes each; head and tail kept); 0: each tool's
	// own limit.
	ToolOutputTokenLimit int

	// BaseInstructions replace the built-in instructions when set.
	BaseInstructions      string
	DeveloperInstructions string
	// ProjectDoc holds the user's AGENTS.md instructions, sent with the
	// first environment context.
	ProjectDoc projectdoc.Doc
	// Skills are the skills found for the thread (core/skills); the
	// enabled ones are listed to the model in a developer message after
	// the developer instructions. The model reads a skill's SKILL.md
	// itself when it uses it.
	Skills       []skills.Skill
	DynamicTools []DynamicToolSpec
	// MCP is the daemon's MCP servers, whose tools the model is offered;
	// nil for none.
	MCP MCPTools
	// ToolFamily says which shell tool family and apply_patch form a model
	// is offered (by name: a turn may change the model); nil offers
	// catalog.Default to every model.
	ToolFamily func(model string) catalog.Tools

	Originator string
	UserAgent  string

	// History is the model history of a resumed thread.
	History []model.ResponseItem
	// Sink persists the thread; nil keeps nothing.
	Sink Sink
	// SandboxCapabilities overrides what the host is detected to
	// support (tests); nil detects.
	SandboxCapabilities *policy.Capabilities
	// SandboxHelper is the executable serving the sandbox helper entry
	// point; "" means this executable.
	SandboxHelper string
	// ShellEnv shapes the environment of the commands the model and the
	// user run (shell_environment_policy).
	ShellEnv exec.EnvPolicy
	Log      *zap.Logger
	// Now and Sleep are the clock, replaceable in tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// TurnContext is the settings a turn runs with.
type TurnContext struct {
	Cwd            string
	Model          string
	Effort         string
	Summary        string
	ApprovalPolicy policy.ApprovalPolicy
	Sandbox        policy.SandboxPolicy
	Mode           CollaborationMode
	// OutputSchema applies to one turn only.
	OutputSchema json.RawMessage
}

func (tc TurnContext) apply(o TurnOverrides) TurnContext {
	if o.Cwd != nil {
		tc.Cwd = *o.Cwd
	}
	if o.Model != nil {
		tc.Model = *o.Model
	}
	if o.Effort != nil {
		tc.Effort = *o.Effort
	}
	if o.Summary != nil {
		tc.Summary = *o.Summary
	}
	if o.ApprovalPolicy != nil {
		tc.ApprovalPolicy = *o.ApprovalPolicy
	}
	if o.Sandbox != nil {
		tc.Sandbox = *o.Sandbox
	}
	if o.Mode != nil {
		tc.Mode = *o.Mode
	}
	return tc
}

// Reply is the immediate answer to a submission: an Ack, or an error (a
// *RejectError when the core refused it).
type Reply struct {
	Ack Ack
	Err error
}

type queued struct {
	sub   Submission
	reply chan Reply
}

// Session is one thread's agent: a loop that takes submissions one at a
// time, the running turn (at most one), and the event stream.
type Session struct {
	cfg    Config
	log    *zap.Logger
	subs   *submissionQueue
	events *EventStream
	status *statusCell
	hist   history
	tools  map[string]toolHandler
	// exec runs commands; approvals remembers what the user allowed for
	// the session.
	exec      *execState
	approvals *policy.SessionApprovals
	// mcpAllowed holds the MCP tools ("server/tool") the user approved
	// for the session.
	mcpAllowed sync.Map

	// emitMu serialises event emission: Seq order, sink order and stream
	// order are the same.
	emitMu sync.Mutex
	seq    uint64
	// recordMu makes recording an item (history, sink, raw event) one
	// step, whichever goroutine records; it is taken before emitMu.
	recordMu sync.Mutex

	// ctxMu guards tc, the persistent turn settings.
	ctxMu sync.Mutex
	tc    TurnContext

	// Owned by the loop goroutine.
	active    *turn
	turnEnded chan *turn
	envSent   bool
	lastEnv   string
	// lastMode is the text of the collaboration mode the model was last
	// told about ("" for none).
	lastMode   string
	loopDone   chan struct{}
	tokenTotal model.TokenUsage
	// lastUsage is the usage of the last model response (its total is
	// about the size of the context).
	lastUsage model.TokenUsage
}

// NewSession starts a session and emits SessionConfigured.
func NewSession(cfg Config) (*Session, error) {
	if cfg.ThreadID == "" {
		return nil, errors.New("core: session needs a thread id")
	}
	if cfg.Client == nil {
		return nil, errors.New("core: session needs a model client")
	}
	if cfg.Cwd == "" {
		return nil, errors.New("core: session needs a cwd")
	}
	if cfg.ApprovalPolicy == "" {
		cfg.ApprovalPolicy = policy.ApprovalOnRequest
	}
	if cfg.Sandbox.Mode == "" {
		cfg.Sandbox = policy.ReadOnly()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = model.Sleep
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if err := ValidateDynamicTools(cfg.DynamicTools); err != nil {
		return nil, err
	}
	s := &Session{
		cfg:       cfg,
		log:       cfg.Log.WithLazy(zap.String("thread", cfg.ThreadID)), // its fields encoded only when it logs
		subs:      newSubmissionQueue(),
		events:    newEventStream(),
		status:    newStatusCell(),
		turnEnded: make(chan *turn, 1),
		loopDone:  make(chan struct{}),
		tc: TurnContext{
			Cwd:            cfg.Cwd,
			Model:          cfg.Model,
			Effort:         cfg.Effort,
			Summary:        cfg.Summary,
			ApprovalPolicy: cfg.ApprovalPolicy,
			Sandbox:        cfg.Sandbox,
			Mode:           cfg.Mode,
		},
	}
	s.tools = s.builtinTools()
	s.exec = newExecState(s)
	s.approvals = policy.NewSessionApprovals()
	if len(cfg.History) > 0 {
		s.hist.append("", cfg.History...)
		s.envSent = true
		s.lastMode = lastModeText(cfg.History)
		// The history holds them now: the config would keep a second
		// reference to every item for the session's life.
		s.cfg.History = nil
	}
	s.emit("", "", SessionConfigured{
		ThreadID:       cfg.ThreadID,
		Model:          cfg.Model,
		Provider:       cfg.Provider,
		Cwd:            cfg.Cwd,
		ApprovalPolicy: cfg.ApprovalPolicy,
		Sandbox:        cfg.Sandbox,
		Effort:         cfg.Effort,
		HistoryLen:     len(cfg.History),
	})
	s.subs.start = func() { go s.loop() }
	return s, nil
}

// ThreadID returns the session's thread id.
func (s *Session) ThreadID() string { return s.cfg.ThreadID }

// Events returns the session's event stream (one reader).
func (s *Session) Events() *EventStream { return s.events }

// Status returns the agent status now and a channel closed at its next
// change.
func (s *Session) Status() (AgentStatus, <-chan struct{}) { return s.status.get() }

// TurnContext returns the settings the next turn will run with.
func (s *Session) TurnContext() TurnContext {
	s.ctxMu.Lock()
	defer s.ctxMu.Unlock()
	return s.tc
}

// History returns a copy of the model history.
func (s *Session) History() []model.ResponseItem { return s.hist.snapshot() }

// Done is closed when the session has shut down.
func (s *Session) Done() <-chan struct{} { return s.loopDone }

// Submit queues op and returns its submission id and the channel its
// immediate answer arrives on. It waits while the queue is full, until ctx
// ends; it never drops.
func (s *Session) Submit(ctx context.Context, op Op) (string, <-chan Reply, error) {
	return s.SubmitTraced(ctx, op, nil)
}

// SubmitTraced is Submit with the caller's W3C trace context, which a
// turn the submission starts passes on to the model provider.
func (s *Session) SubmitTraced(ctx context.Context, op Op, trace *TraceContext) (string, <-chan Reply, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", nil, err
	}
	q := queued{sub: Submission{ID: id.String(), Op: op, Trace: trace}, reply: make(chan Reply, 1)}
	select {
	case <-s.loopDone:
		return "", nil, &RejectError{Reason: RejectShutdown, Message: "session is shut down"}
	default:
	}
	switch err := s.subs.put(ctx, q, s.loopDone); {
	case err == nil:
		return q.sub.ID, q.reply, nil
	case errors.Is(err, errDone):
		return "", nil, &RejectError{Reason: RejectShutdown, Message: "session is shut down"}
	default:
		return "", nil, err
	}
}

// Call submits op and waits for its immediate answer.
func (s *Session) Call(ctx context.Context, op Op) (Ack, error) {
	return s.CallTraced(ctx, op, nil)
}

// CallTraced is Call with the caller's trace context (see SubmitTraced).
func (s *Session) CallTraced(ctx context.Context, op Op, trace *TraceContext) (Ack, error) {
	_, ch, err := s.SubmitTraced(ctx, op, trace)
	if err != nil {
		return Ack{}, err
	}
	select {
	case r := <-ch:
		return r.Ack, r.Err
	case <-s.loopDone:
		select {
		case r := <-ch:
			return r.Ack, r.Err
		default:
		}
		return Ack{}, &RejectError{Reason: RejectShutdown, Message: "session is shut down"}
	case <-ctx.Done():
		return Ack{}, ctx.Err()
	}
}

// Shutdown submits OpShutdown and waits until the session has stopped.
func (s *Session) Shutdown(ctx context.Context) error {
	if _, _, err := s.Submit(ctx, OpShutdown{}); err != nil {
		var rej *RejectError
		if errors.As(err, &rej) && rej.Reason == RejectShutdown {
			return nil
		}
		return err
	}
	select {
	case <-s.loopDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// emit stamps msg, hands it to the sink, and puts it on the stream. It
// never waits for the stream's reader; the sink may make it wait for the
// disk (see Sink).
func (s *Session) emit(subID, turnID string, msg EventMsg) Event {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.seq++
	ev := Event{Seq: s.seq, SubmissionID: subID, TurnID: turnID, Time: s.cfg.Now(), Msg: msg}
	if s.cfg.Sink != nil {
		s.cfg.Sink.RecordEvent(ev)
	}
	s.events.put(ev)
	return ev
}

// record appends items to the history in the one fixed order: history,
// sink, raw-item event. A RawResponseItem is never seen before its item is
// in the history.
func (s *Session) record(turnID string, items ...model.ResponseItem) {
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	for _, it := range items {
		s.hist.append(turnID, it)
		if s.cfg.Sink != nil {
			s.cfg.Sink.RecordItem(turnID, it)
		}
		s.emit("", turnID, RawResponseItem{Item: it})
	}
}

// loop takes the submissions one at a time. It runs only while there is
// work: the submission queue starts it when a submission comes and none
// runs, and it returns once the queue is empty and no turn is active (a
// turn's end is what it waits for then). An idle session therefore holds
// no goroutine. The state it owns (active, envSent, …) passes from one
// run to the next through the queue's lock.
func (s *Session) loop() {
	for {
		if q, ok := s.subs.take(); ok {
			if stop := s.handle(q); stop {
				s.stopped()
				return
			}
			continue
		}
		if s.active == nil && s.subs.park() {
			return
		}
		select {
		case <-s.subs.ready:
		case t := <-s.turnEnded:
			if s.active == t {
				s.active = nil
			}
			s.updateStatus()
		}
	}
}

// stopped ends the session's loop for good: submissions queued behind
// the shutdown are answered too.
func (s *Session) stopped() {
	for {
		q, ok := s.subs.take()
		if !ok {
			break
		}
		q.reply <- Reply{Err: &RejectError{Reason: RejectShutdown, Message: "session is shut down"}}
	}
	close(s.loopDone)
}

func (s *Session) updateStatus() {
	switch {
	case s.active == nil:
		s.status.set(StatusIdle)
	case s.active.waiting():
		s.status.set(StatusWaiting)
	default:
		s.status.set(StatusRunning)
	}
}

// handle carries out one submission. It returns true when the session
// must stop.
func (s *Session) handle(q queued) bool {
	ok := func(outcome AckOutcome, turnID string) {
		q.reply <- Reply{Ack: Ack{SubmissionID: q.sub.ID, Outcome: outcome, TurnID: turnID}}
	}
	reject := func(reason RejectReason, format string, args ...any) {
		q.reply <- Reply{Err: &RejectError{Reason: reason, Message: fmt.Sprintf(format, args...)}}
	}
	s.reapEnded()
	switch op := q.sub.Op.(type) {
	case OpUserInput:
		s.waitEnding()
		if t := s.active; t != nil {
			if !t.steerable() {
				q.reply <- Reply{Err: notSteerable(t, "the running %s turn cannot take input")}
				return false
			}
			t.setClientMetadata(op.ClientMetadata, op.ClientMetadataPatch)
			t.steer(steerInput{items: op.Input, clientID: op.ClientMessageID})
			ok(AckSteered, t.id)
			return false
		}
		s.ctxMu.Lock()
		s.tc = s.tc.apply(op.Overrides)
		tc := s.tc
		s.ctxMu.Unlock()
		tc.OutputSchema = op.Overrides.OutputSchema
		t := s.startTurn(q.sub.ID, TurnRegular, tc)
		t.trace = q.sub.Trace
		t.setClientMetadata(op.ClientMetadata, op.ClientMetadataPatch)
		ok(AckStarted, t.id)
		go s.runRegularTurn(t, steerInput{items: op.Input, clientID: op.ClientMessageID})
	case OpSteer:
		t := s.active
		if t == nil || t.isEnding() {
			reject(RejectNoActiveTurn, "no active turn to steer")
			return false
		}
		if op.ExpectedTurnID != "" && op.ExpectedTurnID != t.id {
			reject(RejectTurnMismatch, "expected active turn id `%s` but found `%s`", op.ExpectedTurnID, t.id)
			return false
		}
		if !t.steerable() {
			q.reply <- Reply{Err: notSteerable(t, "cannot steer a %s turn")}
			return false
		}
		t.setClientMetadata(op.ClientMetadata, op.ClientMetadataPatch)
		t.steer(steerInput{items: op.Input, clientID: op.ClientMessageID})
		ok(AckSteered, t.id)
	case OpInterrupt:
		t := s.active
		if t == nil || t.isEnding() {
			reject(RejectNoActiveTurn, "no active turn to interrupt")
			return false
		}
		if op.TurnID != "" && op.TurnID != t.id {
			reject(RejectTurnMismatch, "expected active turn id `%s` but found `%s`", op.TurnID, t.id)
			return false
		}
		t.abort(AbortInterrupted)
		ok(AckDone, t.id)
	case OpExecApproval:
		s.answer(q, op.CallID, op.Decision)
	case OpPatchApproval:
		s.answer(q, op.CallID, op.Decision)
	case OpUserInputAnswer:
		s.answer(q, op.CallID, op)
	case OpDynamicToolResponse:
		s.answer(q, op.CallID, op)
	case OpMcpElicitationAnswer:
		s.answer(q, op.CallID, op)
	case OpOverrideTurnContext:
		s.ctxMu.Lock()
		s.tc = s.tc.apply(op.Overrides)
		s.ctxMu.Unlock()
		ok(AckDone, "")
	case OpCompact:
		s.waitEnding()
		if s.active != nil {
			reject(RejectInvalid, "a turn is already running")
			return false
		}
		t := s.startTurn(q.sub.ID, TurnCompact, s.TurnContext())
		ok(AckStarted, t.id)
		go s.runCompactTurn(t)
	case OpReview:
		s.waitEnding()
		if t := s.active; t != nil {
			// A review replaces the running turn, as in the reference:
			// that turn is interrupted first.
			t.abort(AbortInterrupted)
			<-t.done
			s.active = nil
		}
		s.ctxMu.Lock()
		s.tc = s.tc.apply(op.Overrides)
		tc := s.tc
		s.ctxMu.Unlock()
		t := s.startTurn(q.sub.ID, TurnReview, tc)
		t.trace = q.sub.Trace
		t.sub = newReviewer(op.Model)
		ok(AckStarted, t.id)
		go s.runReviewTurn(t, op)
	case OpShellCommand:
		s.waitEnding()
		if t := s.active; t != nil && t.addAux() {
			go func() {
				defer t.aux.Done()
				s.runUserShell(t, op, false)
			}()
			ok(AckSteered, t.id)
			return false
		}
		s.waitEnding()
		t := s.startTurn(q.sub.ID, TurnUserShell, s.TurnContext())
		ok(AckStarted, t.id)
		go s.runUserShell(t, op, true)
	case OpInjectItems:
		turnID := ""
		if s.active != nil {
			turnID = s.active.id
		} else if !s.envSent {
			// As in the reference, items injected into a thread that has
			// no context yet come after its initial context (developer
			// instructions, environment) and before the first prompt:
			// the context is recorded now, with the thread's settings,
			// and the first turn adds only what differs for it. The
			// record holds it in that order, so a resumed thread
			// rebuilds the same history.
			s.recordContext("", s.TurnContext())
		}
		s.record(turnID, op.Items...)
		ok(AckDone, turnID)
	case OpRollback:
		s.waitEnding()
		if s.active != nil {
			reject(RejectInvalid, "cannot roll back while a turn is running")
			return false
		}
		if op.NumTurns < 1 {
			reject(RejectInvalid, "numTurns must be at least 1")
			return false
		}
		if op.Persist != nil {
			h, err := op.Persist()
			if err != nil {
				reject(RejectInvalid, "rollback failed: %v", err)
				return false
			}
			s.hist.replace("", h)
		} else {
			s.hist.dropLastTurns(op.NumTurns)
		}
		// The turns dropped may be those that told the model its mode.
		s.lastMode = lastModeText(s.hist.snapshot())
		ok(AckDone, "")
	case OpShutdown:
		if t := s.active; t != nil {
			t.abort(AbortShutdown)
			<-t.done
			s.active = nil
		}
		if s.cfg.Sink != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.cfg.Sink.Sync(ctx); err != nil {
				s.log.Warn("sync at shutdown failed", zap.Error(err))
			}
			cancel()
		}
		s.closeTools()
		ok(AckDone, "")
		s.status.set(StatusShutdown)
		s.emit(q.sub.ID, "", ShutdownComplete{})
		s.events.close()
		return true
	default:
		reject(RejectInvalid, "unknown op %T", op)
	}
	return false
}

// notSteerable refuses input to t, a turn that takes none; format names
// its kind.
func notSteerable(t *turn, format string) *RejectError {
	return &RejectError{Reason: RejectNotSteerable, Message: fmt.Sprintf(format, t.kind), TurnKind: t.kind}
}

// waitEnding waits for a turn that is ending to be done, so that a
// submission right after a turn's end starts a new turn rather than
// steering into one that no longer reads its input.
func (s *Session) waitEnding() {
	if t := s.active; t != nil && t.isEnding() {
		<-t.done
		s.active = nil
		s.updateStatus()
	}
}

// reapEnded clears a turn that finished but whose end the loop has not
// read yet, so a submission right after a turn end sees the session idle.
func (s *Session) reapEnded() {
	for {
		select {
		case t := <-s.turnEnded:
			if s.active == t {
				s.active = nil
			}
			s.updateStatus()
		default:
			if t := s.active; t != nil {
				select {
				case <-t.done:
					s.active = nil
					s.updateStatus()
				default:
				}
			}
			return
		}
	}
}

// answer routes a client's answer to the call waiting for it.
func (s *Session) answer(q queued, callID string, v any) {
	t := s.active
	if t == nil || !t.deliver(callID, v) {
		q.reply <- Reply{Err: &RejectError{Reason: RejectUnknownCall, Message: fmt.Sprintf("no pending request for call id %q", callID)}}
		return
	}
	q.reply <- Reply{Ack: Ack{SubmissionID: q.sub.ID, Outcome: AckDone, TurnID: t.id}}
}
