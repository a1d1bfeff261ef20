package protocol

import (
	"encoding/json/jsontext"
	"reflect"
)

// ThreadItem is one item of a turn, tagged by "type". Exactly one variant is
// set. Every field of every variant is always written, nulls included
// (clients rely on the full key set). To add a variant, add a field.
type ThreadItem struct {
	UserMessage       *UserMessageItem       `variant:"userMessage"`
	HookPrompt        *HookPromptItem        `variant:"hookPrompt"`
	AgentMessage      *AgentMessageItem      `variant:"agentMessage"`
	Plan              *PlanItem              `variant:"plan"`
	Reasoning         *ReasoningItem         `variant:"reasoning"`
	CommandExecution  *CommandExecutionItem  `variant:"commandExecution"`
	FileChange        *FileChangeItem        `variant:"fileChange"`
	McpToolCall       *McpToolCallItem       `variant:"mcpToolCall"`
	DynamicToolCall   *DynamicToolCallItem   `variant:"dynamicToolCall"`
	WebSearch         *WebSearchItem         `variant:"webSearch"`
	ImageView         *ImageViewItem         `variant:"imageView"`
	ImageGeneration   *ImageGenerationItem   `variant:"imageGeneration"`
	Sleep             *SleepItem             `variant:"sleep"`
	EnteredReviewMode *ReviewModeItem        `variant:"enteredReviewMode"`
	ExitedReviewMode  *ReviewModeItem        `variant:"exitedReviewMode"`
	ContextCompaction *ContextCompactionItem `variant:"contextCompaction"`

	// StartedAtMs and CompletedAtMs are common to every variant (Unix ms).
	StartedAtMs   *int64 `json:"startedAtMs"`
	CompletedAtMs *int64 `json:"completedAtMs"`
}

// MarshalJSON encodes the union (see union.go).
func (it ThreadItem) MarshalJSON() ([]byte, error) { return marshalUnion(&it) }

// MarshalJSONTo encodes the union into the encoder of the value it is
// part of (see union_flat.go): a thread's turns hold thousands of items.
func (it ThreadItem) MarshalJSONTo(enc *jsontext.Encoder) error { return marshalUnionTo(enc, &it) }

// UnmarshalJSON decodes the union (see union.go).
func (it *ThreadItem) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, it) }

// Type returns the item's "type" ("agentMessage", …), or "" if none is set.
func (it ThreadItem) Type() string {
	name, _ := setVariant(&it)
	return name
}

// ID returns the item's id, or "" if no variant is set.
func (it ThreadItem) ID() string {
	_, v := setVariant(&it)
	if !v.IsValid() {
		return ""
	}
	return v.Elem().FieldByName("ID").String()
}

// setVariant returns the name and value of the set variant of union u.
func setVariant(u any) (string, reflect.Value) {
	v := reflect.ValueOf(u).Elem()
	for _, vr := range ShapeOf(v.Type()).Variants {
		if f := v.Field(vr.Index); !f.IsNil() {
			return vr.Name, f
		}
	}
	return "", reflect.Value{}
}

// UserMessageItem is a user's input.
type UserMessageItem struct {
	ID       string          `json:"id"`
	ClientID *string         `json:"clientId"`
	Content  List[UserInput] `json:"content"`
}

// HookPromptItem is text that hooks added to the conversation.
type HookPromptItem struct {
	ID        string                   `json:"id"`
	Fragments List[HookPromptFragment] `json:"fragments"`
}

// HookPromptFragment is one hook's contribution to a HookPromptItem.
type HookPromptFragment struct {
	Text      string `json:"text"`
	HookRunID string `json:"hookRunId"`
}

// AgentMessageItem is text from the agent.
type AgentMessageItem struct {
	Moderation     *AgentMessageModeration  `json:"moderation"`
	ID             string                   `json:"id"`
	Text           string                   `json:"text"`
	Phase          *MessagePhase            `json:"phase"`
	MemoryCitation *MemoryCitation          `json:"memoryCitation"`
	Delivery       *AgentMessageDelivery    `json:"delivery"`
	Questions      []AsyncUserInputQuestion `json:"questions" wire:"optional"`
}

// AgentMessageModeration reports moderation of an agent message.
type AgentMessageModeration struct {
	Moderated bool                 `json:"moderated"`
	Display   *AgentMessageDisplay `json:"display"`
}

// AgentMessageDisplay says how to show a moderated message.
type AgentMessageDisplay struct {
	Action               string  `json:"action"`
	BlockType            *string `json:"blockType"`
	CheckTrustedContacts *bool   `json:"checkTrustedContacts"`
	CyberTrustedAccess   *bool   `json:"cyberTrustedAccess"`
}

// MemoryCitation lists the memories an agent message drew on.
type MemoryCitation struct {
	Entries   List[MemoryCitationEntry] `json:"entries"`
	ThreadIDs List[string]              `json:"threadIds"`
}

// MemoryCitationEntry is one cited memory.
type MemoryCitationEntry struct {
	Path      string `json:"path"`
	LineStart uint32 `json:"lineStart"`
	LineEnd   uint32 `json:"lineEnd"`
	Note      string `json:"note"`
}

// AsyncUserInputQuestion is a question an agent message asks.
type AsyncUserInputQuestion struct {
	Title   string   `json:"title"`
	Options []string `json:"options" wire:"optional"`
}

// MessagePhase says what part of the answer an agent message is.
type MessagePhase string

// Message phases.
const (
	PhaseCommentary    MessagePhase = "commentary"
	PhasePartialAnswer MessagePhase = "partial_answer"
	PhaseFinalAnswer   MessagePhase = "final_answer"
)

func (MessagePhase) wireValues() []string {
	return values(PhaseCommentary, PhasePartialAnswer, PhaseFinalAnswer)
}

// AgentMessageDelivery marks an asynchronously delivered message.
type AgentMessageDelivery string

// DeliveryAsync is the only delivery.
const DeliveryAsync AgentMessageDelivery = "async"

func (AgentMessageDelivery) wireValues() []string { return values(DeliveryAsync) }

// PlanItem is a proposed plan (plan collaboration mode).
type PlanItem struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// ReasoningItem is the model's reasoning: summary parts and raw text.
type ReasoningItem struct {
	ID      string       `json:"id"`
	Summary List[string] `json:"summary" wire:"optional"`
	Content List[string] `json:"content" wire:"optional"`
}

// CommandExecutionItem is a shell command run for the agent or the user.
type CommandExecutionItem struct {
	ID               string                 `json:"id"`
	PluginID         *string                `json:"pluginId"`
	ScriptPath       *string                `json:"scriptPath"`
	Command          string                 `json:"command"`
	Cwd              string                 `json:"cwd"`
	ProcessID        *string                `json:"processId"`
	Source           CommandExecutionSource `json:"source" wire:"optional"`
	Status           CommandExecutionStatus `json:"status"`
	CommandActions   List[CommandAction]    `json:"commandActions"`
	AggregatedOutput *string                `json:"aggregatedOutput"`
	ExitCode         *int32                 `json:"exitCode"`
	DurationMs       *int64                 `json:"durationMs"`
}

// CommandExecutionSource says who started a command.
type CommandExecutionSource string

// Command sources.
const (
	SourceAgent                  CommandExecutionSource = "agent"
	SourceUserShell              CommandExecutionSource = "userShell"
	SourceUnifiedExecStartup     CommandExecutionSource = "unifiedExecStartup"
	SourceUnifiedExecInteraction CommandExecutionSource = "unifiedExecInteraction"
)

func (CommandExecutionSource) wireValues() []string {
	return values(SourceAgent, SourceUserShell, SourceUnifiedExecStartup, SourceUnifiedExecInteraction)
}

// CommandExecutionStatus is the state of a command item.
type CommandExecutionStatus string

// Command states.
const (
	CommandInProgress CommandExecutionStatus = "inProgress"
	CommandCompleted  CommandExecutionStatus = "completed"
	CommandFailed     CommandExecutionStatus = "failed"
	CommandDeclined   CommandExecutionStatus = "declined"
)

func (CommandExecutionStatus) wireValues() []string {
	return values(CommandInProgress, CommandCompleted, CommandFailed, CommandDeclined)
}

// CommandAction is what a command does, as parsed for display, tagged by "type".
type CommandAction struct {
	Read      *ReadAction      `variant:"read"`
	ListFiles *ListFilesAction `variant:"listFiles"`
	Search    *SearchAction    `variant:"search"`
	Unknown   *UnknownAction   `variant:"unknown"`
}

// MarshalJSON encodes the union (see union.go).
func (a CommandAction) MarshalJSON() ([]byte, error) { return marshalUnion(&a) }

// UnmarshalJSON decodes the union (see union.go).
func (a *CommandAction) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, a) }

// ReadAction reads a file.
type ReadAction struct {
	Command string `json:"command"`
	Name    string `json:"name"`
	Path    string `json:"path"`
}

// ListFilesAction lists files.
type ListFilesAction struct {
	Command string  `json:"command"`
	Path    *string `json:"path"`
}

// SearchAction searches files.
type SearchAction struct {
	Command string  `json:"command"`
	Query   *string `json:"query"`
	Path    *string `json:"path"`
}

// UnknownAction is any other command.
type UnknownAction struct {
	Command string `json:"command"`
}

// FileChangeItem is a patch to files.
type FileChangeItem struct {
	ID      string                 `json:"id"`
	Changes List[FileUpdateChange] `json:"changes"`
	Status  PatchApplyStatus       `json:"status"`
}

// FileUpdateChange is the change to one file; for an added file Diff is
// its content.
type FileUpdateChange struct {
	Path string          `json:"path"`
	Kind PatchChangeKind `json:"kind"`
	Diff string          `json:"diff"`
}

// PatchChangeKind is add, delete or update (with an optional move), tagged by "type".
type PatchChangeKind struct {
	Add    *Empty        `variant:"add"`
	Delete *Empty        `variant:"delete"`
	Update *UpdateChange `variant:"update"`
}

// MarshalJSON encodes the union (see union.go).
func (k PatchChangeKind) MarshalJSON() ([]byte, error) { return marshalUnion(&k) }

// UnmarshalJSON decodes the union (see union.go).
func (k *PatchChangeKind) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, k) }

// ChangeAdd returns {"type":"add"}.
func ChangeAdd() PatchChangeKind { return PatchChangeKind{Add: &Empty{}} }

// ChangeDelete returns {"type":"delete"}.
func ChangeDelete() PatchChangeKind { return PatchChangeKind{Delete: &Empty{}} }

// ChangeUpdate returns {"type":"update","move_path":…}; movePath may be nil.
func ChangeUpdate(movePath *string) PatchChangeKind {
	return PatchChangeKind{Update: &UpdateChange{MovePath: movePath}}
}

// UpdateChange is an update, possibly moving the file (snake_case move_path).
type UpdateChange struct {
	MovePath *string `json:"move_path"`
}

// PatchApplyStatus is the state of a file change item.
type PatchApplyStatus string

// Patch states.
const (
	PatchInProgress PatchApplyStatus = "inProgress"
	PatchCompleted  PatchApplyStatus = "completed"
	PatchFailed     PatchApplyStatus = "failed"
	PatchDeclined   PatchApplyStatus = "declined"
)

func (PatchApplyStatus) wireValues() []string {
	return values(PatchInProgress, PatchCompleted, PatchFailed, PatchDeclined)
}

// McpToolCallItem is a call to an MCP server's tool.
type McpToolCallItem struct {
	ID                string                 `json:"id"`
	Server            string                 `json:"server"`
	Tool              string                 `json:"tool"`
	Status            ToolCallStatus         `json:"status"`
	Arguments         any                    `json:"arguments"`
	Result            *McpToolCallResult     `json:"result"`
	Error             *McpToolCallError      `json:"error"`
	DurationMs        *int64                 `json:"durationMs"`
	AppContext        *McpToolCallAppContext `json:"appContext"`
	McpAppResourceURI *string                `json:"mcpAppResourceUri"`
	McpAppUI          *McpAppUI              `json:"mcpAppUi"`
	PluginID          *string                `json:"pluginId"`
	ReadOnlyHint      *bool                  `json:"readOnlyHint"`
}

// McpToolCallResult is an MCP tool's result.
type McpToolCallResult struct {
	Content           List[any] `json:"content"`
	StructuredContent any       `json:"structuredContent" wire:"optional"`
	Meta              any       `json:"_meta" wire:"optional"`
}

// McpToolCallError is an MCP tool's failure.
type McpToolCallError struct {
	Message string `json:"message"`
}

// McpToolCallAppContext links an MCP call to an app.
type McpToolCallAppContext struct {
	ConnectorID string  `json:"connectorId"`
	ActionName  *string `json:"actionName"`
	AppName     *string `json:"appName"`
	LinkID      *string `json:"linkId"`
	ResourceURI *string `json:"resourceUri"`
}

// McpAppUI describes an MCP app's UI resource.
type McpAppUI struct {
	PreferredModelDisplayMode string `json:"preferredModelDisplayMode"`
	ResourceURI               string `json:"resourceUri"`
}

// ToolCallStatus is the state of a tool call item.
type ToolCallStatus string

// Tool call states.
const (
	ToolCallInProgress ToolCallStatus = "inProgress"
	ToolCallCompleted  ToolCallStatus = "completed"
	ToolCallFailed     ToolCallStatus = "failed"
)

func (ToolCallStatus) wireValues() []string {
	return values(ToolCallInProgress, ToolCallCompleted, ToolCallFailed)
}

// DynamicToolCallItem is a call to a client-provided (dynamic) tool.
type DynamicToolCallItem struct {
	ID           string                             `json:"id"`
	Namespace    *string                            `json:"namespace"`
	Tool         string                             `json:"tool"`
	Arguments    any                                `json:"arguments"`
	Status       ToolCallStatus                     `json:"status"`
	ContentItems []DynamicToolCallOutputContentItem `json:"contentItems" wire:"optional"`
	Success      *bool                              `json:"success"`
	DurationMs   *int64                             `json:"durationMs"`
}

// DynamicToolCallOutputContentItem is part of a dynamic tool's output, tagged by "type".
type DynamicToolCallOutputContentItem struct {
	InputText  *InputTextContent  `variant:"inputText"`
	InputImage *InputImageContent `variant:"inputImage"`
	InputAudio *InputAudioContent `variant:"inputAudio"`
}

// MarshalJSON encodes the union (see union.go).
func (c DynamicToolCallOutputContentItem) MarshalJSON() ([]byte, error) { return marshalUnion(&c) }

// UnmarshalJSON decodes the union (see union.go).
func (c *DynamicToolCallOutputContentItem) UnmarshalJSON(b []byte) error {
	return unmarshalUnion(b, c)
}

// InputTextContent is text output.
type InputTextContent struct {
	Text string `json:"text"`
}

// InputImageContent is an image output by URL.
type InputImageContent struct {
	ImageURL string `json:"imageUrl"`
}

// InputAudioContent is an audio output by URL.
type InputAudioContent struct {
	AudioURL string `json:"audioUrl"`
}

// WebSearchItem is a web search.
type WebSearchItem struct {
	ID      string           `json:"id"`
	Query   string           `json:"query"`
	Action  *WebSearchAction `json:"action"`
	Results []any            `json:"results" wire:"optional"`
}

// WebSearchAction is what a web search did, tagged by "type".
type WebSearchAction struct {
	Search     *SearchWebAction  `variant:"search"`
	OpenPage   *OpenPageAction   `variant:"openPage"`
	FindInPage *FindInPageAction `variant:"findInPage"`
	Other      *Empty            `variant:"other"`
}

// MarshalJSON encodes the union (see union.go).
func (a WebSearchAction) MarshalJSON() ([]byte, error) { return marshalUnion(&a) }

// UnmarshalJSON decodes the union (see union.go).
func (a *WebSearchAction) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, a) }

// SearchWebAction ran queries.
type SearchWebAction struct {
	Query   *string  `json:"query"`
	Queries []string `json:"queries" wire:"optional"`
}

// OpenPageAction opened a page.
type OpenPageAction struct {
	URL *string `json:"url"`
}

// FindInPageAction searched a page.
type FindInPageAction struct {
	URL     *string `json:"url"`
	Pattern *string `json:"pattern"`
}

// ImageViewItem is an image the agent looked at.
type ImageViewItem struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

// ImageGenerationItem is an image the model generated with the hosted
// image_generation tool. Result is the image (base64); SavedPath, where
// the server saved it.
type ImageGenerationItem struct {
	ID                    string                  `json:"id"`
	Status                string                  `json:"status"`
	RevisedPrompt         *string                 `json:"revisedPrompt"`
	Result                *string                 `json:"result,omitempty"`
	FileID                *string                 `json:"fileId,omitempty"`
	SavedPath             *string                 `json:"savedPath"`
	GenerationID          *string                 `json:"generationId"`
	Failure               *ImageGenerationFailure `json:"failure"`
	TransparentBackground *bool                   `json:"transparentBackground"`
}

// ImageGenerationFailure says why an image was not generated, tagged by
// "type".
type ImageGenerationFailure struct {
	UsageLimitExceeded *ImageUsageLimitFailure `variant:"usageLimitExceeded"`
}

// MarshalJSON encodes the union (see union.go).
func (f ImageGenerationFailure) MarshalJSON() ([]byte, error) { return marshalUnion(&f) }

// UnmarshalJSON decodes the union (see union.go).
func (f *ImageGenerationFailure) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, f) }

// ImageUsageLimitFailure: a usage limit stopped the generation.
type ImageUsageLimitFailure struct {
	LimitID  string `json:"limitId"`
	ResetsAt *int64 `json:"resetsAt"`
}

// SleepItem is a pause.
type SleepItem struct {
	ID         string `json:"id"`
	DurationMs uint64 `json:"durationMs"`
}

// ReviewModeItem marks entering or leaving review mode.
type ReviewModeItem struct {
	ID     string `json:"id"`
	Review string `json:"review"`
}

// ContextCompactionItem marks a compaction of the context.
type ContextCompactionItem struct {
	ID string `json:"id"`
}

// UserInput is one piece of user input, tagged by "type".
type UserInput struct {
	Text       *TextInput       `variant:"text"`
	Image      *ImageInput      `variant:"image"`
	LocalImage *LocalImageInput `variant:"localImage"`
	Audio      *AudioInput      `variant:"audio"`
	LocalAudio *LocalAudioInput `variant:"localAudio"`
	Skill      *SkillInput      `variant:"skill"`
	Mention    *MentionInput    `variant:"mention"`
}

// MarshalJSON encodes the union (see union.go).
func (u UserInput) MarshalJSON() ([]byte, error) { return marshalUnion(&u) }

// MarshalJSONTo encodes the union into its parent's encoder (see
// union_flat.go).
func (u UserInput) MarshalJSONTo(enc *jsontext.Encoder) error { return marshalUnionTo(enc, &u) }

// UnmarshalJSON decodes the union (see union.go).
func (u *UserInput) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, u) }

// TextUserInput returns {"type":"text","text":…,"text_elements":[]}.
func TextUserInput(text string) UserInput {
	return UserInput{Text: &TextInput{Text: text, TextElements: List[TextElement]{}}}
}

// TextInput is text (snake_case text_elements, written as [] when empty).
type TextInput struct {
	Text         string            `json:"text"`
	TextElements List[TextElement] `json:"text_elements" wire:"optional"`
}

// TextElement marks a span of a TextInput (a placeholder for an attachment).
type TextElement struct {
	ByteRange   ByteRange `json:"byteRange"`
	Placeholder *string   `json:"placeholder,omitempty"`
}

// ByteRange is a half-open byte range.
type ByteRange struct {
	Start uint `json:"start"`
	End   uint `json:"end"`
}

// ImageInput is an image by URL or file id.
type ImageInput struct {
	Detail *ImageDetail `json:"detail"`
	URL    *string      `json:"url,omitempty"`
	FileID *string      `json:"fileId,omitempty"`
}

// LocalImageInput is an image file on the server.
type LocalImageInput struct {
	Path   string       `json:"path"`
	Detail *ImageDetail `json:"detail"`
}

// AudioInput is audio by URL or file id.
type AudioInput struct {
	URL    *string `json:"url,omitempty"`
	FileID *string `json:"fileId,omitempty"`
}

// LocalAudioInput is an audio file on the server.
type LocalAudioInput struct {
	Path string `json:"path"`
}

// SkillInput invokes a skill.
type SkillInput struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// MentionInput mentions an app or plugin.
type MentionInput struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// ImageDetail is the detail level of an image input.
type ImageDetail string

// Image detail levels.
const (
	DetailAuto     ImageDetail = "auto"
	DetailLow      ImageDetail = "low"
	DetailHigh     ImageDetail = "high"
	DetailOriginal ImageDetail = "original"
)

func (ImageDetail) wireValues() []string {
	return values(DetailAuto, DetailLow, DetailHigh, DetailOriginal)
}
