package core

import (
	"encoding/json"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/review"
)

// TurnItem is one displayable unit of a turn: what a user interface draws.
// It is distinct from a model.ResponseItem (what the model sees): one tool
// call is one item here but two history entries there.
//
// Items are values; an emitted item is never changed afterwards.
type TurnItem interface {
	// ItemID is the item's id: the model's item id for messages and
	// reasoning, the tool call id for tools, a UUIDv7 otherwise.
	ItemID() string
	turnItem()
}

// ItemStatus is the status of a tool item.
type ItemStatus string

const (
	StatusInProgress ItemStatus = "inProgress"
	StatusCompleted  ItemStatus = "completed"
	StatusFailed     ItemStatus = "failed"
	StatusDeclined   ItemStatus = "declined"
)

// UserMessageItem is the user's input, as a turn item.
type UserMessageItem struct {
	ID       string
	Content  []UserInput
	ClientID string // the client's own id for the message, if it gave one
}

// AgentMessageItem is text from the model.
type AgentMessageItem struct {
	ID    string
	Text  string
	Phase string // "", "commentary", "final_answer"
}

// ReasoningItem is the model's reasoning: summaries and raw text.
type ReasoningItem struct {
	ID      string
	Summary []string
	Content []string
}

// CommandSource says who started a command.
type CommandSource string

const (
	SourceAgent            CommandSource = "agent"
	SourceUserShell        CommandSource = "userShell"
	SourceUnifiedExecStart CommandSource = "unifiedExecStartup"
	SourceUnifiedExecInput CommandSource = "unifiedExecInteraction"
)

// CommandExecutionItem is a command the agent (or the user) ran.
type CommandExecutionItem struct {
	ID      string
	Command string   // shell-quoted, for display
	Argv    []string // what is executed
	Cwd     string
	Status  ItemStatus
	Source  CommandSource
	// ProcessID is the interactive session id while the command runs in
	// the background, "" otherwise.
	ProcessID        string
	Actions          []policy.CommandAction
	AggregatedOutput *string
	ExitCode         *int
	DurationMs       *int64
}

// FileChangeKind says what a patch does to one file.
type FileChangeKind string

const (
	ChangeAdd    FileChangeKind = "add"
	ChangeDelete FileChangeKind = "delete"
	ChangeUpdate FileChangeKind = "update"
)

// FileChange is a patch's effect on one file.
type FileChange struct {
	Path     string // absolute
	Kind     FileChangeKind
	MovePath string // absolute, for an update that renames
	Diff     string // unified diff; for an add, the new content
}

// FileChangeItem is one apply_patch call.
type FileChangeItem struct {
	ID      string
	Changes []FileChange
	Status  ItemStatus
}

// PlanItem is a plan the model proposed as text.
type PlanItem struct {
	ID   string
	Text string
}

// DynamicContentItem is one part of a dynamic tool's answer.
type DynamicContentItem struct {
	Type     string // "inputText", "inputImage", "inputAudio"
	Text     string
	ImageURL string
	AudioURL string
}

// DynamicToolCallItem is a call to a tool the client declared.
type DynamicToolCallItem struct {
	ID           string
	Tool         string
	Namespace    string
	Arguments    json.RawMessage
	Status       ItemStatus
	ContentItems []DynamicContentItem
	Success      *bool
	DurationMs   *int64
}

// WebSearchActionKind says what a hosted web search did.
type WebSearchActionKind string

const (
	WebSearchSearch     WebSearchActionKind = "search"
	WebSearchOpenPage   WebSearchActionKind = "openPage"
	WebSearchFindInPage WebSearchActionKind = "findInPage"
	WebSearchOther      WebSearchActionKind = "other"
)

// WebSearchAction is what a hosted web search did: queries for a search,
// the page opened, or the pattern looked for in a page.
type WebSearchAction struct {
	Kind    WebSearchActionKind
	Query   string
	Queries []string
	URL     string
	Pattern string
}

// WebSearchItem is one call of the hosted web_search tool. Query is what
// a user interface shows of it (the query, the page, the pattern).
type WebSearchItem struct {
	ID     string
	Query  string
	Action WebSearchAction
}

// ImageViewItem is a local image the model looked at (view_image).
type ImageViewItem struct {
	ID   string
	Path string // absolute
}

// ImageGenerationItem is an image the hosted image_generation tool made.
type ImageGenerationItem struct {
	ID            string
	Status        string // the model's: "in_progress", "completed", …
	RevisedPrompt string
	// Result is the image, base64 as the model sent it.
	Result string
	// SavedPath is where the image was saved, "" when it was not.
	SavedPath string
}

// McpToolCallItem is a call to a tool of an MCP server.
type McpToolCallItem struct {
	ID        string
	Server    string // the server's configured name
	Tool      string // the server's name for the tool
	Arguments json.RawMessage
	Status    ItemStatus
	// Result is the server's answer (also for a tool error, which fails
	// the item); Error why there is none.
	Result     *McpToolResult
	Error      string
	DurationMs *int64
	// ReadOnly is the tool's readOnlyHint, nil when it has none.
	ReadOnly *bool
}

// McpToolResult is an MCP tool's answer, in the server's JSON.
type McpToolResult struct {
	Content           []json.RawMessage
	StructuredContent json.RawMessage
	Meta              json.RawMessage
}

// ContextCompactionItem marks a compaction of the history.
type ContextCompactionItem struct {
	ID string
}

// EnteredReviewModeItem opens a review turn: what is reviewed, and the
// label clients show for it.
type EnteredReviewModeItem struct {
	ID     string
	Target review.Target
	Hint   string
}

// ExitedReviewModeItem closes a review turn with the review: Output is
// the reviewer's answer (nil when the review ended without one) and
// Review its text as the user reads it.
type ExitedReviewModeItem struct {
	ID     string
	Output *review.Output
	Review string
}

func (i UserMessageItem) ItemID() string       { return i.ID }
func (i AgentMessageItem) ItemID() string      { return i.ID }
func (i ReasoningItem) ItemID() string         { return i.ID }
func (i CommandExecutionItem) ItemID() string  { return i.ID }
func (i FileChangeItem) ItemID() string        { return i.ID }
func (i PlanItem) ItemID() string              { return i.ID }
func (i DynamicToolCallItem) ItemID() string   { return i.ID }
func (i McpToolCallItem) ItemID() string       { return i.ID }
func (i ContextCompactionItem) ItemID() string { return i.ID }
func (i WebSearchItem) ItemID() string         { return i.ID }
func (i ImageViewItem) ItemID() string         { return i.ID }
func (i ImageGenerationItem) ItemID() string   { return i.ID }
func (i EnteredReviewModeItem) ItemID() string { return i.ID }
func (i ExitedReviewModeItem) ItemID() string  { return i.ID }

func (UserMessageItem) turnItem()       {}
func (AgentMessageItem) turnItem()      {}
func (ReasoningItem) turnItem()         {}
func (CommandExecutionItem) turnItem()  {}
func (FileChangeItem) turnItem()        {}
func (PlanItem) turnItem()              {}
func (DynamicToolCallItem) turnItem()   {}
func (McpToolCallItem) turnItem()       {}
func (ContextCompactionItem) turnItem() {}
func (WebSearchItem) turnItem()         {}
func (ImageViewItem) turnItem()         {}
func (ImageGenerationItem) turnItem()   {}
func (EnteredReviewModeItem) turnItem() {}
func (ExitedReviewModeItem) turnItem()  {}
