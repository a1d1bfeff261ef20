package rollout

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// persistDecision says whether an event is kept in the rollout.
type persistDecision uint8

const (
	decisionUnknown persistDecision = iota
	decisionKeep
	decisionDrop
)

// decide is the one place that says which events the rollout keeps. Every
// variant is listed: a new variant falls to decisionUnknown, which a test
// catches, rather than being dropped silently.
func decide(msg core.EventMsg) persistDecision {
	switch msg.(type) {
	case core.TurnStarted, core.TurnComplete, core.TurnAborted,
		core.ItemStarted, core.ItemCompleted,
		core.Error, core.TokenCount:
		return decisionKeep
	case core.ContextCompacted:
		return decisionDrop // the compacted record (RecordCompaction) and the item carry it
	case core.SessionConfigured:
		return decisionDrop // session_meta and turn_context carry it
	case core.AgentMessageDelta, core.PlanDelta, core.ReasoningSummaryPartAdded, core.ReasoningSummaryDelta,
		core.ReasoningRawDelta, core.ExecCommandOutputDelta, core.PatchPreview:
		return decisionDrop // volatile: the completed item holds the result
	case core.TerminalInteraction:
		return decisionDrop // as the reference: the command's item holds its output
	case core.AgentMessage, core.ExecCommandBegin, core.ExecCommandEnd,
		core.PatchApplyBegin, core.PatchApplyEnd:
		return decisionDrop // first-generation duplicates of item events
	case core.ExecApprovalRequest, core.PatchApprovalRequest, core.UserInputRequest,
		core.DynamicToolCallRequest:
		return decisionDrop // pending requests die with the process; the item records the outcome
	case core.McpToolCallProgress:
		return decisionDrop // volatile: the completed item holds the result
	case core.McpToolApprovalRequest, core.McpElicitationRequest, core.McpElicitationEnded:
		return decisionDrop // pending requests die with the process; the item records the outcome
	case core.PlanUpdate, core.TurnDiff:
		return decisionDrop // derivable or re-sent on the next turn; not part of the rebuilt view
	case core.StreamError, core.Warning, core.ModelReroute:
		return decisionDrop // transient notices
	case core.RawResponseItem:
		return decisionDrop // the item itself arrives through RecordItem
	case core.RateLimits:
		return decisionDrop // account state, not the thread's; the next response reports it again
	case core.RawResponseCompleted:
		return decisionDrop // TokenCount carries the usage
	case core.ShutdownComplete:
		return decisionDrop // a process fact, not a thread fact
	}
	return decisionUnknown
}

// Keeps reports whether the rollout records events of msg's variant.
func Keeps(msg core.EventMsg) bool { return decide(msg) == decisionKeep }

// eventEncoder appends the event_msg records of kept events, in the
// reference's schema, to a buffer.
type eventEncoder struct {
	threadID string
	buf      []byte
	at       time.Time
	turnID   string
}

// appendEvent appends the records of one kept event to dst: none (an item
// start the reference does not record), one, or several (one per part of a
// reasoning item). Times are whole seconds, as the reference keeps them;
// the record's own timestamp has the milliseconds.
func appendEvent(dst []byte, threadID string, at time.Time, ev core.Event) ([]byte, error) {
	e := eventEncoder{threadID: threadID, buf: dst, at: at, turnID: ev.TurnID}
	var err error
	switch m := ev.Msg.(type) {
	case core.TurnStarted:
		kind := core.ModeDefault
		if m.Context.Mode.Kind != "" {
			kind = m.Context.Mode.Kind
		}
		w := refTaskStarted{Type: evTaskStarted, TurnID: ev.TurnID, ModelContextWindow: m.ModelContextWindow, CollaborationModeKind: string(kind)}
		w.StartedAt = unixPtr(m.StartedAt)
		if m.Kind != "" && m.Kind != core.TurnRegular {
			w.AgentdTurnKind = string(m.Kind)
		}
		err = e.add(w)
	case core.TurnComplete:
		w := refTaskComplete{Type: evTaskComplete, TurnID: ev.TurnID, CompletedAt: unixPtr(m.CompletedAt), DurationMs: ptrTo(m.Duration.Milliseconds())}
		if m.LastAgentMessage != "" {
			w.LastAgentMessage = &m.LastAgentMessage
		}
		if m.Error != nil {
			w.Error = turnErrorToRef(*m.Error)
		}
		err = e.add(w)
	case core.TurnAborted:
		w := refTurnAborted{Type: evTurnAbortedRef, TurnID: ev.TurnID, Reason: string(core.AbortInterrupted),
			CompletedAt: unixPtr(m.CompletedAt), DurationMs: ptrTo(m.Duration.Milliseconds())}
		if m.Reason != "" && m.Reason != core.AbortInterrupted {
			w.AgentdReason = string(m.Reason)
		}
		err = e.add(w)
	case core.Error:
		err = e.add(refErrorEvent{Type: evErrorRef, refTurnError: *turnErrorToRef(m.Err)})
	case core.TokenCount:
		info := &refTokenInfo{Total: m.Info.Total, Last: m.Info.Last}
		if m.Info.ModelContextWindow > 0 {
			info.ModelContextWindow = &m.Info.ModelContextWindow
		}
		err = e.add(refTokenCount{Type: evTokenCountRef, Info: info, RateLimits: nullJSON})
	case core.ItemStarted:
		err = e.itemStarted(m.Item)
	case core.ItemCompleted:
		err = e.itemCompleted(m.Item)
	default:
		return dst, fmt.Errorf("rollout: event %T is not recorded", ev.Msg)
	}
	if err != nil {
		return dst, err
	}
	return e.buf, nil
}

var nullJSON = []byte("null")

func (e *eventEncoder) add(v any) error {
	payload, err := model.MarshalNoEscape(v)
	if err != nil {
		return err
	}
	e.buf = appendLine(e.buf, e.at, LineEventMsg, e.turnID, payload)
	return nil
}

// itemStarted records the start of the items a crash could leave running
// (tool calls); messages and reasoning are recorded once complete.
func (e *eventEncoder) itemStarted(it core.TurnItem) error {
	switch v := it.(type) {
	case core.CommandExecutionItem:
		return e.add(e.execBegin(v))
	case core.FileChangeItem:
		f := false
		return e.add(refPatch{Type: evPatchBegin, CallID: v.ID, TurnID: e.turnID, AutoApproved: &f, Changes: changesToRef(v.Changes)})
	case core.DynamicToolCallItem:
		return e.add(refDynamic{Type: evDynamicRequest, CallID: v.ID, TurnID: e.turnID, Tool: v.Tool,
			Arguments: v.Arguments, AgentdNamespace: v.Namespace})
	case core.McpToolCallItem:
		return e.typedItem(evItemStartedRef, mcpItemToRef(v))
	case core.UserMessageItem, core.AgentMessageItem, core.ReasoningItem, core.PlanItem, core.ContextCompactionItem,
		core.WebSearchItem, core.ImageViewItem, core.ImageGenerationItem,
		core.EnteredReviewModeItem, core.ExitedReviewModeItem:
		return nil
	case nil:
		return fmt.Errorf("rollout: nil turn item")
	}
	return fmt.Errorf("rollout: cannot encode turn item %T", it)
}

func (e *eventEncoder) itemCompleted(it core.TurnItem) error {
	switch v := it.(type) {
	case core.UserMessageItem:
		return e.add(userMessageToRef(v))
	case core.AgentMessageItem:
		if v.Text == "" {
			return nil // the reference drops empty messages too
		}
		w := refAgentMessage{Type: evAgentMessage, Message: v.Text, MemoryCitation: nullJSON, AgentdItemID: v.ID}
		if v.Phase != "" {
			w.Phase = &v.Phase
		}
		return e.add(w)
	case core.ReasoningItem:
		for _, s := range v.Summary {
			if err := e.add(refReasoning{Type: evAgentReasoning, Text: s, AgentdItemID: v.ID}); err != nil {
				return err
			}
		}
		for _, s := range v.Content {
			if err := e.add(refReasoning{Type: evAgentReasoningRaw, Text: s, AgentdItemID: v.ID}); err != nil {
				return err
			}
		}
		return nil
	case core.CommandExecutionItem:
		return e.add(e.execEnd(v))
	case core.FileChangeItem:
		empty, ok := "", v.Status == core.StatusCompleted
		return e.add(refPatch{Type: evPatchEnd, CallID: v.ID, TurnID: e.turnID, Changes: changesToRef(v.Changes),
			Stdout: &empty, Stderr: &empty, Success: &ok, Status: statusToRef(v.Status)})
	case core.DynamicToolCallItem:
		w := refDynamic{Type: evDynamicResponse, CallID: v.ID, TurnID: e.turnID, Tool: v.Tool, Arguments: v.Arguments,
			AgentdNamespace: v.Namespace, ContentItems: []refDynContent{}}
		for _, c := range v.ContentItems {
			w.ContentItems = append(w.ContentItems, refDynContent(c))
		}
		ok := v.Status == core.StatusCompleted
		if v.Success != nil {
			ok = *v.Success
		}
		w.Success = &ok
		if (ok && v.Status != core.StatusCompleted) || (!ok && v.Status != core.StatusFailed) {
			w.AgentdStatus = string(v.Status)
		}
		if v.DurationMs != nil {
			w.Duration = durationToRef(*v.DurationMs)
		}
		return e.add(w)
	case core.PlanItem:
		return e.typedItem(evItemCompletedRef, refPlanItem{Type: "Plan", ID: v.ID, Text: v.Text})
	case core.WebSearchItem:
		return e.typedItem(evItemCompletedRef, webSearchToRef(v))
	case core.ImageViewItem:
		return e.typedItem(evItemCompletedRef, refImageViewItem{Type: "ImageView", ID: v.ID, Path: "file://" + v.Path})
	case core.ImageGenerationItem:
		return e.typedItem(evItemCompletedRef, imageGenerationToRef(v))
	case core.McpToolCallItem:
		return e.typedItem(evItemCompletedRef, mcpItemToRef(v))
	case core.ContextCompactionItem:
		return e.add(refContextCompacted{Type: evContextCompactedRef, AgentdItemID: v.ID})
	case core.EnteredReviewModeItem:
		return e.add(enteredToRef(v))
	case core.ExitedReviewModeItem:
		return e.add(exitedToRef(v))
	case nil:
		return fmt.Errorf("rollout: nil turn item")
	}
	return fmt.Errorf("rollout: cannot encode turn item %T", it)
}

// typedItem adds an item_started or item_completed event holding item.
func (e *eventEncoder) typedItem(typ string, item any) error {
	b, err := model.MarshalNoEscape(item)
	if err != nil {
		return err
	}
	return e.add(refItemEvent{Type: typ, ThreadID: e.threadID, TurnID: e.turnID, Item: b})
}

func mcpItemToRef(v core.McpToolCallItem) refMcpItem {
	w := refMcpItem{Type: "McpToolCall", ID: v.ID, Server: v.Server, Tool: v.Tool, Arguments: v.Arguments,
		ReadOnlyHint: v.ReadOnly, Status: statusToRef(v.Status)}
	if len(w.Arguments) == 0 {
		w.Arguments = nullJSON
	}
	if r := v.Result; r != nil {
		w.Result = &refMcpResult{Content: r.Content, StructuredContent: r.StructuredContent, Meta: r.Meta}
		if w.Result.Content == nil {
			w.Result.Content = []json.RawMessage{}
		}
	}
	if v.Error != "" {
		w.Error = &refMcpError{Message: v.Error}
	}
	if v.DurationMs != nil {
		w.Duration = durationToRef(*v.DurationMs)
	}
	return w
}

// writtenTyped reports whether a completed item is recorded as a typed
// item (typedItem) rather than as the reference's events.
func writtenTyped(it core.TurnItem) bool {
	switch it.(type) {
	case core.PlanItem, core.WebSearchItem, core.ImageViewItem, core.ImageGenerationItem:
		return true
	}
	return false
}

func (e *eventEncoder) execBegin(v core.CommandExecutionItem) refExec {
	w := refExec{
		Type: evExecBegin, CallID: v.ID, ProcessID: v.ProcessID, TurnID: e.turnID, Command: v.Argv, Cwd: v.Cwd,
		ParsedCmd: actionsToRef(v.Actions), Source: execSourceToRef(v.Source),
	}
	if w.Command == nil {
		w.Command = []string{}
	}
	if v.Command != policy.ShellQuote(v.Argv) {
		w.AgentdCommand = v.Command
	}
	return w
}

func (e *eventEncoder) execEnd(v core.CommandExecutionItem) refExec {
	w := e.execBegin(v)
	w.Type = evExecEnd
	empty := ""
	w.Stdout, w.Stderr, w.FormattedOutput = &empty, &empty, &empty
	out, code, dur := "", -1, int64(0)
	if v.AggregatedOutput != nil {
		out = *v.AggregatedOutput
	} else {
		w.AgentdNoOutput = true
	}
	if v.ExitCode != nil {
		code = *v.ExitCode
	} else {
		w.AgentdNoExitCode = true
	}
	if v.DurationMs != nil {
		dur = *v.DurationMs
	} else {
		w.AgentdNoDuration = true
	}
	w.AggregatedOutput, w.ExitCode, w.Duration = &out, &code, durationToRef(dur)
	w.Status = statusToRef(v.Status)
	return w
}

func unixPtr(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	return ptrTo(t.Unix())
}

func ptrTo[T any](v T) *T { return &v }

// nonNil returns s, or an empty slice for nil: the reference's arrays are
// never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
