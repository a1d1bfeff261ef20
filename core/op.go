package core

import (
	"encoding/json"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/review"
)

// Submission is one request to the core. Its ID is a UUIDv7; a turn's id is
// the id of the submission that started it.
type Submission struct {
	ID    string
	Op    Op
	Trace *TraceContext
}

// TraceContext is an optional W3C trace context carried with a submission.
type TraceContext struct {
	Traceparent string
	Tracestate  string
}

// Op is something a front end asks the core to do. The set is closed.
type Op interface{ op() }

// TurnOverrides change the turn context. Nil fields leave the setting as it
// is. OutputSchema applies to one turn only; the others persist for later
// turns.
type TurnOverrides struct {
	Cwd            *string
	Model          *string
	Effort         *string
	Summary        *string
	ApprovalPolicy *policy.ApprovalPolicy
	Sandbox        *policy.SandboxPolicy
	Mode           *CollaborationMode
	OutputSchema   json.RawMessage
}

// OpUserInput starts a turn with the input, or, when a turn is running,
// steers the input into it (as the reference's turn/start does).
type OpUserInput struct {
	Input           []UserInput
	Overrides       TurnOverrides
	ClientMessageID string
	// ClientMetadata and ClientMetadataPatch are the client's metadata
	// for the turn's model requests (see ClientMetadata).
	ClientMetadata      map[string]string
	ClientMetadataPatch map[string]string
}

// OpSteer adds input to the running turn. ExpectedTurnID, when set, must be
// the running turn's id.
type OpSteer struct {
	Input           []UserInput
	ExpectedTurnID  string
	ClientMessageID string
	// ClientMetadata and ClientMetadataPatch update the running turn's
	// metadata for its next model requests (see ClientMetadata).
	ClientMetadata      map[string]string
	ClientMetadataPatch map[string]string
}

// OpInterrupt stops the running turn. TurnID, when set, must match it.
type OpInterrupt struct {
	TurnID string
}

// DecisionKind is the user's answer to an approval request.
type DecisionKind string

const (
	DecisionAccept           DecisionKind = "accept"
	DecisionAcceptForSession DecisionKind = "acceptForSession"
	// DecisionAcceptWithAmendment accepts and allows the command prefix
	// in ExecPolicyAmendment for the rest of the thread.
	DecisionAcceptWithAmendment DecisionKind = "acceptWithExecpolicyAmendment"
	// DecisionDecline declines the item; the model is told and the turn
	// goes on.
	DecisionDecline DecisionKind = "decline"
	// DecisionCancel declines the item and interrupts the turn.
	DecisionCancel DecisionKind = "cancel"
	// DecisionFailed records that the client answered with an error: the
	// item fails and the turn goes on.
	DecisionFailed DecisionKind = "failed"
)

// Decision is an answer to an approval request.
type Decision struct {
	Kind                DecisionKind
	ExecPolicyAmendment []string
	// Message explains a DecisionFailed.
	Message string
}

// OpExecApproval answers an ExecApprovalRequest.
type OpExecApproval struct {
	CallID   string
	Decision Decision
}

// OpPatchApproval answers a PatchApprovalRequest.
type OpPatchApproval struct {
	CallID   string
	Decision Decision
}

// OpUserInputAnswer answers a UserInputRequest: question id → answers.
// Err, when set, records that the client failed the request.
type OpUserInputAnswer struct {
	CallID  string
	Answers map[string][]string
	Err     string
}

// OpDynamicToolResponse answers a DynamicToolCallRequest. Err, when set,
// records that the client failed the request.
type OpDynamicToolResponse struct {
	CallID       string
	ContentItems []DynamicContentItem
	Success      bool
	Err          string
}

// OpMcpElicitationAnswer answers a McpToolApprovalRequest or a
// McpElicitationRequest: accept (with Content, for a form), decline or
// cancel. Meta is the client's _meta ({"persist": "session"} remembers an
// approval for the session). Err, when set, records that the client
// failed the request (a decline).
type OpMcpElicitationAnswer struct {
	CallID  string
	Action  string
	Content json.RawMessage
	Meta    json.RawMessage
	Err     string
}

// OpOverrideTurnContext changes the settings of later turns without
// starting one.
type OpOverrideTurnContext struct {
	Overrides TurnOverrides
}

// OpCompact summarises the history into a compaction item, as a turn.
type OpCompact struct{}

// OpReview runs a code review as a turn of its own (TurnReview). The
// reviewer is a sub-agent: it works in a conversation of its own (its own
// instructions and history, its requests marked as a review sub-agent's),
// and the thread's conversation keeps only the review. Request is
// resolved by the caller (review.Resolve runs git, which the session's
// loop must not wait for). Model, when set, is the reviewer's model
// (review_model); else the thread's. A turn that is running is
// interrupted first.
type OpReview struct {
	Request review.Request
	Model   string
	// Overrides change the thread's settings from this turn on, as
	// OpUserInput's do (the server narrows a client's turn with them).
	Overrides TurnOverrides
}

// OpShellCommand runs the user's own command, unsandboxed, as a standalone
// turn, or as an item of the running turn.
type OpShellCommand struct {
	Command string
	Timeout time.Duration
}

// OpInjectItems appends raw history items for the next model request.
type OpInjectItems struct {
	Items []model.ResponseItem
}

// OpRollback drops the last NumTurns turns from the model context. When
// Persist is set, the session calls it once it has checked that no turn
// runs: it records the rollback durably and returns the history after it
// (rebuilt from the rollout, which knows the turns of a resumed thread);
// otherwise the core drops the turns it recorded itself.
type OpRollback struct {
	NumTurns int
	Persist  func() ([]model.ResponseItem, error)
}

// OpShutdown ends the session: the running turn is aborted, the sink is
// flushed, and ShutdownComplete is the last event.
type OpShutdown struct{}

func (OpUserInput) op()            {}
func (OpSteer) op()                {}
func (OpInterrupt) op()            {}
func (OpExecApproval) op()         {}
func (OpPatchApproval) op()        {}
func (OpUserInputAnswer) op()      {}
func (OpDynamicToolResponse) op()  {}
func (OpMcpElicitationAnswer) op() {}
func (OpOverrideTurnContext) op()  {}
func (OpCompact) op()              {}
func (OpReview) op()               {}
func (OpShellCommand) op()         {}
func (OpInjectItems) op()          {}
func (OpRollback) op()             {}
func (OpShutdown) op()             {}

// AckOutcome says what became of a submission.
type AckOutcome uint8

const (
	// AckStarted: a new turn started; Ack.TurnID is its id.
	AckStarted AckOutcome = iota + 1
	// AckSteered: the input went into the running turn Ack.TurnID.
	AckSteered
	// AckDone: the op was carried out (interrupt, approval, override…).
	AckDone
)

// Ack is the immediate answer to a submission. A rejected submission is an
// error instead (see RejectError).
type Ack struct {
	SubmissionID string
	Outcome      AckOutcome
	TurnID       string
}

// RejectReason is a machine-readable reason a submission was refused.
type RejectReason uint8

const (
	RejectNoActiveTurn RejectReason = iota + 1
	RejectTurnMismatch
	RejectNotSteerable
	RejectUnknownCall
	RejectInvalid
	RejectShutdown
)

// RejectError is why the core refused a submission. Its message is the
// text clients see ("no active turn to steer", …).
type RejectError struct {
	Reason  RejectReason
	Message string
	// TurnKind is the kind of the running turn that refused input
	// (RejectNotSteerable).
	TurnKind TurnKind
}

func (e *RejectError) Error() string { return e.Message }
