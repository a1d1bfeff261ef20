package protocol

// Params of server notifications. The envelope (method, params, emittedAtMs)
// is the transport's business.

// ErrorNotification reports a turn error; WillRetry says whether the turn
// goes on.
type ErrorNotification struct {
	Error     TurnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
	ThreadID  string    `json:"threadId"`
	TurnID    string    `json:"turnId"`
}

// ThreadStartedNotification announces a new thread (turns empty).
type ThreadStartedNotification struct {
	Thread Thread `json:"thread"`
}

// ThreadStatusChangedNotification reports a thread's new status.
type ThreadStatusChangedNotification struct {
	ThreadID string       `json:"threadId"`
	Status   ThreadStatus `json:"status"`
}

// ThreadIDNotification carries only a thread id (thread/archived,
// thread/unarchived, thread/deleted, thread/closed).
type ThreadIDNotification struct {
	ThreadID string `json:"threadId"`
}

// ThreadNameUpdatedNotification reports a thread's new name.
type ThreadNameUpdatedNotification struct {
	ThreadID   string  `json:"threadId"`
	ThreadName *string `json:"threadName"`
}

// ThreadTokenUsageUpdatedNotification reports token usage after a model response.
type ThreadTokenUsageUpdatedNotification struct {
	ThreadID   string           `json:"threadId"`
	TurnID     string           `json:"turnId"`
	TokenUsage ThreadTokenUsage `json:"tokenUsage"`
}

// ThreadTokenUsage is a thread's total and last token usage.
type ThreadTokenUsage struct {
	Total              TokenUsageBreakdown `json:"total"`
	Last               TokenUsageBreakdown `json:"last"`
	ModelContextWindow *int64              `json:"modelContextWindow"`
}

// TokenUsageBreakdown counts tokens by kind.
type TokenUsageBreakdown struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens" wire:"optional"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

// TurnNotification carries a turn (turn/started, turn/completed).
type TurnNotification struct {
	ThreadID string `json:"threadId"`
	Turn     Turn   `json:"turn"`
}

// TurnDiffUpdatedNotification carries the turn's aggregated diff.
type TurnDiffUpdatedNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Diff     string `json:"diff"`
}

// TurnPlanUpdatedNotification carries the agent's plan.
type TurnPlanUpdatedNotification struct {
	ThreadID    string             `json:"threadId"`
	TurnID      string             `json:"turnId"`
	Explanation *string            `json:"explanation"`
	Plan        List[TurnPlanStep] `json:"plan"`
}

// TurnPlanStep is one step of a plan.
type TurnPlanStep struct {
	Step   string             `json:"step"`
	Status TurnPlanStepStatus `json:"status"`
}

// TurnPlanStepStatus is the state of a plan step.
type TurnPlanStepStatus string

// Plan step states.
const (
	StepPending    TurnPlanStepStatus = "pending"
	StepInProgress TurnPlanStepStatus = "inProgress"
	StepCompleted  TurnPlanStepStatus = "completed"
)

func (TurnPlanStepStatus) wireValues() []string {
	return values(StepPending, StepInProgress, StepCompleted)
}

// ItemStartedNotification announces an item.
type ItemStartedNotification struct {
	Item        ThreadItem `json:"item"`
	ThreadID    string     `json:"threadId"`
	TurnID      string     `json:"turnId"`
	StartedAtMs int64      `json:"startedAtMs"`
}

// ItemCompletedNotification carries a finished item.
type ItemCompletedNotification struct {
	Item              ThreadItem `json:"item"`
	ThreadID          string     `json:"threadId"`
	TurnID            string     `json:"turnId"`
	ContentTokenCount *uint64    `json:"contentTokenCount"`
	CompletedAtMs     int64      `json:"completedAtMs"`
}

// ItemDeltaNotification is a text delta for an item (item/agentMessage/delta,
// item/plan/delta, item/commandExecution/outputDelta (plain text),
// item/fileChange/outputDelta).
type ItemDeltaNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
}

// TerminalInteractionNotification is input written to a command running
// in the background (item/commandExecution/terminalInteraction).
type TerminalInteractionNotification struct {
	ThreadID  string `json:"threadId"`
	TurnID    string `json:"turnId"`
	ItemID    string `json:"itemId"`
	ProcessID string `json:"processId"`
	Stdin     string `json:"stdin"`
}

// ReasoningSummaryPartAddedNotification starts a reasoning summary part.
type ReasoningSummaryPartAddedNotification struct {
	ThreadID     string `json:"threadId"`
	TurnID       string `json:"turnId"`
	ItemID       string `json:"itemId"`
	SummaryIndex int64  `json:"summaryIndex"`
}

// ReasoningSummaryTextDeltaNotification is text of a reasoning summary part.
type ReasoningSummaryTextDeltaNotification struct {
	ThreadID     string `json:"threadId"`
	TurnID       string `json:"turnId"`
	ItemID       string `json:"itemId"`
	Delta        string `json:"delta"`
	SummaryIndex int64  `json:"summaryIndex"`
}

// ReasoningTextDeltaNotification is raw reasoning text.
type ReasoningTextDeltaNotification struct {
	ThreadID     string `json:"threadId"`
	TurnID       string `json:"turnId"`
	ItemID       string `json:"itemId"`
	Delta        string `json:"delta"`
	ContentIndex int64  `json:"contentIndex"`
}

// FileChangePatchUpdatedNotification streams a patch being written (paths relative).
type FileChangePatchUpdatedNotification struct {
	ThreadID string                 `json:"threadId"`
	TurnID   string                 `json:"turnId"`
	ItemID   string                 `json:"itemId"`
	Changes  List[FileUpdateChange] `json:"changes"`
}

// ServerRequestResolvedNotification says a server request is settled.
type ServerRequestResolvedNotification struct {
	ThreadID  string    `json:"threadId"`
	RequestID RequestID `json:"requestId"`
}

// ContextCompactedNotification is the deprecated thread/compacted.
type ContextCompactedNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

// ModelReroutedNotification says the backend switched models.
type ModelReroutedNotification struct {
	ThreadID  string             `json:"threadId"`
	TurnID    string             `json:"turnId"`
	FromModel string             `json:"fromModel"`
	ToModel   string             `json:"toModel"`
	Reason    ModelRerouteReason `json:"reason"`
}

// ModelRerouteReason is why a model was switched.
type ModelRerouteReason string

// RerouteHighRiskCyberActivity is the only reroute reason.
const RerouteHighRiskCyberActivity ModelRerouteReason = "highRiskCyberActivity"

func (ModelRerouteReason) wireValues() []string { return values(RerouteHighRiskCyberActivity) }

// WarningNotification is a warning, for a thread or in general.
type WarningNotification struct {
	ThreadID *string `json:"threadId"`
	Message  string  `json:"message"`
}

// ConfigWarningNotification is a configuration problem.
type ConfigWarningNotification struct {
	Summary string     `json:"summary"`
	Details *string    `json:"details"`
	Path    *string    `json:"path,omitempty"`
	Range   *TextRange `json:"range,omitempty"`
}

// DeprecationNoticeNotification says something the client did is deprecated.
type DeprecationNoticeNotification struct {
	Summary string  `json:"summary"`
	Details *string `json:"details"`
}

// CommandExecOutputDeltaNotification is output of a command/exec process (base64).
type CommandExecOutputDeltaNotification struct {
	ProcessID   string                  `json:"processId"`
	Stream      CommandExecOutputStream `json:"stream"`
	DeltaBase64 string                  `json:"deltaBase64"`
	CapReached  bool                    `json:"capReached"`
}

// CommandExecOutputStream names an output stream.
type CommandExecOutputStream string

// Output streams.
const (
	StreamStdout CommandExecOutputStream = "stdout"
	StreamStderr CommandExecOutputStream = "stderr"
)

func (CommandExecOutputStream) wireValues() []string { return values(StreamStdout, StreamStderr) }

// FsChangedNotification reports changes under a watched path.
type FsChangedNotification struct {
	WatchID      string        `json:"watchId"`
	ChangedPaths List[AbsPath] `json:"changedPaths"`
}

// RawResponseItemCompletedNotification carries a raw Responses API item
// (opt-in; not in the reference schema).
type RawResponseItemCompletedNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Item     any    `json:"item"`
}

// RawResponseCompletedNotification reports a finished model response
// (opt-in; not in the reference schema).
type RawResponseCompletedNotification struct {
	ThreadID      string              `json:"threadId"`
	TurnID        string              `json:"turnId"`
	ResponseID    string              `json:"responseId"`
	Usage         TokenUsageBreakdown `json:"usage"`
	UsageMetadata RawUsageMetadata    `json:"usageMetadata"`
}

// RawUsageMetadata is the provider's own usage report.
type RawUsageMetadata struct {
	Amount   any `json:"amount"`
	Metadata any `json:"metadata"`
}

// ThreadSettingsUpdatedNotification reports new thread settings (sent only
// to experimental connections).
type ThreadSettingsUpdatedNotification struct {
	ThreadID       string         `json:"threadId"`
	ThreadSettings ThreadSettings `json:"threadSettings"`
}

// ThreadReadStateChangedNotification reports a new read state (sent only to
// experimental connections).
type ThreadReadStateChangedNotification struct {
	ThreadID  string          `json:"threadId"`
	ReadState ThreadReadState `json:"readState"`
}
