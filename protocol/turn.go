package protocol

// Turn is one user request and everything the agent did for it. Every field
// is always written.
type Turn struct {
	ID          string           `json:"id"`
	RootTurnID  *string          `json:"rootTurnId"`
	Items       List[ThreadItem] `json:"items"`
	ItemsView   TurnItemsView    `json:"itemsView" wire:"optional"`
	Status      TurnStatus       `json:"status"`
	Error       *TurnError       `json:"error"`
	StartedAt   *int64           `json:"startedAt"`
	CompletedAt *int64           `json:"completedAt"`
	DurationMs  *int64           `json:"durationMs"`
}

// TurnStatus is the state of a turn.
type TurnStatus string

// Turn states.
const (
	TurnCompleted   TurnStatus = "completed"
	TurnInterrupted TurnStatus = "interrupted"
	TurnFailed      TurnStatus = "failed"
	TurnInProgress  TurnStatus = "inProgress"
)

func (TurnStatus) wireValues() []string {
	return values(TurnCompleted, TurnInterrupted, TurnFailed, TurnInProgress)
}

// TurnItemsView says how much of a turn's items a Turn carries.
type TurnItemsView string

// Item views.
const (
	ItemsNotLoaded TurnItemsView = "notLoaded"
	ItemsSummary   TurnItemsView = "summary"
	ItemsFull      TurnItemsView = "full"
)

func (TurnItemsView) wireValues() []string { return values(ItemsNotLoaded, ItemsSummary, ItemsFull) }

// TurnError is why a turn failed. All fields are always written.
type TurnError struct {
	Message           string                    `json:"message"`
	CodexErrorInfo    *CodexErrorInfo           `json:"codexErrorInfo"`
	AdditionalDetails *string                   `json:"additionalDetails"`
	Misalignment      *MisalignmentErrorDetails `json:"misalignment"`
}

// MisalignmentErrorDetails explain a misalignment-policy failure.
type MisalignmentErrorDetails struct {
	DetailedExplanation *string            `json:"detailedExplanation"`
	ErrorType           *string            `json:"errorType"`
	ReviewTarget        *string            `json:"reviewTarget"`
	Steer               *MisalignmentSteer `json:"steer"`
}

// MisalignmentSteer is a suggested steering message.
type MisalignmentSteer struct {
	Message string `json:"message"`
}

// CodexErrorInfo classifies an error: a plain code ("other",
// "internalServerError", …) or an object such as
// {"responseStreamDisconnected":{"httpStatusCode":null}}.
type CodexErrorInfo struct {
	Code                           ErrorCode         `key:"*"`
	HTTPConnectionFailed           *HTTPErrorInfo    `key:"httpConnectionFailed"`
	ResponseStreamConnectionFailed *HTTPErrorInfo    `key:"responseStreamConnectionFailed"`
	ResponseStreamDisconnected     *HTTPErrorInfo    `key:"responseStreamDisconnected"`
	ResponseTooManyFailedAttempts  *HTTPErrorInfo    `key:"responseTooManyFailedAttempts"`
	ActiveTurnNotSteerable         *NotSteerableInfo `key:"activeTurnNotSteerable"`
}

// MarshalJSON encodes the union (see union.go).
func (e CodexErrorInfo) MarshalJSON() ([]byte, error) { return marshalUnion(&e) }

// UnmarshalJSON decodes the union (see union.go).
func (e *CodexErrorInfo) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, e) }

// ErrorInfo returns a CodexErrorInfo with a plain code.
func ErrorInfo(code ErrorCode) *CodexErrorInfo { return &CodexErrorInfo{Code: code} }

// HTTPErrorInfo carries the upstream HTTP status, when there was one.
type HTTPErrorInfo struct {
	HTTPStatusCode *uint16 `json:"httpStatusCode"`
}

// NotSteerableInfo says which kind of turn refused a steer.
type NotSteerableInfo struct {
	TurnKind NonSteerableTurnKind `json:"turnKind"`
}

// NonSteerableTurnKind is a kind of turn that cannot be steered.
type NonSteerableTurnKind string

// Non-steerable turn kinds.
const (
	NonSteerableReview  NonSteerableTurnKind = "review"
	NonSteerableCompact NonSteerableTurnKind = "compact"
)

func (NonSteerableTurnKind) wireValues() []string {
	return values(NonSteerableReview, NonSteerableCompact)
}

// ErrorCode is a plain CodexErrorInfo.
type ErrorCode string

// Error codes.
const (
	ErrContextWindowExceeded       ErrorCode = "contextWindowExceeded"
	ErrSessionBudgetExceeded       ErrorCode = "sessionBudgetExceeded"
	ErrUsageLimitExceeded          ErrorCode = "usageLimitExceeded"
	ErrRateLimitExceeded           ErrorCode = "rateLimitExceeded"
	ErrFlexUnavailable             ErrorCode = "flexUnavailable"
	ErrServerOverloaded            ErrorCode = "serverOverloaded"
	ErrModelNotFound               ErrorCode = "modelNotFound"
	ErrPolicyCapacityUnavailable   ErrorCode = "policyCapacityUnavailable"
	ErrCyberPolicy                 ErrorCode = "cyberPolicy"
	ErrMisalignmentPolicyViolation ErrorCode = "misalignmentPolicyViolation"
	ErrTooManyDenials              ErrorCode = "tooManyDenials"
	ErrInternalServerError         ErrorCode = "internalServerError"
	ErrUnauthorized                ErrorCode = "unauthorized"
	ErrBadRequest                  ErrorCode = "badRequest"
	ErrThreadRollbackFailed        ErrorCode = "threadRollbackFailed"
	ErrSandboxError                ErrorCode = "sandboxError"
	ErrOther                       ErrorCode = "other"
	ErrInferenceHookDenied         ErrorCode = "inferenceHookDenied"
)

func (ErrorCode) wireValues() []string {
	return values(ErrContextWindowExceeded, ErrSessionBudgetExceeded, ErrUsageLimitExceeded,
		ErrRateLimitExceeded, ErrFlexUnavailable, ErrServerOverloaded, ErrModelNotFound,
		ErrPolicyCapacityUnavailable, ErrCyberPolicy, ErrMisalignmentPolicyViolation, ErrTooManyDenials,
		ErrInternalServerError, ErrUnauthorized, ErrBadRequest, ErrThreadRollbackFailed, ErrSandboxError,
		ErrOther, ErrInferenceHookDenied)
}

// TurnStartParams are the params of turn/start.
type TurnStartParams struct {
	ThreadID                        string                            `json:"threadId"`
	Input                           []UserInput                       `json:"input"`
	Cwd                             *string                           `json:"cwd,omitempty"`
	ApprovalPolicy                  *AskForApproval                   `json:"approvalPolicy,omitempty"`
	ApprovalsReviewer               *ApprovalsReviewer                `json:"approvalsReviewer,omitempty"`
	SandboxPolicy                   *SandboxPolicy                    `json:"sandboxPolicy,omitempty"`
	Model                           *string                           `json:"model,omitempty"`
	ServiceTier                     *string                           `json:"serviceTier,omitempty"`
	ServiceTierForTurn              *string                           `json:"serviceTierForTurn,omitempty"`
	Effort                          *ReasoningEffort                  `json:"effort,omitempty"`
	Summary                         *ReasoningSummary                 `json:"summary,omitempty"`
	Personality                     *Personality                      `json:"personality,omitempty"`
	OutputSchema                    any                               `json:"outputSchema,omitempty"`
	ClientUserMessageID             *string                           `json:"clientUserMessageId,omitempty"`
	DisabledPluginIDs               []string                          `json:"disabledPluginIds,omitempty"`
	ParentTurnID                    *string                           `json:"parentTurnId,omitempty"`
	RootTurnID                      *string                           `json:"rootTurnId,omitempty"`
	TurnTrigger                     *string                           `json:"turnTrigger,omitempty"`
	ToolOutput                      *TurnToolOutput                   `json:"toolOutput,omitempty"`
	CollaborationMode               *CollaborationMode                `json:"collaborationMode,omitempty" wire:"experimental"`
	AdditionalContext               map[string]AdditionalContextEntry `json:"additionalContext,omitempty" wire:"experimental"`
	Environments                    []TurnEnvironmentParams           `json:"environments,omitempty" wire:"experimental"`
	Permissions                     *string                           `json:"permissions,omitempty" wire:"experimental"`
	RuntimeWorkspaceRoots           []AbsPath                         `json:"runtimeWorkspaceRoots,omitempty" wire:"experimental"`
	CyberAccessProgram              *CyberAccessProgram               `json:"cyberAccessProgram,omitempty" wire:"experimental"`
	ResponsesapiClientMetadata      map[string]string                 `json:"responsesapiClientMetadata,omitempty" wire:"experimental"`
	ResponsesapiClientMetadataPatch map[string]string                 `json:"responsesapiClientMetadataPatch,omitempty" wire:"experimental"`
	MultiAgentMode                  *MultiAgentMode                   `json:"multiAgentMode,omitempty" wire:"experimental"`
}

// TurnToolOutput hands the model the output of a client-run tool.
type TurnToolOutput struct {
	Name      string  `json:"name"`
	Namespace *string `json:"namespace,omitempty"`
	// Output is a string or an array of content items.
	Output any  `json:"output"`
	Retain bool `json:"retain,omitempty"`
}

// AdditionalContextEntry is extra context attached to a turn.
type AdditionalContextEntry struct {
	Kind  AdditionalContextKind `json:"kind"`
	Value string                `json:"value"`
	Name  *string               `json:"name,omitempty"`
}

// AdditionalContextKind says how far to trust additional context.
type AdditionalContextKind string

// Additional context kinds.
const (
	ContextUntrusted   AdditionalContextKind = "untrusted"
	ContextApplication AdditionalContextKind = "application"
)

func (AdditionalContextKind) wireValues() []string {
	return values(ContextUntrusted, ContextApplication)
}

// CyberAccessProgram selects a cyber access program.
type CyberAccessProgram string

// Cyber access programs.
const (
	CyberStandard     CyberAccessProgram = "standard"
	CyberDaybreakBlue CyberAccessProgram = "daybreakBlue"
	CyberDaybreakRed  CyberAccessProgram = "daybreakRed"
)

func (CyberAccessProgram) wireValues() []string {
	return values(CyberStandard, CyberDaybreakBlue, CyberDaybreakRed)
}

// TurnStartResponse is the result of turn/start.
type TurnStartResponse struct {
	Turn Turn `json:"turn"`
}

// TurnSteerParams are the params of turn/steer.
type TurnSteerParams struct {
	ThreadID                        string                            `json:"threadId"`
	Input                           []UserInput                       `json:"input"`
	ExpectedTurnID                  string                            `json:"expectedTurnId"`
	ClientUserMessageID             *string                           `json:"clientUserMessageId,omitempty"`
	AdditionalContext               map[string]AdditionalContextEntry `json:"additionalContext,omitempty" wire:"experimental"`
	ResponsesapiClientMetadata      map[string]string                 `json:"responsesapiClientMetadata,omitempty" wire:"experimental"`
	ResponsesapiClientMetadataPatch map[string]string                 `json:"responsesapiClientMetadataPatch,omitempty" wire:"experimental"`
}

// TurnSteerResponse is the result of turn/steer.
type TurnSteerResponse struct {
	TurnID string `json:"turnId"`
}

// TurnInterruptParams are the params of turn/interrupt.
type TurnInterruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

// ReviewStartParams are the params of review/start.
type ReviewStartParams struct {
	ThreadID string          `json:"threadId"`
	Target   ReviewTarget    `json:"target"`
	Delivery *ReviewDelivery `json:"delivery,omitempty"`
}

// ReviewDelivery is where a review runs. The reference's 0.169 schema
// has only "inline"; "detached" is agentd's extension (the delivery
// earlier reference versions had).
type ReviewDelivery string

const (
	// ReviewInline runs the review as a turn of the thread itself.
	ReviewInline ReviewDelivery = "inline"
	// ReviewDetached forks the thread and runs the review as a
	// turn of the fork; the thread itself gets nothing.
	ReviewDetached ReviewDelivery = "detached"
)

func (ReviewDelivery) wireValues() []string { return values(ReviewInline, ReviewDetached) }

// ReviewTarget is what to review, tagged by "type".
type ReviewTarget struct {
	UncommittedChanges *Empty              `variant:"uncommittedChanges"`
	BaseBranch         *BaseBranchTarget   `variant:"baseBranch"`
	Commit             *CommitTarget       `variant:"commit"`
	Custom             *CustomReviewTarget `variant:"custom"`
}

// MarshalJSON encodes the union (see union.go).
func (t ReviewTarget) MarshalJSON() ([]byte, error) { return marshalUnion(&t) }

// UnmarshalJSON decodes the union (see union.go).
func (t *ReviewTarget) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, t) }

// BaseBranchTarget reviews the changes against a branch.
type BaseBranchTarget struct {
	Branch string `json:"branch"`
}

// CommitTarget reviews one commit.
type CommitTarget struct {
	Sha   string  `json:"sha"`
	Title *string `json:"title,omitempty"`
}

// CustomReviewTarget reviews by free-form instructions.
type CustomReviewTarget struct {
	Instructions string `json:"instructions"`
}

// ReviewStartResponse is the result of review/start.
type ReviewStartResponse struct {
	Turn           Turn   `json:"turn"`
	ReviewThreadID string `json:"reviewThreadId"`
}
