package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/tools/exec"
)

// execState is the session's command runtime: the process manager, and
// the items of commands still running in the background (by session id),
// completed when a later write_stdin sees them end.
type execState struct {
	mgr *exec.Manager
	mu  sync.Mutex
	bg  map[int]*bgCommand
}

type bgCommand struct {
	t     *turn
	item  CommandExecutionItem
	start time.Time
}

func newExecState(s *Session) *execState {
	st := &execState{bg: map[int]*bgCommand{}}
	st.mgr = exec.NewManager(exec.Options{OnEvict: func(id int) {
		// A background command ended to make room: its item ends too.
		st.mu.Lock()
		bg := st.bg[id]
		delete(st.bg, id)
		st.mu.Unlock()
		if bg != nil {
			out := "terminated: too many commands were running in the background"
			bg.item.AggregatedOutput = &out
			bg.item.Status = StatusFailed
			s.emit(bg.t.subID, bg.t.id, ItemCompleted{Item: bg.item})
		}
	}})
	return st
}

// execDecision is what the policy says for a command, plus whether the
// host can sandbox at all.
func (s *Session) execDecision(tc TurnContext, argv []string, escalate bool) policy.ExecDecision {
	return policy.DecideExec(policy.ExecContext{
		Policy:           tc.ApprovalPolicy,
		Sandbox:          tc.Sandbox,
		Argv:             argv,
		Escalate:         escalate,
		Approved:         s.approvals,
		SandboxAvailable: s.sandboxCaps().Supports(tc.Sandbox),
	})
}

// sandboxCaps returns what this host can do to confine commands.
func (s *Session) sandboxCaps() policy.Capabilities {
	if s.cfg.SandboxCapabilities != nil {
		return *s.cfg.SandboxCapabilities
	}
	return policy.Detect()
}

// askApproval sends an approval request for a command or patch and waits
// for the answer. ok is false when the turn ended first.
func (s *Session) askApproval(ctx context.Context, t *turn, callID string, request EventMsg, itemStarted func()) (Decision, bool) {
	ch := t.await(callID)
	if _, exec := request.(ExecApprovalRequest); exec {
		s.emit(t.subID, t.id, request)
		itemStarted()
	} else {
		itemStarted()
		s.emit(t.subID, t.id, request)
	}
	select {
	case v := <-ch:
		return v.(Decision), true
	case <-ctx.Done():
		t.forget(callID)
		return Decision{}, false
	}
}

// rememberDecision records what an accept-for-session or an amendment
// allows from now on.
func (s *Session) rememberDecision(d Decision, argv []string) {
	switch d.Kind {
	case DecisionAcceptForSession:
		s.approvals.ApproveCommand(argv)
	case DecisionAcceptWithAmendment:
		if len(d.ExecPolicyAmendment) > 0 {
			s.approvals.AddPrefix(d.ExecPolicyAmendment)
		} else {
			s.approvals.ApproveCommand(argv)
		}
	}
}

// declined ends a command or patch item the user did not let run, and
// returns what to tell the model. A cancel also interrupts the turn.
func (s *Session) declined(t *turn, c *toolCall, d Decision, complete func(ItemStatus)) string {
	switch d.Kind {
	case DecisionFailed:
		complete(StatusFailed)
		return fmt.Sprintf("%s was not run: the approval request failed: %s", c.name, d.Message)
	case DecisionCancel:
		complete(StatusDeclined)
		t.abort(AbortInterrupted)
		return fmt.Sprintf("%s was not run: the user cancelled it and stopped the turn", c.name)
	}
	complete(StatusDeclined)
	return fmt.Sprintf("%s was not run: the user declined it", c.name)
}

func accepted(d Decision) bool {
	switch d.Kind {
	case DecisionAccept, DecisionAcceptForSession, DecisionAcceptWithAmendment:
		return true
	}
	return false
}

// startCommand applies the approval policy to a command the model wants
// to run (item, not yet started): it refuses it, asks the user, or lets
// it run, and emits the item's start. While the user is asked, the item's
// source is "agent"; once it may run, runSource. ok is false when the
// command must not run: out then answers the call.
func (s *Session) startCommand(ctx context.Context, t *turn, c *toolCall, item *CommandExecutionItem, runSource CommandSource, justification string, escalate bool) (dec policy.ExecDecision, out model.ResponseItem, ok bool) {
	dec = s.execDecision(t.tc, item.Argv, escalate)
	if dec.Reject != "" {
		return dec, c.output(dec.Reject), false
	}
	if !dec.Ask {
		item.Source = runSource
		s.emit(t.subID, t.id, ItemStarted{Item: *item})
		return dec, model.ResponseItem{}, true
	}
	item.Source = SourceAgent
	reason := dec.Reason
	if reason == "" {
		reason = justification
	}
	d, answered := s.askApproval(ctx, t, c.callID, ExecApprovalRequest{
		CallID: c.callID, Command: item.Argv, Cwd: item.Cwd, Reason: reason, Actions: item.Actions,
		ProposedAmendment: dec.ProposedAmendment, AvailableDecisions: decisionKinds(dec.AvailableDecisions),
	}, func() { s.emit(t.subID, t.id, ItemStarted{Item: *item}) })
	if !answered {
		return dec, c.output(c.name + " was not run: the turn ended before the user answered"), false
	}
	if !accepted(d) {
		return dec, c.output(s.declined(t, c, d, func(st ItemStatus) {
			item.Status = st
			s.emit(t.subID, t.id, ItemCompleted{Item: *item})
		})), false
	}
	s.rememberDecision(d, item.Argv)
	item.Source = runSource
	return dec, model.ResponseItem{}, true
}

// resolveWorkdir is the directory a call asks for, relative to the
// turn's.
func resolveWorkdir(turnCwd, workdir string) string {
	if workdir == "" {
		return turnCwd
	}
	if !filepath.IsAbs(workdir) {
		return filepath.Join(turnCwd, workdir)
	}
	return workdir
}

// runExecCommand is the exec_command tool. A command that runs
// apply_patch is the apply_patch tool.
func (s *Session) runExecCommand(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	args, err := exec.ParseExecArgs([]byte(c.args))
	if err != nil {
		return c.output("exec_command: " + err.Error())
	}
	argv := args.Argv(exec.DetectShell())
	cwd := resolveWorkdir(t.tc.Cwd, args.Workdir)
	start := time.Now()
	if out, ok := s.interceptPatch(ctx, t, c, argv, cwd); ok {
		// As the reference: the patch's output inside exec_command's.
		return c.output(fmt.Sprintf("Wall time: %.4f seconds\nOutput:\n%s", time.Since(start).Seconds(), out))
	}
	item := CommandExecutionItem{
		ID: c.callID, Command: policy.ShellQuote(argv), Argv: argv, Cwd: cwd,
		Status: StatusInProgress, Actions: policy.ParseCommandActions(argv),
	}
	dec, out, ok := s.startCommand(ctx, t, c, &item, SourceUnifiedExecStart, args.Justification, args.Escalate())
	if !ok {
		return out
	}
	req := exec.Request{
		Argv: argv, Cwd: cwd, Env: exec.ModelEnv(args.TTY), TTY: args.TTY,
		YieldTime: args.YieldTime, MaxOutputTokens: args.MaxOutputTokens,
	}
	res, err := s.execute(ctx, t, c, &item, req, dec.Sandboxed)
	if err == nil && dec.Sandboxed && !res.Running && policy.LikelySandboxDenial(res.ExitCode, res.Aggregated) {
		res, err = s.retryUnsandboxed(ctx, t, c, &item, req, res, dec.Ask)
	}
	if err != nil && res == nil {
		s.failCommand(t, &item, err)
		return c.output("exec_command failed to start: " + err.Error())
	}
	if res.Running {
		item.ProcessID = fmt.Sprint(res.SessionID)
		s.exec.mu.Lock()
		s.exec.bg[res.SessionID] = &bgCommand{t: t, item: item, start: time.Now().Add(-res.Wall)}
		s.exec.mu.Unlock()
		return c.output(res.ModelText())
	}
	s.finishCommand(t, &item, res)
	return c.output(res.ModelText())
}

// failCommand ends the item of a command that could not start.
func (s *Session) failCommand(t *turn, item *CommandExecutionItem, err error) {
	out := err.Error()
	item.AggregatedOutput = &out
	item.Status = StatusFailed
	s.emit(t.subID, t.id, ItemCompleted{Item: *item})
}

// execute starts req (the command, its directory, variables and timing),
// sandboxed or not, streaming its output as deltas of the item.
func (s *Session) execute(ctx context.Context, t *turn, c *toolCall, item *CommandExecutionItem, req exec.Request, sandboxed bool) (*exec.Result, error) {
	req.Sandbox = nil
	if sandboxed {
		var err error
		if req.Sandbox, err = s.launcher(t.tc.Sandbox); err != nil {
			return nil, err
		}
	}
	s.emit(t.subID, t.id, ExecCommandBegin{CallID: c.callID, Command: req.Argv, Cwd: req.Cwd, Source: item.Source})
	req.BaseEnv = s.commandEnv()
	req.OnOutput = s.streamOutput(t, c.callID, &c.deltas)
	return s.exec.mgr.Start(ctx, req)
}

// Per call, the output a command streams as deltas is bounded, as the
// reference bounds it (10,000 deltas of at most 8 KiB): past either cap
// the rest reaches the item's aggregated output and the model, not the
// clients as deltas. A chunk that crosses the byte cap is cut there.
var (
	maxOutputDeltas     = 10_000
	maxOutputDeltaBytes = 10_000 * 8 << 10
)

// deltaBudget counts what one call streamed. Output callbacks of a call
// come one at a time (the manager serialises them, and a retry runs after
// the first run ended), so it needs no lock.
type deltaBudget struct{ n, bytes int }

// take returns the part of chunk that may still be streamed.
func (b *deltaBudget) take(chunk []byte) []byte {
	if b.n >= maxOutputDeltas || b.bytes >= maxOutputDeltaBytes {
		return nil
	}
	if room := maxOutputDeltaBytes - b.bytes; len(chunk) > room {
		chunk = chunk[:room]
	}
	b.n++
	b.bytes += len(chunk)
	return chunk
}

// streamOutput returns the output callback of command callID, emitting
// its output as deltas within budget.
func (s *Session) streamOutput(t *turn, callID string, budget *deltaBudget) func(string, []byte) {
	return func(stream string, chunk []byte) {
		if chunk = budget.take(chunk); len(chunk) > 0 {
			s.emit(t.subID, t.id, ExecCommandOutputDelta{CallID: callID, Stream: OutputStream(stream), Chunk: chunk})
		}
	}
}

// launcher returns the sandbox launcher for a policy.
func (s *Session) launcher(p policy.SandboxPolicy) (*policy.Launcher, error) {
	l, err := policy.NewLauncher(p)
	if err != nil {
		return nil, err
	}
	if s.cfg.SandboxHelper != "" && l.Method == policy.MethodLandlock {
		l.Helper = s.cfg.SandboxHelper
	}
	return l, nil
}

// retryUnsandboxed reruns without the sandbox a command the sandbox seems
// to have stopped, when the policy allows it. It asks first when the
// policy says so, unless the user approved this very command already
// (approved): one approval per command, as the reference asks.
func (s *Session) retryUnsandboxed(ctx context.Context, t *turn, c *toolCall, item *CommandExecutionItem, req exec.Request, first *exec.Result, approved bool) (*exec.Result, error) {
	argv := req.Argv
	dec := policy.DecideRetryAfterSandboxDenial(policy.ExecContext{
		Policy: t.tc.ApprovalPolicy, Sandbox: t.tc.Sandbox, Argv: argv, Approved: s.approvals,
		SandboxAvailable: s.sandboxCaps().Supports(t.tc.Sandbox),
	})
	if !dec.Retry {
		return first, nil
	}
	if dec.Ask && !approved {
		ch := t.await(c.callID)
		s.emit(t.subID, t.id, ExecApprovalRequest{
			CallID: c.callID, Command: argv, Cwd: req.Cwd, Reason: dec.Reason, Actions: item.Actions,
			ProposedAmendment: dec.ProposedAmendment, AvailableDecisions: decisionKinds(dec.AvailableDecisions),
		})
		var d Decision
		select {
		case v := <-ch:
			d = v.(Decision)
		case <-ctx.Done():
			t.forget(c.callID)
			return first, nil
		}
		if !accepted(d) {
			return first, nil
		}
		s.rememberDecision(d, argv)
	}
	return s.execute(ctx, t, c, item, req, false)
}

// finishCommand completes a command item with its result.
func (s *Session) finishCommand(t *turn, item *CommandExecutionItem, res *exec.Result) {
	out := res.Aggregated
	code := res.ExitCode
	ms := res.Duration.Milliseconds()
	item.AggregatedOutput, item.ExitCode, item.DurationMs = &out, &code, &ms
	item.Status = StatusCompleted
	if code != 0 {
		item.Status = StatusFailed
	}
	s.emit(t.subID, t.id, ExecCommandEnd{CallID: item.ID, ExitCode: code, AggregatedOutput: out, Duration: res.Duration, Status: item.Status})
	s.emit(t.subID, t.id, ItemCompleted{Item: *item})
}

// runWriteStdin is the write_stdin tool: input to a command still
// running, and the output since.
func (s *Session) runWriteStdin(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	args, err := exec.ParseWriteStdinArgs([]byte(c.args))
	if err != nil {
		return c.output("write_stdin: " + err.Error())
	}
	res, err := s.exec.mgr.WriteStdin(ctx, args.SessionID, args.Chars, args.YieldTime)
	if res == nil {
		if errors.Is(err, exec.ErrUnknownSession) {
			return c.output(fmt.Sprintf("write_stdin failed: no running command with session ID %d", args.SessionID))
		}
		return c.output("write_stdin failed: " + err.Error())
	}
	res.MaxOutputTokens = args.MaxOutputTokens
	// The client sees what was typed into the command, in this turn,
	// before the command's item ends: a write, or a poll of a command
	// still running (as the reference does). It is emitted under the lock
	// that whoever ends the item takes first (here, a parallel
	// write_stdin, or an eviction), so that it never follows the end.
	s.exec.mu.Lock()
	bg := s.exec.bg[args.SessionID]
	if bg != nil && (args.Chars != "" || res.Running) {
		s.emit(t.subID, t.id, TerminalInteraction{CallID: bg.item.ID, ProcessID: strconv.Itoa(args.SessionID), Stdin: args.Chars})
	}
	if !res.Running {
		delete(s.exec.bg, args.SessionID)
	}
	s.exec.mu.Unlock()
	if !res.Running {
		if bg != nil {
			res.Duration = time.Since(bg.start)
			s.finishCommand(bg.t, &bg.item, res)
		}
	}
	return c.output(res.ModelText())
}

func decisionKinds(names []string) []DecisionKind {
	out := make([]DecisionKind, 0, len(names))
	for _, n := range names {
		out = append(out, DecisionKind(n))
	}
	return out
}

// commandEnv is the environment a command of this thread starts from:
// the daemon's, shaped by shell_environment_policy.
func (s *Session) commandEnv() []string {
	return s.cfg.ShellEnv.Environ(os.Environ(), s.cfg.ThreadID)
}
