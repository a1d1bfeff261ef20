package rollout

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
)

// evKind says what a decoded event_msg record does to the rebuilt thread.
type evKind uint8

const (
	evkTurnStarted evKind = iota + 1
	evkTurnComplete
	evkTurnAborted
	evkError
	evkTokenCount
	// evkItem sets an item's state, by id (a tool call's start or end, a
	// typed item).
	evkItem
	// evkStarted is a format 1 item start, kept undecoded.
	evkStarted
	// evkNewItem adds a message or compaction item; one without an id is
	// numbered, as the reference numbers them.
	evkNewItem
	// evkReasoning adds a part to a reasoning item (Raw: to its content).
	evkReasoning
	evkRollback
)

// evRec is a decoded event_msg record, whichever format wrote it.
type evRec struct {
	kind evKind
	// turnID is the turn the payload names, "" when it names none.
	turnID string
	// at is the time the payload gives (turn start or end, item times);
	// zero when it gives none.
	at       time.Time
	turnKind core.TurnKind
	duration time.Duration
	// hasDuration says duration was given.
	hasDuration bool
	lastMessage string
	err         *core.TurnError
	info        core.TokenUsageInfo
	item        core.TurnItem
	completed   bool
	started     *startedItem
	// evkReasoning: the part, its item id ("" when unnamed), raw or summary.
	text   string
	itemID string
	raw    bool
	// evkRollback
	numTurns int
}

// decodeEvent decodes an event_msg payload: the reference's schema
// (format 2, and the typed items of the reference's paginated threads) or
// agentd's format 1. A type it does not know yields an error wrapping
// ErrUnknownType; readers skip those records.
func decodeEvent(b []byte) (evRec, error) {
	typ, err := peekType(b)
	if err != nil {
		return evRec{}, fmt.Errorf("rollout: event: %w", err)
	}
	switch typ {
	case evTaskStarted:
		var w refTaskStarted
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		kind := core.TurnRegular
		if w.AgentdTurnKind != "" {
			kind = core.TurnKind(w.AgentdTurnKind)
		}
		return evRec{kind: evkTurnStarted, turnID: w.TurnID, at: fromUnix(w.StartedAt), turnKind: kind}, nil
	case evTaskComplete:
		var w refTaskComplete
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		r := evRec{kind: evkTurnComplete, turnID: w.TurnID, at: fromUnix(w.CompletedAt)}
		r.setDuration(w.DurationMs)
		if w.LastAgentMessage != nil {
			r.lastMessage = *w.LastAgentMessage
		}
		if w.Error != nil {
			e := w.Error.turnError()
			r.err = &e
		}
		return r, nil
	case evTurnAbortedRef:
		var w refTurnAborted
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		r := evRec{kind: evkTurnAborted, turnID: w.TurnID, at: fromUnix(w.CompletedAt)}
		r.setDuration(w.DurationMs)
		return r, nil
	case evErrorRef:
		return decodeError(b)
	case evTokenCountRef:
		var w refTokenCount
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		if w.Info == nil {
			// Rate limits only: nothing for the thread.
			return evRec{}, fmt.Errorf("%w: token_count without info", ErrUnknownType)
		}
		r := evRec{kind: evkTokenCount, info: core.TokenUsageInfo{Total: w.Info.Total, Last: w.Info.Last}}
		if w.Info.ModelContextWindow != nil {
			r.info.ModelContextWindow = *w.Info.ModelContextWindow
		}
		return r, nil
	case evUserMessage:
		var w refUserMessage
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkNewItem, item: userMessageFromRef(&w), completed: true}, nil
	case evAgentMessage:
		var w refAgentMessage
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		it := core.AgentMessageItem{ID: w.AgentdItemID, Text: w.Message}
		if w.Phase != nil {
			it.Phase = *w.Phase
		}
		return evRec{kind: evkNewItem, item: it, completed: true}, nil
	case evAgentReasoning, evAgentReasoningRaw:
		var w refReasoning
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkReasoning, text: w.Text, itemID: w.AgentdItemID, raw: typ == evAgentReasoningRaw}, nil
	case evExecBegin, evExecEnd:
		var w refExec
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkItem, turnID: w.TurnID, item: w.item(typ == evExecEnd), completed: typ == evExecEnd}, nil
	case evPatchBegin, evPatchEnd:
		var w refPatch
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		it := core.FileChangeItem{ID: w.CallID, Changes: changesFromRef(w.Changes), Status: core.StatusInProgress}
		if typ == evPatchEnd {
			it.Status = statusFromRef(w.Status)
			if w.Status == "" {
				it.Status = core.StatusFailed
				if w.Success != nil && *w.Success {
					it.Status = core.StatusCompleted
				}
			}
		}
		return evRec{kind: evkItem, turnID: w.TurnID, item: it, completed: typ == evPatchEnd}, nil
	case evDynamicRequest, evDynamicResponse:
		var w refDynamic
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkItem, turnID: w.TurnID, item: w.item(typ == evDynamicResponse), completed: typ == evDynamicResponse}, nil
	case evItemStartedRef, evItemCompletedRef:
		return decodeTypedItem(b, typ == evItemCompletedRef)
	case evContextCompactedRef:
		var w refContextCompacted
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkNewItem, item: core.ContextCompactionItem{ID: w.AgentdItemID}, completed: true}, nil
	case evEnteredReview:
		it, err := decodeEntered(b)
		if err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkNewItem, item: it, completed: true}, nil
	case evExitedReview:
		it, err := decodeExited(b)
		if err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkNewItem, item: it, completed: true}, nil
	case evThreadRolledBack:
		var w refRolledBack
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkRollback, numTurns: w.NumTurns}, nil
	}
	return decodeEventV1(typ, b)
}

func (r *evRec) setDuration(ms *int64) {
	if ms != nil {
		r.duration, r.hasDuration = time.Duration(*ms)*time.Millisecond, true
	}
}

// decodeError reads an error event of either format: format 1 nests the
// error in "error".
func decodeError(b []byte) (evRec, error) {
	var w struct {
		refTurnError
		V1 *wireTurnError `json:"error"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return evRec{}, err
	}
	e := w.turnError()
	if w.V1 != nil {
		e = w.V1.turnError()
	}
	return evRec{kind: evkError, err: &e}, nil
}

func (w *refExec) item(end bool) core.CommandExecutionItem {
	it := core.CommandExecutionItem{
		ID: w.CallID, Command: w.AgentdCommand, Argv: w.Command, Cwd: fileURLPath(w.Cwd), Status: core.StatusInProgress,
		Source: execSourceFromRef(w.Source), ProcessID: w.ProcessID, Actions: actionsFromRef(w.ParsedCmd),
	}
	if it.Command == "" {
		it.Command = policy.ShellQuote(w.Command)
	}
	if !end {
		return it
	}
	it.Status = statusFromRef(w.Status)
	if w.Status == "" {
		it.Status = core.StatusCompleted
	}
	if w.AggregatedOutput != nil && !w.AgentdNoOutput {
		it.AggregatedOutput = w.AggregatedOutput
	}
	if w.ExitCode != nil && !w.AgentdNoExitCode {
		it.ExitCode = w.ExitCode
	}
	if w.Duration != nil && !w.AgentdNoDuration {
		it.DurationMs = ptrTo(w.Duration.millis())
	}
	return it
}

func (w *refDynamic) item(end bool) core.DynamicToolCallItem {
	it := core.DynamicToolCallItem{ID: w.CallID, Tool: w.Tool, Namespace: w.AgentdNamespace, Status: core.StatusInProgress}
	if len(w.Arguments) > 0 && string(w.Arguments) != "null" {
		it.Arguments = w.Arguments
	}
	if !end {
		return it
	}
	ok := w.Success != nil && *w.Success
	it.Success = &ok
	it.Status = core.StatusFailed
	if ok {
		it.Status = core.StatusCompleted
	}
	if w.AgentdStatus != "" {
		it.Status = core.ItemStatus(w.AgentdStatus)
	}
	for _, c := range w.ContentItems {
		it.ContentItems = append(it.ContentItems, core.DynamicContentItem(c))
	}
	if w.Duration != nil {
		it.DurationMs = ptrTo(w.Duration.millis())
	}
	return it
}

// decodeTypedItem reads item_started and item_completed: typed items, as
// the reference writes them in its paginated threads (and agentd writes
// plans).
func decodeTypedItem(b []byte, completed bool) (evRec, error) {
	var w refItemEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return evRec{}, err
	}
	var ti refTypedItem
	if err := json.Unmarshal(w.Item, &ti); err != nil {
		return evRec{}, err
	}
	r := evRec{kind: evkItem, turnID: w.TurnID, completed: completed}
	if w.CompletedAtMs != nil && completed {
		r.at = time.UnixMilli(*w.CompletedAtMs)
	} else if w.StartedAtMs != nil {
		r.at = time.UnixMilli(*w.StartedAtMs)
	}
	switch ti.Type {
	case "UserMessage":
		r.item = core.UserMessageItem{ID: ti.ID, Content: inputsFromRef(ti.Content)}
	case "AgentMessage":
		var parts []string
		for _, c := range ti.Content {
			parts = append(parts, c.Text)
		}
		r.item = core.AgentMessageItem{ID: ti.ID, Text: strings.Join(parts, ""), Phase: ti.Phase}
	case "Reasoning":
		r.item = core.ReasoningItem{ID: ti.ID, Summary: ti.SummaryText, Content: ti.RawContent}
	case "CommandExecution":
		it := core.CommandExecutionItem{
			ID: ti.ID, Command: policy.ShellQuote(ti.Command), Argv: ti.Command, Cwd: fileURLPath(ti.Cwd),
			Status: typedStatus(ti.Status, completed), Source: execSourceFromRef(ti.Source), ProcessID: ti.ProcessID,
			Actions: actionsFromRef(ti.ParsedCmd), AggregatedOutput: ti.AggregatedOutput, ExitCode: ti.ExitCode,
		}
		if ti.Duration != nil {
			it.DurationMs = ptrTo(ti.Duration.millis())
		}
		r.item = it
	case "FileChange":
		r.item = core.FileChangeItem{ID: ti.ID, Changes: changesFromRef(ti.Changes), Status: typedStatus(ti.Status, completed)}
	case "Plan":
		r.item = core.PlanItem{ID: ti.ID, Text: ti.Text}
	case "ContextCompaction":
		r.item = core.ContextCompactionItem{ID: ti.ID}
	case "WebSearch":
		r.item = core.WebSearchItem{ID: ti.ID, Query: ti.Query, Action: searchActionFromRef(ti.Action)}
	case "ImageView":
		r.item = core.ImageViewItem{ID: ti.ID, Path: fileURLPath(ti.Path)}
	case "ImageGeneration":
		var image string
		if err := decodeResult(ti, &image); err != nil {
			return evRec{}, err
		}
		r.item = core.ImageGenerationItem{ID: ti.ID, Status: ti.Status, RevisedPrompt: ti.RevisedPrompt, Result: image, SavedPath: ti.SavedPath}
	case "McpToolCall":
		it, err := mcpItemFromRef(ti, completed)
		if err != nil {
			return evRec{}, err
		}
		r.item = it
	case "EnteredReviewMode":
		it, err := decodeEntered(w.Item)
		if err != nil {
			return evRec{}, err
		}
		r.item = it
	case "ExitedReviewMode":
		it, err := decodeExited(w.Item)
		if err != nil {
			return evRec{}, err
		}
		r.item = it
	default:
		return evRec{}, fmt.Errorf("%w: turn item %q", ErrUnknownType, ti.Type)
	}
	return r, nil
}

func mcpItemFromRef(ti refTypedItem, completed bool) (core.McpToolCallItem, error) {
	it := core.McpToolCallItem{ID: ti.ID, Server: ti.Server, Tool: ti.Tool, Arguments: ti.Arguments,
		Status: typedStatus(ti.Status, completed), ReadOnly: ti.ReadOnlyHint}
	if string(it.Arguments) == "null" {
		it.Arguments = nil
	}
	var r *refMcpResult
	if err := decodeResult(ti, &r); err != nil {
		return core.McpToolCallItem{}, err
	}
	if r != nil {
		it.Result = &core.McpToolResult{Content: r.Content, StructuredContent: r.StructuredContent, Meta: r.Meta}
	}
	if ti.Error != nil {
		it.Error = ti.Error.Message
	}
	if ti.Duration != nil {
		it.DurationMs = ptrTo(ti.Duration.millis())
	}
	return it, nil
}

// decodeResult reads a typed item's "result", whose shape depends on the
// item's type (an MCP result object, an image's base64 string); absent
// and null leave v as it is.
func decodeResult(ti refTypedItem, v any) error {
	if len(ti.Result) == 0 || string(ti.Result) == "null" {
		return nil
	}
	if err := json.Unmarshal(ti.Result, v); err != nil {
		return fmt.Errorf("rollout: %s item result: %w", ti.Type, err)
	}
	return nil
}

func typedStatus(s string, completed bool) core.ItemStatus {
	switch {
	case s != "":
		return statusFromRef(s)
	case completed:
		return core.StatusCompleted
	}
	return core.StatusInProgress
}

func fromUnix(secs *int64) time.Time {
	if secs == nil || *secs <= 0 {
		return time.Time{}
	}
	return time.Unix(*secs, 0)
}
