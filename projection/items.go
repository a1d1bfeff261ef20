package projection

import (
	"encoding/json"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/protocol"
)

// Item maps a core turn item to its wire form. startedMs and completedMs
// are Unix milliseconds, 0 for unknown (written as null).
func Item(it core.TurnItem, startedMs, completedMs int64) protocol.ThreadItem {
	var out protocol.ThreadItem
	switch it := it.(type) {
	case core.UserMessageItem:
		content := make(protocol.List[protocol.UserInput], 0, len(it.Content))
		for _, u := range it.Content {
			content = append(content, UserInput(u))
		}
		out.UserMessage = &protocol.UserMessageItem{ID: it.ID, ClientID: strPtr(it.ClientID), Content: content}
	case core.AgentMessageItem:
		m := &protocol.AgentMessageItem{ID: it.ID, Text: it.Text}
		if it.Phase != "" {
			p := protocol.MessagePhase(it.Phase)
			m.Phase = &p
		}
		out.AgentMessage = m
	case core.ReasoningItem:
		out.Reasoning = &protocol.ReasoningItem{ID: it.ID, Summary: nonNil(it.Summary), Content: nonNil(it.Content)}
	case core.CommandExecutionItem:
		c := &protocol.CommandExecutionItem{
			ID:               it.ID,
			Command:          it.Command,
			Cwd:              it.Cwd,
			ProcessID:        strPtr(it.ProcessID),
			Source:           protocol.CommandExecutionSource(it.Source),
			Status:           protocol.CommandExecutionStatus(it.Status),
			CommandActions:   CommandActions(it.Actions),
			AggregatedOutput: it.AggregatedOutput,
			DurationMs:       it.DurationMs,
		}
		if it.ExitCode != nil {
			code := int32(*it.ExitCode)
			c.ExitCode = &code
		}
		out.CommandExecution = c
	case core.FileChangeItem:
		out.FileChange = &protocol.FileChangeItem{ID: it.ID, Changes: FileChanges(it.Changes), Status: protocol.PatchApplyStatus(it.Status)}
	case core.PlanItem:
		out.Plan = &protocol.PlanItem{ID: it.ID, Text: it.Text}
	case core.DynamicToolCallItem:
		d := &protocol.DynamicToolCallItem{
			ID:         it.ID,
			Namespace:  strPtr(it.Namespace),
			Tool:       it.Tool,
			Arguments:  rawOrNull(it.Arguments),
			Status:     toolStatus(it.Status),
			Success:    it.Success,
			DurationMs: it.DurationMs,
		}
		if it.ContentItems != nil {
			d.ContentItems = DynamicContent(it.ContentItems)
		}
		out.DynamicToolCall = d
	case core.McpToolCallItem:
		out.McpToolCall = McpToolCall(it)
	case core.ContextCompactionItem:
		out.ContextCompaction = &protocol.ContextCompactionItem{ID: it.ID}
	case core.WebSearchItem:
		out.WebSearch = &protocol.WebSearchItem{ID: it.ID, Query: it.Query, Action: webSearchAction(it.Action)}
	case core.ImageViewItem:
		out.ImageView = &protocol.ImageViewItem{ID: it.ID, Path: it.Path}
	case core.ImageGenerationItem:
		result := it.Result
		out.ImageGeneration = &protocol.ImageGenerationItem{ID: it.ID, Status: it.Status, RevisedPrompt: strPtr(it.RevisedPrompt),
			Result: &result, SavedPath: strPtr(it.SavedPath)}
	case core.EnteredReviewModeItem:
		out.EnteredReviewMode = &protocol.ReviewModeItem{ID: it.ID, Review: it.Hint}
	case core.ExitedReviewModeItem:
		out.ExitedReviewMode = &protocol.ReviewModeItem{ID: it.ID, Review: it.Review}
	}
	if startedMs != 0 {
		out.StartedAtMs = &startedMs
	}
	if completedMs != 0 {
		out.CompletedAtMs = &completedMs
	}
	return out
}

// webSearchAction maps what a web search did.
func webSearchAction(a core.WebSearchAction) *protocol.WebSearchAction {
	switch a.Kind {
	case core.WebSearchSearch:
		return &protocol.WebSearchAction{Search: &protocol.SearchWebAction{Query: strPtr(a.Query), Queries: a.Queries}}
	case core.WebSearchOpenPage:
		return &protocol.WebSearchAction{OpenPage: &protocol.OpenPageAction{URL: strPtr(a.URL)}}
	case core.WebSearchFindInPage:
		return &protocol.WebSearchAction{FindInPage: &protocol.FindInPageAction{URL: strPtr(a.URL), Pattern: strPtr(a.Pattern)}}
	}
	return &protocol.WebSearchAction{Other: &protocol.Empty{}}
}

// McpToolCall maps an MCP call: its arguments and result are the
// server's JSON, passed through.
func McpToolCall(it core.McpToolCallItem) *protocol.McpToolCallItem {
	m := &protocol.McpToolCallItem{
		ID: it.ID, Server: it.Server, Tool: it.Tool, Status: toolStatus(it.Status),
		Arguments: rawOrNull(it.Arguments), DurationMs: it.DurationMs, ReadOnlyHint: it.ReadOnly,
	}
	if r := it.Result; r != nil {
		content := make(protocol.List[any], 0, len(r.Content))
		for _, c := range r.Content {
			content = append(content, c)
		}
		m.Result = &protocol.McpToolCallResult{Content: content, StructuredContent: rawOrNull(r.StructuredContent), Meta: rawOrNull(r.Meta)}
	}
	if it.Error != "" {
		m.Error = &protocol.McpToolCallError{Message: it.Error}
	}
	return m
}

func toolStatus(s core.ItemStatus) protocol.ToolCallStatus {
	switch s {
	case core.StatusCompleted:
		return protocol.ToolCallCompleted
	case core.StatusFailed, core.StatusDeclined:
		return protocol.ToolCallFailed
	}
	return protocol.ToolCallInProgress
}

// UserInput maps one part of a user message.
func UserInput(u core.UserInput) protocol.UserInput {
	switch u.Kind {
	case core.InputImage:
		img := &protocol.ImageInput{URL: strPtr(u.ImageURL)}
		if u.Detail != "" {
			d := protocol.ImageDetail(u.Detail)
			img.Detail = &d
		}
		return protocol.UserInput{Image: img}
	case core.InputLocalImage:
		img := &protocol.LocalImageInput{Path: u.Path}
		if u.Detail != "" {
			d := protocol.ImageDetail(u.Detail)
			img.Detail = &d
		}
		return protocol.UserInput{LocalImage: img}
	case core.InputSkill:
		return protocol.UserInput{Skill: &protocol.SkillInput{Name: u.Name, Path: u.Path}}
	case core.InputMention:
		return protocol.UserInput{Mention: &protocol.MentionInput{Name: u.Name, Path: u.Path}}
	}
	els := make(protocol.List[protocol.TextElement], 0, len(u.TextElements))
	for _, e := range u.TextElements {
		el := protocol.TextElement{ByteRange: protocol.ByteRange{Start: uint(e.Start), End: uint(e.End)}}
		if e.Placeholder != "" {
			p := e.Placeholder
			el.Placeholder = &p
		}
		els = append(els, el)
	}
	return protocol.UserInput{Text: &protocol.TextInput{Text: u.Text, TextElements: els}}
}

// CoreUserInput maps a wire user input to the core's form.
func CoreUserInput(u protocol.UserInput) core.UserInput {
	switch {
	case u.Image != nil:
		out := core.UserInput{Kind: core.InputImage}
		if u.Image.URL != nil {
			out.ImageURL = *u.Image.URL
		}
		if u.Image.Detail != nil {
			out.Detail = string(*u.Image.Detail)
		}
		return out
	case u.LocalImage != nil:
		out := core.UserInput{Kind: core.InputLocalImage, Path: u.LocalImage.Path}
		if u.LocalImage.Detail != nil {
			out.Detail = string(*u.LocalImage.Detail)
		}
		return out
	case u.Skill != nil:
		return core.UserInput{Kind: core.InputSkill, Name: u.Skill.Name, Path: u.Skill.Path}
	case u.Mention != nil:
		return core.UserInput{Kind: core.InputMention, Name: u.Mention.Name, Path: u.Mention.Path}
	case u.Text != nil:
		out := core.UserInput{Kind: core.InputText, Text: u.Text.Text}
		for _, e := range u.Text.TextElements {
			el := core.TextElement{Start: int(e.ByteRange.Start), End: int(e.ByteRange.End)}
			if e.Placeholder != nil {
				el.Placeholder = *e.Placeholder
			}
			out.TextElements = append(out.TextElements, el)
		}
		return out
	}
	// Audio inputs are not supported by the core; they are kept as a note.
	return core.UserInput{Kind: core.InputText, Text: "[audio input is not supported]"}
}

// CommandActions maps parsed command actions.
func CommandActions(as []policy.CommandAction) protocol.List[protocol.CommandAction] {
	out := make(protocol.List[protocol.CommandAction], 0, len(as))
	for _, a := range as {
		switch a.Kind {
		case policy.ActionRead:
			out = append(out, protocol.CommandAction{Read: &protocol.ReadAction{Command: a.Command, Name: a.Name, Path: a.Path}})
		case policy.ActionListFiles:
			out = append(out, protocol.CommandAction{ListFiles: &protocol.ListFilesAction{Command: a.Command, Path: strPtr(a.Path)}})
		case policy.ActionSearch:
			out = append(out, protocol.CommandAction{Search: &protocol.SearchAction{Command: a.Command, Query: strPtr(a.Query), Path: strPtr(a.Path)}})
		default:
			out = append(out, protocol.CommandAction{Unknown: &protocol.UnknownAction{Command: a.Command}})
		}
	}
	return out
}

// FileChanges maps a patch's changes.
func FileChanges(cs []core.FileChange) protocol.List[protocol.FileUpdateChange] {
	out := make(protocol.List[protocol.FileUpdateChange], 0, len(cs))
	for _, c := range cs {
		var kind protocol.PatchChangeKind
		switch c.Kind {
		case core.ChangeAdd:
			kind = protocol.ChangeAdd()
		case core.ChangeDelete:
			kind = protocol.ChangeDelete()
		default:
			kind = protocol.ChangeUpdate(strPtr(c.MovePath))
		}
		out = append(out, protocol.FileUpdateChange{Path: c.Path, Kind: kind, Diff: c.Diff})
	}
	return out
}

// DynamicContent maps a dynamic tool's output items to the wire.
func DynamicContent(items []core.DynamicContentItem) []protocol.DynamicToolCallOutputContentItem {
	out := make([]protocol.DynamicToolCallOutputContentItem, 0, len(items))
	for _, it := range items {
		switch it.Type {
		case "inputImage":
			out = append(out, protocol.DynamicToolCallOutputContentItem{InputImage: &protocol.InputImageContent{ImageURL: it.ImageURL}})
		case "inputAudio":
			out = append(out, protocol.DynamicToolCallOutputContentItem{InputAudio: &protocol.InputAudioContent{AudioURL: it.AudioURL}})
		default:
			out = append(out, protocol.DynamicToolCallOutputContentItem{InputText: &protocol.InputTextContent{Text: it.Text}})
		}
	}
	return out
}

// CoreDynamicContent maps a client's dynamic tool output to the core.
func CoreDynamicContent(items []protocol.DynamicToolCallOutputContentItem) []core.DynamicContentItem {
	out := make([]core.DynamicContentItem, 0, len(items))
	for _, it := range items {
		switch {
		case it.InputText != nil:
			out = append(out, core.DynamicContentItem{Type: "inputText", Text: it.InputText.Text})
		case it.InputImage != nil:
			out = append(out, core.DynamicContentItem{Type: "inputImage", ImageURL: it.InputImage.ImageURL})
		case it.InputAudio != nil:
			out = append(out, core.DynamicContentItem{Type: "inputAudio", AudioURL: it.InputAudio.AudioURL})
		}
	}
	return out
}

// TurnError maps a core turn error to the wire, with the reference's
// codexErrorInfo for each kind.
func TurnError(e core.TurnError) protocol.TurnError {
	out := protocol.TurnError{Message: e.Message, CodexErrorInfo: errorInfo(e.Kind, e.HTTPStatus)}
	if e.Details != "" {
		d := e.Details
		out.AdditionalDetails = &d
	}
	return out
}

func errorInfo(kind core.ErrorKind, status int) *protocol.CodexErrorInfo {
	http := &protocol.HTTPErrorInfo{}
	if status > 0 && status < 1<<16 {
		s := uint16(status)
		http.HTTPStatusCode = &s
	}
	switch kind {
	case core.KindHTTPConnectionFailed:
		return &protocol.CodexErrorInfo{HTTPConnectionFailed: http}
	case core.KindStreamConnectionFailed:
		return &protocol.CodexErrorInfo{ResponseStreamConnectionFailed: http}
	case core.KindStreamDisconnected:
		return &protocol.CodexErrorInfo{ResponseStreamDisconnected: http}
	case core.KindTooManyFailedAttempts:
		return &protocol.CodexErrorInfo{ResponseTooManyFailedAttempts: http}
	case core.KindContextWindowExceeded:
		return protocol.ErrorInfo(protocol.ErrContextWindowExceeded)
	case core.KindUsageLimitExceeded:
		return protocol.ErrorInfo(protocol.ErrUsageLimitExceeded)
	case core.KindServerOverloaded:
		return protocol.ErrorInfo(protocol.ErrServerOverloaded)
	case core.KindModelNotFound:
		return protocol.ErrorInfo(protocol.ErrModelNotFound)
	case core.KindInternalServerError:
		return protocol.ErrorInfo(protocol.ErrInternalServerError)
	case core.KindUnauthorized:
		return protocol.ErrorInfo(protocol.ErrUnauthorized)
	case core.KindBadRequest:
		return protocol.ErrorInfo(protocol.ErrBadRequest)
	case core.KindSandboxError:
		return protocol.ErrorInfo(protocol.ErrSandboxError)
	}
	return protocol.ErrorInfo(protocol.ErrOther)
}

// TokenUsage maps a thread's token accounting.
func TokenUsage(info core.TokenUsageInfo) protocol.ThreadTokenUsage {
	out := protocol.ThreadTokenUsage{Total: breakdown(info.Total), Last: breakdown(info.Last)}
	if info.ModelContextWindow > 0 {
		w := info.ModelContextWindow
		out.ModelContextWindow = &w
	}
	return out
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) protocol.List[string] {
	if s == nil {
		return protocol.List[string]{}
	}
	return s
}

func rawOrNull(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
