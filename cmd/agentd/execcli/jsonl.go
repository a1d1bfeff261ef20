package execcli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// jsonlSink writes the events of codex exec --json, one JSON object per
// line, mapping the server's notifications as codex exec maps them:
//
//   - agent messages and reasoning are one item.completed each (reasoning
//     only when its summary has text);
//   - other items are item.started, then item.completed with the same id
//     (an item still open at the turn's end is completed then);
//   - a plan update is a todo_list item, started, then updated, completed
//     at the turn's end;
//   - an error notification is an error event; a configuration warning,
//     a deprecation notice or a model reroute is an error item;
//   - the turn's end is turn.completed with the thread's token usage, or
//     turn.failed with its error (an interrupted turn has neither).
type jsonlSink struct {
	enc *json.Encoder
	// next numbers the items; ids maps the server's item ids to ours
	// while they are open.
	next  int
	ids   map[string]string
	todo  *todoListItem
	usage Usage
	// lastError is the last error notification's text: a failed turn
	// without an error of its own reports it.
	lastError string
}

func newJSONLSink(w io.Writer) *jsonlSink {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonlSink{enc: enc, ids: map[string]string{}}
}

func (s *jsonlSink) emit(ev any) {
	// An encoding error cannot happen with these types; a write error
	// (stdout closed) leaves nothing to tell.
	_ = s.enc.Encode(ev)
}

func (s *jsonlSink) newID() string {
	id := fmt.Sprintf("item_%d", s.next)
	s.next++
	return id
}

func (s *jsonlSink) threadStarted(info threadInfo, _ string) {
	s.emit(threadStarted{Type: "thread.started", ThreadID: info.ID})
}

func (s *jsonlSink) notification(method string, params json.RawMessage) {
	switch method {
	case "turn/started":
		s.emit(turnStarted{Type: "turn.started"})
	case "item/started":
		var p struct{ Item wireItem }
		if json.Unmarshal(params, &p) != nil || p.Item.Type == "agentMessage" || p.Item.Type == "reasoning" || mapItem(p.Item, "") == nil {
			return
		}
		if p.Item.Type == "fileChange" {
			if _, open := s.ids[p.Item.ID]; open {
				s.itemEvent("item.updated", p.Item, s.ids[p.Item.ID])
				return
			}
		}
		s.itemEvent("item.started", p.Item, s.startedID(p.Item.ID))
	case "item/completed":
		var p struct{ Item wireItem }
		if json.Unmarshal(params, &p) != nil {
			return
		}
		s.completed(p.Item)
	case "item/fileChange/patchUpdated":
		var p struct {
			ItemID  string       `json:"itemId"`
			Changes []wireChange `json:"changes"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		it := wireItem{Type: "fileChange", ID: p.ItemID, Changes: p.Changes, Status: "inProgress"}
		s.itemEvent("item.updated", it, s.startedID(p.ItemID))
	case "turn/plan/updated":
		var p struct {
			Plan []struct {
				Step   string `json:"step"`
				Status string `json:"status"`
			} `json:"plan"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		items := make([]todo, len(p.Plan))
		for i, st := range p.Plan {
			items[i] = todo{Text: st.Step, Completed: st.Status == "completed"}
		}
		if s.todo == nil {
			s.todo = &todoListItem{itemHead: itemHead{ID: s.newID(), Type: "todo_list"}, Items: items}
			s.emit(itemEvent{Type: "item.started", Item: *s.todo})
			return
		}
		s.todo.Items = items
		s.emit(itemEvent{Type: "item.updated", Item: *s.todo})
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage struct {
				Total struct {
					InputTokens           int64 `json:"inputTokens"`
					CachedInputTokens     int64 `json:"cachedInputTokens"`
					CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
					OutputTokens          int64 `json:"outputTokens"`
					ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
				} `json:"total"`
			} `json:"tokenUsage"`
		}
		if json.Unmarshal(params, &p) == nil {
			t := p.TokenUsage.Total
			s.usage = Usage{InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens,
				CacheWriteInputTokens: t.CacheWriteInputTokens, OutputTokens: t.OutputTokens, ReasoningOutputTokens: t.ReasoningOutputTokens}
		}
	case "error":
		var p struct{ Error wireTurnError }
		if json.Unmarshal(params, &p) != nil {
			return
		}
		s.lastError = withDetails(p.Error.Message, p.Error.AdditionalDetails)
		s.emit(errorEvent{Type: "error", Message: s.lastError})
	case "configWarning", "deprecationNotice":
		var p struct {
			Summary string  `json:"summary"`
			Details *string `json:"details"`
		}
		if json.Unmarshal(params, &p) == nil {
			s.errorItem(withDetails(p.Summary, p.Details))
		}
	case "model/rerouted":
		var p struct {
			FromModel string `json:"fromModel"`
			ToModel   string `json:"toModel"`
			Reason    string `json:"reason"`
		}
		if json.Unmarshal(params, &p) == nil {
			s.errorItem(fmt.Sprintf("model rerouted: %s -> %s (%s)", p.FromModel, p.ToModel, p.Reason))
		}
	}
}

// warning is a problem of exec's own (not the server's), shown as an
// error item.
func (s *jsonlSink) warning(msg string) { s.errorItem(msg) }

func (s *jsonlSink) errorItem(msg string) {
	s.emit(itemEvent{Type: "item.completed", Item: errorItem{itemHead: itemHead{ID: s.newID(), Type: "error"}, Message: msg}})
}

// startedID is the id of an item that starts (or is updated before it
// completes): a new one, kept until it completes.
func (s *jsonlSink) startedID(raw string) string {
	if id, ok := s.ids[raw]; ok {
		return id
	}
	id := s.newID()
	s.ids[raw] = id
	return id
}

func (s *jsonlSink) completed(it wireItem) {
	switch it.Type {
	case "agentMessage":
		s.itemEvent("item.completed", it, s.newID())
		return
	case "reasoning":
		if strings.TrimSpace(strings.Join(it.Summary, "\n")) == "" {
			return
		}
		s.itemEvent("item.completed", it, s.newID())
		return
	}
	if mapItem(it, "") == nil {
		return
	}
	id, ok := s.ids[it.ID]
	if ok {
		delete(s.ids, it.ID)
	} else {
		id = s.newID()
	}
	s.itemEvent("item.completed", it, id)
}

func (s *jsonlSink) itemEvent(typ string, it wireItem, id string) {
	if item := mapItem(it, id); item != nil {
		s.emit(itemEvent{Type: typ, Item: item})
	}
}

func (s *jsonlSink) finish(o outcome) {
	if s.todo != nil {
		s.emit(itemEvent{Type: "item.completed", Item: *s.todo})
		s.todo = nil
	}
	for _, it := range o.items {
		if _, open := s.ids[it.ID]; open {
			s.completed(it)
		}
	}
	switch o.status {
	case "completed":
		s.emit(turnCompleted{Type: "turn.completed", Usage: s.usage})
	case "failed":
		msg := o.errMessage
		if msg == "" {
			msg = s.lastError
		}
		if msg == "" {
			msg = "turn failed"
		}
		s.emit(turnFailed{Type: "turn.failed", Error: threadError{Message: msg}})
	}
}

// mapItem is the event item for a protocol item, or nil for the kinds
// codex exec does not show (user messages, images, compactions, …).
func mapItem(it wireItem, id string) any {
	head := func(typ string) itemHead { return itemHead{ID: id, Type: typ} }
	switch it.Type {
	case "agentMessage":
		return textItem{itemHead: head("agent_message"), Text: it.Text}
	case "reasoning":
		return textItem{itemHead: head("reasoning"), Text: strings.Join(it.Summary, "\n")}
	case "commandExecution":
		out := ""
		if it.AggregatedOutput != nil {
			out = *it.AggregatedOutput
		}
		return commandItem{itemHead: head("command_execution"), Command: it.Command, AggregatedOutput: out, ExitCode: it.ExitCode, Status: snake(it.Status)}
	case "fileChange":
		changes := make([]fileUpdate, len(it.Changes))
		for i, c := range it.Changes {
			changes[i] = fileUpdate{Path: c.Path, Kind: c.Kind.Type}
		}
		status := snake(it.Status)
		if status == "declined" {
			status = "failed"
		}
		return fileChangeItem{itemHead: head("file_change"), Changes: changes, Status: status}
	case "mcpToolCall":
		m := mcpItem{itemHead: head("mcp_tool_call"), Server: it.Server, Tool: it.Tool, Arguments: it.Arguments, Error: it.Error, Status: snake(it.Status)}
		if it.Result != nil {
			content := it.Result.Content
			if content == nil {
				content = []any{}
			}
			m.Result = &mcpResult{Content: content, StructuredContent: it.Result.StructuredContent}
		}
		return m
	case "webSearch":
		w := webSearchItem{itemHead: head("web_search"), Query: it.Query}
		if len(it.Action) > 0 && string(it.Action) != "null" {
			w.Action = it.Action
		}
		return w
	}
	return nil
}
