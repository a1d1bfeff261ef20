package rollout

import (
	"encoding/json"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/review"
)

// Payloads of event_msg records in the reference's schema (format 2). The
// field names are the reference's (snake_case); fields named agentd_* are
// agentd's own, for what the reference's fields cannot say, and the
// reference ignores them. Pointer fields are the ones a reader must tell
// apart from their zero value, or that one event kind has and another
// sharing the struct has not.

// Event type tags of format 2 (the reference's names).
const (
	evTaskStarted         = "task_started"
	evTaskComplete        = "task_complete"
	evTurnAbortedRef      = "turn_aborted"
	evErrorRef            = "error"
	evTokenCountRef       = "token_count"
	evUserMessage         = "user_message"
	evAgentMessage        = "agent_message"
	evAgentReasoning      = "agent_reasoning"
	evAgentReasoningRaw   = "agent_reasoning_raw_content"
	evExecBegin           = "exec_command_begin"
	evExecEnd             = "exec_command_end"
	evPatchBegin          = "patch_apply_begin"
	evPatchEnd            = "patch_apply_end"
	evDynamicRequest      = "dynamic_tool_call_request"
	evDynamicResponse     = "dynamic_tool_call_response"
	evItemStartedRef      = "item_started"
	evItemCompletedRef    = "item_completed"
	evContextCompactedRef = "context_compacted"
	evThreadRolledBack    = "thread_rolled_back"
	evEnteredReview       = "entered_review_mode"
	evExitedReview        = "exited_review_mode"
)

type refTaskStarted struct {
	Type                  string `json:"type"`
	TurnID                string `json:"turn_id"`
	StartedAt             *int64 `json:"started_at,omitempty"`
	ModelContextWindow    int64  `json:"model_context_window,omitempty"`
	CollaborationModeKind string `json:"collaboration_mode_kind,omitempty"`
	AgentdTurnKind        string `json:"agentd_turn_kind,omitempty"`
}

type refTaskComplete struct {
	Type             string        `json:"type"`
	TurnID           string        `json:"turn_id"`
	LastAgentMessage *string       `json:"last_agent_message"`
	CompletedAt      *int64        `json:"completed_at,omitempty"`
	DurationMs       *int64        `json:"duration_ms,omitempty"`
	Error            *refTurnError `json:"error,omitempty"`
}

// refTurnError is a turn's error, in task_complete and in error events.
type refTurnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codex_error_info,omitempty"`
	AdditionalDetails string          `json:"additional_details,omitempty"`
	// AgentdHTTPStatus is the status of an error whose codex_error_info
	// has no place for it.
	AgentdHTTPStatus int `json:"agentd_http_status,omitempty"`
}

type refTurnAborted struct {
	Type        string `json:"type"`
	TurnID      string `json:"turn_id,omitempty"`
	Reason      string `json:"reason"`
	CompletedAt *int64 `json:"completed_at,omitempty"`
	DurationMs  *int64 `json:"duration_ms,omitempty"`
	// AgentdReason is agentd's reason when the reference has no name for
	// it (shutdown).
	AgentdReason string `json:"agentd_reason,omitempty"`
}

// refErrorEvent is an error event; format 1's has its error in "error".
type refErrorEvent struct {
	Type string `json:"type"`
	refTurnError
}

type refTokenCount struct {
	Type       string          `json:"type"`
	Info       *refTokenInfo   `json:"info"`
	RateLimits json.RawMessage `json:"rate_limits"`
}

// refTokenInfo is the usage of a token_count event (model.TokenUsage has
// the reference's field names).
type refTokenInfo struct {
	Total              model.TokenUsage `json:"total_token_usage"`
	Last               model.TokenUsage `json:"last_token_usage"`
	ModelContextWindow *int64           `json:"model_context_window,omitempty"`
}

type refUserMessage struct {
	Type         string           `json:"type"`
	Message      string           `json:"message"`
	Images       []string         `json:"images"`
	LocalImages  []string         `json:"local_images"`
	TextElements []refTextElement `json:"text_elements"`
	AgentdItemID string           `json:"agentd_item_id,omitempty"`
	// AgentdClientID is the client's own id for the message.
	AgentdClientID string `json:"agentd_client_id,omitempty"`
	// AgentdContent is the whole input, in order, when message, images and
	// local_images cannot say it (several texts, skills, mentions, image
	// details).
	AgentdContent []refUserInput `json:"agentd_content,omitempty"`
}

type refTextElement struct {
	ByteRange   refByteRange `json:"byte_range"`
	Placeholder string       `json:"placeholder,omitempty"`
}

type refByteRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// refUserInput is one part of a user input, as the reference's typed
// UserMessage items hold it (and agentd_content).
type refUserInput struct {
	Type         string           `json:"type"`
	Text         string           `json:"text,omitempty"`
	TextElements []refTextElement `json:"text_elements,omitempty"`
	ImageURL     string           `json:"image_url,omitempty"`
	Path         string           `json:"path,omitempty"`
	Name         string           `json:"name,omitempty"`
	Detail       string           `json:"detail,omitempty"`
}

type refAgentMessage struct {
	Type           string          `json:"type"`
	Message        string          `json:"message"`
	Phase          *string         `json:"phase"`
	MemoryCitation json.RawMessage `json:"memory_citation"`
	AgentdItemID   string          `json:"agentd_item_id,omitempty"`
}

// refReasoning is agent_reasoning (a summary part) or
// agent_reasoning_raw_content (a raw part).
type refReasoning struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	AgentdItemID string `json:"agentd_item_id,omitempty"`
}

// refExec is exec_command_begin, or exec_command_end with the fields after
// Source set.
type refExec struct {
	Type             string         `json:"type"`
	CallID           string         `json:"call_id"`
	ProcessID        string         `json:"process_id,omitempty"`
	TurnID           string         `json:"turn_id"`
	Command          []string       `json:"command"`
	Cwd              string         `json:"cwd"`
	ParsedCmd        []refParsedCmd `json:"parsed_cmd"`
	Source           string         `json:"source,omitempty"`
	Stdout           *string        `json:"stdout,omitempty"`
	Stderr           *string        `json:"stderr,omitempty"`
	AggregatedOutput *string        `json:"aggregated_output,omitempty"`
	ExitCode         *int           `json:"exit_code,omitempty"`
	Duration         *refDuration   `json:"duration,omitempty"`
	FormattedOutput  *string        `json:"formatted_output,omitempty"`
	Status           string         `json:"status,omitempty"`
	// AgentdCommand is the command as shown, when it is not the quoted
	// argv (a user shell command shows what the user typed).
	AgentdCommand string `json:"agentd_command,omitempty"`
	// The reference always has an output, an exit code and a duration;
	// these say agentd had none.
	AgentdNoOutput   bool `json:"agentd_no_output,omitempty"`
	AgentdNoExitCode bool `json:"agentd_no_exit_code,omitempty"`
	AgentdNoDuration bool `json:"agentd_no_duration,omitempty"`
}

type refParsedCmd struct {
	Type  string `json:"type"`
	Cmd   string `json:"cmd"`
	Name  string `json:"name,omitempty"`
	Path  string `json:"path,omitempty"`
	Query string `json:"query,omitempty"`
}

// refDuration is a Rust Duration as serde writes it.
type refDuration struct {
	Secs  int64 `json:"secs"`
	Nanos int64 `json:"nanos"`
}

func durationToRef(ms int64) *refDuration {
	d := time.Duration(ms) * time.Millisecond
	return &refDuration{Secs: int64(d / time.Second), Nanos: int64(d % time.Second)}
}

func (d *refDuration) millis() int64 {
	return (time.Duration(d.Secs)*time.Second + time.Duration(d.Nanos)).Milliseconds()
}

// refPatch is patch_apply_begin, or patch_apply_end with the fields after
// Changes set.
type refPatch struct {
	Type         string                   `json:"type"`
	CallID       string                   `json:"call_id"`
	TurnID       string                   `json:"turn_id"`
	AutoApproved *bool                    `json:"auto_approved,omitempty"`
	Changes      map[string]refFileChange `json:"changes"`
	Stdout       *string                  `json:"stdout,omitempty"`
	Stderr       *string                  `json:"stderr,omitempty"`
	Success      *bool                    `json:"success,omitempty"`
	Status       string                   `json:"status,omitempty"`
}

type refFileChange struct {
	Type        string  `json:"type"`
	Content     *string `json:"content,omitempty"`
	UnifiedDiff *string `json:"unified_diff,omitempty"`
	MovePath    *string `json:"move_path,omitempty"`
}

// refDynamic is dynamic_tool_call_request, or dynamic_tool_call_response
// with the fields after Arguments set.
type refDynamic struct {
	Type            string          `json:"type"`
	CallID          string          `json:"call_id"`
	TurnID          string          `json:"turn_id"`
	Tool            string          `json:"tool"`
	Arguments       json.RawMessage `json:"arguments"`
	ContentItems    []refDynContent `json:"content_items,omitempty"`
	Success         *bool           `json:"success,omitempty"`
	Duration        *refDuration    `json:"duration,omitempty"`
	AgentdNamespace string          `json:"agentd_namespace,omitempty"`
	// AgentdStatus is set when success cannot say the status (declined).
	AgentdStatus string `json:"agentd_status,omitempty"`
}

type refDynContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"imageUrl,omitempty"`
	AudioURL string `json:"audioUrl,omitempty"`
}

// refItemEvent is item_started or item_completed: a typed item.
type refItemEvent struct {
	Type          string          `json:"type"`
	ThreadID      string          `json:"thread_id"`
	TurnID        string          `json:"turn_id"`
	Item          json.RawMessage `json:"item"`
	StartedAtMs   *int64          `json:"started_at_ms,omitempty"`
	CompletedAtMs *int64          `json:"completed_at_ms,omitempty"`
}

// refPlanItem is the typed Plan item agentd writes in item_completed.
type refPlanItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Text string `json:"text"`
}

// refWebSearchItem is the typed WebSearch item; its action keeps the
// Responses API's spelling (open_page, find_in_page).
type refWebSearchItem struct {
	Type   string           `json:"type"`
	ID     string           `json:"id"`
	Query  string           `json:"query"`
	Action *refSearchAction `json:"action,omitempty"`
}

type refSearchAction struct {
	Type    string   `json:"type"`
	Query   string   `json:"query,omitempty"`
	Queries []string `json:"queries,omitempty"`
	URL     string   `json:"url,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
}

// refImageViewItem is the typed ImageView item; its path is a file URL.
type refImageViewItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Path string `json:"path"`
}

// refImageGenerationItem is the typed ImageGeneration item.
type refImageGenerationItem struct {
	Type          string `json:"type"`
	ID            string `json:"id"`
	Status        string `json:"status"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
	Result        string `json:"result"`
	SavedPath     string `json:"saved_path,omitempty"`
}

// refMcpItem is the typed McpToolCall item of item_started and
// item_completed (the reference writes it in item_completed).
type refMcpItem struct {
	Type         string          `json:"type"`
	ID           string          `json:"id"`
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"arguments"`
	ReadOnlyHint *bool           `json:"readOnlyHint,omitempty"`
	Status       string          `json:"status"`
	Result       *refMcpResult   `json:"result,omitempty"`
	Error        *refMcpError    `json:"error,omitempty"`
	Duration     *refDuration    `json:"duration,omitempty"`
}

type refMcpResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	Meta              json.RawMessage   `json:"_meta,omitempty"`
}

type refMcpError struct {
	Message string `json:"message"`
}

// refTypedItem reads the typed items of item_started and item_completed
// events (the reference's paginated threads): one struct for every kind,
// by "type".
type refTypedItem struct {
	Type             string                   `json:"type"`
	ID               string                   `json:"id"`
	Content          []refUserInput           `json:"content"`
	Phase            string                   `json:"phase"`
	SummaryText      []string                 `json:"summary_text"`
	RawContent       []string                 `json:"raw_content"`
	ProcessID        string                   `json:"process_id"`
	Command          []string                 `json:"command"`
	Cwd              string                   `json:"cwd"`
	ParsedCmd        []refParsedCmd           `json:"parsed_cmd"`
	Source           string                   `json:"source"`
	Status           string                   `json:"status"`
	AggregatedOutput *string                  `json:"aggregated_output"`
	ExitCode         *int                     `json:"exit_code"`
	Duration         *refDuration             `json:"duration"`
	Changes          map[string]refFileChange `json:"changes"`
	Text             string                   `json:"text"`
	Query            string                   `json:"query"`
	Action           *refSearchAction         `json:"action"`
	Path             string                   `json:"path"`
	RevisedPrompt    string                   `json:"revised_prompt"`
	SavedPath        string                   `json:"saved_path"`
	// Result is an McpToolCall's result object or an ImageGeneration's
	// base64 string: the two share the key, so it is decoded by type.
	Result json.RawMessage `json:"result"`
	// McpToolCall
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"arguments"`
	ReadOnlyHint *bool           `json:"readOnlyHint"`
	Error        *refMcpError    `json:"error"`
}

// refEnteredReview is entered_review_mode: the review request (its
// target and label); in the reference's paginated threads, the typed
// EnteredReviewMode item has the same fields and an id.
type refEnteredReview struct {
	Type           string          `json:"type"`
	ID             string          `json:"id,omitempty"`
	Target         refReviewTarget `json:"target"`
	UserFacingHint *string         `json:"user_facing_hint"`
	AgentdItemID   string          `json:"agentd_item_id,omitempty"`
}

// refReviewTarget is a review target, tagged by "type" with the
// protocol's names.
type refReviewTarget struct {
	Type         string  `json:"type"`
	Branch       string  `json:"branch,omitempty"`
	SHA          string  `json:"sha,omitempty"`
	Title        *string `json:"title,omitempty"`
	Instructions string  `json:"instructions,omitempty"`
}

// refExitedReview is exited_review_mode: the reviewer's answer (null when
// the review ended without one); likewise the typed ExitedReviewMode item.
type refExitedReview struct {
	Type         string         `json:"type"`
	ID           string         `json:"id,omitempty"`
	ReviewOutput *review.Output `json:"review_output"`
	AgentdItemID string         `json:"agentd_item_id,omitempty"`
	// AgentdReview is the text shown when there is no answer.
	AgentdReview string `json:"agentd_review,omitempty"`
}

type refContextCompacted struct {
	Type         string `json:"type"`
	AgentdItemID string `json:"agentd_item_id,omitempty"`
}

type refRolledBack struct {
	Type     string `json:"type"`
	NumTurns int    `json:"num_turns"`
}
