package core

import (
	"encoding/json"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// Event is one fact the core reports. Events of a session are totally
// ordered by Seq.
type Event struct {
	// Seq numbers the session's events from 1, with no gaps (the event
	// stream may merge deltas for a reader that is behind, leaving gaps).
	Seq uint64
	// SubmissionID is the submission that caused the event, "" if none.
	SubmissionID string
	// TurnID is the turn the event belongs to, "" outside turns.
	TurnID string
	// Time is when the core emitted the event.
	Time time.Time
	Msg  EventMsg
}

// EventMsg is the payload of an event. The set of variants is closed; each
// is a fact, never a command. AllEventMsgs lists them.
type EventMsg interface{ eventMsg() }

// SessionConfigured is the first event of a session.
type SessionConfigured struct {
	ThreadID       string
	Model          string
	Provider       string
	Cwd            string
	ApprovalPolicy policy.ApprovalPolicy
	Sandbox        policy.SandboxPolicy
	Effort         string
	HistoryLen     int
}

// TurnKind says what a turn does.
type TurnKind string

const (
	TurnRegular   TurnKind = "regular"
	TurnCompact   TurnKind = "compact"
	TurnUserShell TurnKind = "userShell"
	// TurnReview is a code review (OpReview): its first items enter
	// review mode, its last ones leave it with the review.
	TurnReview TurnKind = "review"
)

// TurnStarted: a turn began, with the settings it runs with.
type TurnStarted struct {
	Kind               TurnKind
	StartedAt          time.Time
	ModelContextWindow int64
	Context            TurnContext
}

// TurnComplete: a turn ended on its own, completed or failed (Error set).
type TurnComplete struct {
	LastAgentMessage string
	Error            *TurnError
	CompletedAt      time.Time
	Duration         time.Duration
}

// AbortReason says why a turn was aborted.
type AbortReason string

const (
	AbortInterrupted AbortReason = "interrupted"
	AbortShutdown    AbortReason = "shutdown"
)

// TurnAborted: a turn was stopped before it ended on its own.
type TurnAborted struct {
	Reason      AbortReason
	CompletedAt time.Time
	Duration    time.Duration
}

// ItemStarted: an item began. Item holds its initial state.
type ItemStarted struct {
	Item TurnItem
}

// ItemCompleted: an item reached its final state.
type ItemCompleted struct {
	Item TurnItem
}

// AgentMessageDelta: text streamed for agent message ItemID.
type AgentMessageDelta struct {
	ItemID string
	Delta  string
}

// PlanDelta: text streamed for proposed plan item ItemID (plan mode).
type PlanDelta struct {
	ItemID string
	Delta  string
}

// AgentMessage: the whole text of an agent message, emitted once it is
// complete, for consumers that want whole messages only (first generation).
type AgentMessage struct {
	ItemID  string
	Message string
}

// ReasoningSummaryPartAdded: summary part SummaryIndex of ItemID began.
type ReasoningSummaryPartAdded struct {
	ItemID       string
	SummaryIndex int
}

// ReasoningSummaryDelta: summary text for part SummaryIndex of ItemID.
type ReasoningSummaryDelta struct {
	ItemID       string
	SummaryIndex int
	Delta        string
}

// ReasoningRawDelta: raw reasoning text for part ContentIndex of ItemID.
type ReasoningRawDelta struct {
	ItemID       string
	ContentIndex int
	Delta        string
}

// ExecCommandBegin: a command started running (first generation; the
// CommandExecutionItem carries the same facts).
type ExecCommandBegin struct {
	CallID  string
	Command []string
	Cwd     string
	Source  CommandSource
}

// OutputStream names stdout or stderr.
type OutputStream string

const (
	Stdout OutputStream = "stdout"
	Stderr OutputStream = "stderr"
)

// ExecCommandOutputDelta: output of a running command, as it arrives.
type ExecCommandOutputDelta struct {
	CallID string
	Stream OutputStream
	Chunk  []byte
}

// TerminalInteraction: input was written to a command still running in
// the background (write_stdin): CallID is the command's item, ProcessID
// its session id, Stdin what was written.
type TerminalInteraction struct {
	CallID    string
	ProcessID string
	Stdin     string
}

// ExecCommandEnd: a command ended (first generation).
type ExecCommandEnd struct {
	CallID           string
	ExitCode         int
	AggregatedOutput string
	Duration         time.Duration
	Status           ItemStatus
}

// PatchApplyBegin: a patch is being applied (first generation).
type PatchApplyBegin struct {
	CallID       string
	AutoApproved bool
	Changes      []FileChange
}

// PatchApplyEnd: a patch was applied or failed (first generation).
type PatchApplyEnd struct {
	CallID  string
	Success bool
	Stdout  string
	Stderr  string
	Changes []FileChange
}

// PatchPreview: a patch the model is still streaming, parsed so far. Paths
// are as the model wrote them. Throttled per call.
type PatchPreview struct {
	CallID  string
	Changes []FileChange
}

// ExecApprovalRequest: the turn waits for OpExecApproval on CallID.
type ExecApprovalRequest struct {
	CallID             string
	Command            []string
	Cwd                string
	Reason             string
	Actions            []policy.CommandAction
	ProposedAmendment  []string
	AvailableDecisions []DecisionKind
}

// PatchApprovalRequest: the turn waits for OpPatchApproval on CallID. The
// FileChangeItem has already been started.
type PatchApprovalRequest struct {
	CallID    string
	Changes   []FileChange
	Reason    string
	GrantRoot string
}

// Question is one question of a user-input request.
type Question struct {
	ID       string
	Header   string
	Question string
	IsOther  bool
	IsSecret bool
	Options  []QuestionOption
}

// QuestionOption is one offered answer.
type QuestionOption struct {
	Label       string
	Description string
}

// UserInputRequest: the turn waits for OpUserInputAnswer on CallID.
type UserInputRequest struct {
	CallID    string
	Questions []Question
}

// DynamicToolCallRequest: the turn waits for OpDynamicToolResponse on
// CallID. The DynamicToolCallItem has already been started.
type DynamicToolCallRequest struct {
	CallID    string
	Tool      string
	Namespace string
	Arguments json.RawMessage
}

// McpToolCallProgress: the MCP server reported progress of the call of
// McpToolCallItem ItemID.
type McpToolCallProgress struct {
	ItemID  string
	Message string
}

// McpToolApprovalRequest: the turn waits for OpMcpElicitationAnswer on
// CallID before it runs an MCP tool that is not marked read-only. The
// McpToolCallItem has already been started.
type McpToolApprovalRequest struct {
	CallID      string
	Server      string
	Tool        string
	Description string
	Arguments   json.RawMessage
}

// McpElicitationRequest: an MCP server asks the user for input (a form)
// while one of its tools runs for the turn; the server waits for
// OpMcpElicitationAnswer on CallID, an id of the request's own.
type McpElicitationRequest struct {
	CallID          string
	Server          string
	Message         string
	RequestedSchema json.RawMessage
	Meta            json.RawMessage
}

// McpElicitationEnded: the server stopped waiting for the answer to
// McpElicitationRequest CallID (its call ended first); the request is
// withdrawn.
type McpElicitationEnded struct {
	CallID string
}

// PlanStepStatus is the status of a plan step.
type PlanStepStatus string

const (
	PlanPending    PlanStepStatus = "pending"
	PlanInProgress PlanStepStatus = "in_progress"
	PlanCompleted  PlanStepStatus = "completed"
)

// PlanStep is one step of the agent's plan.
type PlanStep struct {
	Step   string
	Status PlanStepStatus
}

// PlanUpdate: the model updated its plan.
type PlanUpdate struct {
	Explanation string
	Plan        []PlanStep
}

// TurnDiff: the aggregated diff of everything the turn changed so far.
type TurnDiff struct {
	UnifiedDiff string
}

// TokenUsageInfo is the token accounting of a thread: the thread's total,
// the running turn's total, and the last response's.
type TokenUsageInfo struct {
	Total              model.TokenUsage
	Turn               model.TokenUsage
	Last               model.TokenUsage
	ModelContextWindow int64 // 0 when unknown
}

// TokenCount: usage after a model response.
type TokenCount struct {
	Info TokenUsageInfo
}

// RateLimits: the rate limits the provider reported with a model
// response, emitted when the response's stream ends, whatever way it ends
// (after its TokenCount when it completed). A request that got no stream
// (an HTTP error) has none.
type RateLimits struct {
	Snapshot model.RateLimitSnapshot
}

// ErrorKind is a machine-readable error class. The names follow the
// reference's codexErrorInfo values.
type ErrorKind string

const (
	KindContextWindowExceeded  ErrorKind = "contextWindowExceeded"
	KindUsageLimitExceeded     ErrorKind = "usageLimitExceeded"
	KindServerOverloaded       ErrorKind = "serverOverloaded"
	KindModelNotFound          ErrorKind = "modelNotFound"
	KindInternalServerError    ErrorKind = "internalServerError"
	KindUnauthorized           ErrorKind = "unauthorized"
	KindBadRequest             ErrorKind = "badRequest"
	KindSandboxError           ErrorKind = "sandboxError"
	KindHTTPConnectionFailed   ErrorKind = "httpConnectionFailed"
	KindStreamConnectionFailed ErrorKind = "responseStreamConnectionFailed"
	KindStreamDisconnected     ErrorKind = "responseStreamDisconnected"
	KindTooManyFailedAttempts  ErrorKind = "responseTooManyFailedAttempts"
	KindOther                  ErrorKind = "other"
)

// TurnError is why a turn failed.
type TurnError struct {
	Message    string
	Kind       ErrorKind
	HTTPStatus int // 0 when none
	Details    string
}

// StreamError: a model stream failed and the core retries it.
type StreamError struct {
	Message    string // "Reconnecting... n/max"
	Attempt    int
	Max        int
	Kind       ErrorKind
	HTTPStatus int
	Details    string // the cause
}

// Warning: something the user should know; the turn goes on.
type Warning struct {
	Message string
}

// Error: a failure. For a turn failure it precedes TurnComplete.
type Error struct {
	Err TurnError
}

// ModelReroute: the model that served the request differs from the one
// asked for. Reported once per turn.
type ModelReroute struct {
	From, To, Reason string
}

// RawResponseItem: an item was recorded in history (after it was appended
// and handed to the sink).
type RawResponseItem struct {
	Item model.ResponseItem
}

// RawResponseCompleted: a model response completed.
type RawResponseCompleted struct {
	ResponseID string
	Usage      model.TokenUsage
	RawUsage   json.RawMessage
}

// ContextCompacted: the history was replaced. Replacement is the new
// history, so that a sink can rebuild it without the dropped items.
type ContextCompacted struct {
	Replacement []model.ResponseItem
}

// ShutdownComplete is the last event of a session.
type ShutdownComplete struct{}

func (SessionConfigured) eventMsg()         {}
func (TurnStarted) eventMsg()               {}
func (TurnComplete) eventMsg()              {}
func (TurnAborted) eventMsg()               {}
func (ItemStarted) eventMsg()               {}
func (ItemCompleted) eventMsg()             {}
func (AgentMessageDelta) eventMsg()         {}
func (PlanDelta) eventMsg()                 {}
func (AgentMessage) eventMsg()              {}
func (ReasoningSummaryPartAdded) eventMsg() {}
func (ReasoningSummaryDelta) eventMsg()     {}
func (ReasoningRawDelta) eventMsg()         {}
func (ExecCommandBegin) eventMsg()          {}
func (ExecCommandOutputDelta) eventMsg()    {}
func (ExecCommandEnd) eventMsg()            {}
func (TerminalInteraction) eventMsg()       {}
func (PatchApplyBegin) eventMsg()           {}
func (PatchApplyEnd) eventMsg()             {}
func (PatchPreview) eventMsg()              {}
func (ExecApprovalRequest) eventMsg()       {}
func (PatchApprovalRequest) eventMsg()      {}
func (UserInputRequest) eventMsg()          {}
func (DynamicToolCallRequest) eventMsg()    {}
func (McpToolCallProgress) eventMsg()       {}
func (McpToolApprovalRequest) eventMsg()    {}
func (McpElicitationRequest) eventMsg()     {}
func (McpElicitationEnded) eventMsg()       {}
func (PlanUpdate) eventMsg()                {}
func (TurnDiff) eventMsg()                  {}
func (TokenCount) eventMsg()                {}
func (RateLimits) eventMsg()                {}
func (StreamError) eventMsg()               {}
func (Warning) eventMsg()                   {}
func (Error) eventMsg()                     {}
func (ModelReroute) eventMsg()              {}
func (RawResponseItem) eventMsg()           {}
func (RawResponseCompleted) eventMsg()      {}
func (ContextCompacted) eventMsg()          {}
func (ShutdownComplete) eventMsg()          {}

// AllEventMsgs returns a zero value of every EventMsg variant. Consumers
// that must decide what to do with each variant (the projection) test
// themselves against it; a test in this package checks it is complete.
func AllEventMsgs() []EventMsg {
	return []EventMsg{
		SessionConfigured{}, TurnStarted{}, TurnComplete{}, TurnAborted{},
		ItemStarted{}, ItemCompleted{}, AgentMessageDelta{}, PlanDelta{}, AgentMessage{},
		ReasoningSummaryPartAdded{}, ReasoningSummaryDelta{}, ReasoningRawDelta{},
		ExecCommandBegin{}, ExecCommandOutputDelta{}, ExecCommandEnd{}, TerminalInteraction{},
		PatchApplyBegin{}, PatchApplyEnd{}, PatchPreview{},
		ExecApprovalRequest{}, PatchApprovalRequest{}, UserInputRequest{}, DynamicToolCallRequest{},
		McpToolCallProgress{}, McpToolApprovalRequest{}, McpElicitationRequest{}, McpElicitationEnded{},
		PlanUpdate{}, TurnDiff{}, TokenCount{}, RateLimits{}, StreamError{}, Warning{}, Error{},
		ModelReroute{}, RawResponseItem{}, RawResponseCompleted{}, ContextCompacted{}, ShutdownComplete{},
	}
}
