package policy

import "fmt"

// Decision names offered to the client in an approval request. They are
// the wire values of the command approval decisions.
const (
	DecisionAccept              = "accept"
	DecisionAcceptForSession    = "acceptForSession"
	DecisionAcceptWithAmendment = "acceptWithExecpolicyAmendment"
	DecisionDecline             = "decline"
	DecisionCancel              = "cancel"
)

// ExecContext is everything the command approval decision depends on.
type ExecContext struct {
	Policy  ApprovalPolicy
	Sandbox SandboxPolicy
	Argv    []string
	// Escalate is set when the model asked to run without the sandbox
	// (sandbox_permissions "require_escalated").
	Escalate bool
	// Approved holds what the user accepted earlier in the session; nil
	// for nothing.
	Approved *SessionApprovals
	// SandboxAvailable says whether this host can enforce Sandbox (see
	// Capabilities.Supports).
	SandboxAvailable bool
}

// ExecDecision says what to do with a command.
type ExecDecision struct {
	// Ask is set when the user must approve before the command runs.
	Ask bool
	// Sandboxed says how the command runs (after approval, if Ask).
	Sandboxed bool
	// Reject, when not empty, refuses the command: the text goes back to
	// the model and nothing runs.
	Reject string
	// Reason explains an approval request to the user, when there is more
	// to say than the command itself.
	Reason string
	// ProposedAmendment is the command prefix offered for "accept and
	// don't ask again for commands starting with this" (only with Ask).
	ProposedAmendment []string
	// AvailableDecisions lists the decisions the client may offer (only
	// with Ask), using the Decision* names.
	AvailableDecisions []string
	// Retry is set by DecideRetryAfterSandboxDenial when the command may
	// run again without the sandbox.
	Retry bool
}

// Text explaining refusals and approval requests. Our own words.
const (
	reasonNoSandbox = "This host cannot sandbox commands (no Landlock or bubblewrap), so the command would run without restrictions."
	reasonRetry     = "The command failed inside the sandbox. Run it again without the sandbox?"
)

func rejectNoSandbox(p ApprovalPolicy) string {
	return fmt.Sprintf("command refused: this host cannot sandbox commands and approval policy %q forbids asking to run without the sandbox", p)
}

func rejectEscalation(p ApprovalPolicy) string {
	return fmt.Sprintf("command refused: approval policy %q never grants escalated permissions; run the command without sandbox_permissions", p)
}

// DecideExec decides whether a command the model wants to run needs the
// user's approval and whether it runs in the sandbox.
//
// With a sandboxing mode (read-only, workspace-write) and a working
// sandbox:
//
//	policy      plain command                 escalation requested
//	untrusted   ask unless known-safe; sbx    ask unless known-safe; unsandboxed
//	on-request  run sandboxed                 ask; unsandboxed
//	on-failure  run sandboxed                 run sandboxed (denials ask later)
//	never       run sandboxed                 refused
//
// Known-safe commands never ask and run sandboxed. A command accepted for
// the session (exactly or by prefix) does not ask again. Without a
// working sandbox, nothing that should be sandboxed runs silently
// unsandboxed: every command that is not known-safe asks (untrusted,
// on-request, on-failure) or is refused (never).
//
// With danger-full-access or an external sandbox, commands run
// unsandboxed; only untrusted asks, for commands not known to be safe.
func DecideExec(c ExecContext) ExecDecision {
	safe := IsKnownSafe(c.Argv)
	approved := c.Approved.CommandApproved(c.Argv)
	ask := func(d ExecDecision) ExecDecision {
		d.Ask = true
		d.ProposedAmendment = ProposeAmendment(c.Argv)
		d.AvailableDecisions = availableDecisions(d.ProposedAmendment)
		return d
	}

	if !c.Sandbox.Sandboxed() {
		if c.Policy == ApprovalUntrusted && !safe && !approved {
			return ask(ExecDecision{})
		}
		return ExecDecision{}
	}

	if safe {
		// Read-only commands need no approval; inside the sandbox they
		// can do no less, and without it they do nothing a sandbox
		// would have stopped.
		return ExecDecision{Sandboxed: c.SandboxAvailable}
	}

	if !c.SandboxAvailable {
		switch {
		case approved:
			return ExecDecision{}
		case c.Policy == ApprovalNever:
			return ExecDecision{Reject: rejectNoSandbox(c.Policy)}
		}
		return ask(ExecDecision{Reason: reasonNoSandbox})
	}

	switch c.Policy {
	case ApprovalUntrusted:
		d := ExecDecision{Sandboxed: !c.Escalate}
		if approved {
			return d
		}
		return ask(d)
	case ApprovalOnRequest:
		if !c.Escalate {
			return ExecDecision{Sandboxed: true}
		}
		if approved {
			return ExecDecision{}
		}
		return ask(ExecDecision{})
	case ApprovalOnFailure:
		// Escalation is not granted up front: the command runs in the
		// sandbox, and a denial offers the rerun without it.
		return ExecDecision{Sandboxed: true}
	case ApprovalNever:
		if c.Escalate && !approved {
			return ExecDecision{Reject: rejectEscalation(c.Policy)}
		}
		return ExecDecision{Sandboxed: !c.Escalate}
	}
	// An unknown policy asks: the safe direction.
	return ask(ExecDecision{Sandboxed: true})
}

// DecideRetryAfterSandboxDenial decides, after a command run in the
// sandbox failed in a way that looks like a sandbox denial (see
// LikelySandboxDenial), whether to run it again without the sandbox.
// Untrusted, on-request and on-failure ask first (a command accepted for
// the session reruns without asking); never reports the failure as it
// is. Retry is false when the command did not run sandboxed.
func DecideRetryAfterSandboxDenial(c ExecContext) ExecDecision {
	if !c.Sandbox.Sandboxed() || !c.SandboxAvailable {
		return ExecDecision{}
	}
	switch c.Policy {
	case ApprovalNever:
		return ExecDecision{}
	case ApprovalUntrusted, ApprovalOnRequest, ApprovalOnFailure:
	default:
		return ExecDecision{}
	}
	if c.Approved.CommandApproved(c.Argv) {
		return ExecDecision{Retry: true}
	}
	amend := ProposeAmendment(c.Argv)
	return ExecDecision{
		Ask:                true,
		Retry:              true,
		Reason:             reasonRetry,
		ProposedAmendment:  amend,
		AvailableDecisions: availableDecisions(amend),
	}
}

// availableDecisions lists what the client may answer: with an amendment
// on offer, accept / accept with amendment / cancel (as the reference
// server offers them); otherwise accept / accept for session / cancel.
// "decline" is always understood even when not listed.
func availableDecisions(amend []string) []string {
	if len(amend) > 0 {
		return []string{DecisionAccept, DecisionAcceptWithAmendment, DecisionCancel}
	}
	return []string{DecisionAccept, DecisionAcceptForSession, DecisionCancel}
}

// ProposeAmendment returns the prefix to offer for "don't ask again": the
// words of the command when argv runs a single plain command (directly or
// as the only command of a shell script), otherwise argv itself.
func ProposeAmendment(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	cmds := commandWords(argv)
	if len(cmds) == 1 {
		return cmds[0]
	}
	return append([]string(nil), argv...)
}
