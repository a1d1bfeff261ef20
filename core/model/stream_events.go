package model

import (
	"encoding/json"
	"strings"

	"go.uber.org/zap"
)

// eventFields is the top level of one event's JSON as far as any event type
// needs it. Strings are usually substrings of the event data.
type eventFields struct {
	typ          string
	itemID       string
	delta        string
	summaryIndex int
	contentIndex int
	item         string // raw JSON of "item"
	response     string // raw JSON of "response"
	code         string // error event
	message      string // error event
	errorObj     string // raw JSON of "error" (error event, nested form)
}

// scanEvent fills f from the event data in one pass.
func scanEvent(data string, f *eventFields) error {
	*f = eventFields{}
	it := startObject(data, 0)
	for {
		key, ok := it.next()
		if !ok {
			break
		}
		switch key {
		case "type":
			f.typ = it.stringValue()
		case "item_id":
			f.itemID = it.stringValue()
		case "delta":
			f.delta = it.stringValue()
		case "summary_index":
			f.summaryIndex = it.intValue()
		case "content_index":
			f.contentIndex = it.intValue()
		case "item":
			f.item = it.rawValue()
		case "response":
			f.response = it.rawValue()
		case "code":
			f.code = it.stringValue()
		case "message":
			f.message = it.stringValue()
		case "error":
			f.errorObj = it.rawValue()
		default:
			it.skip()
		}
	}
	return it.end()
}

// droppedEventTypes are events the parser reads and deliberately ignores:
// each repeats what another event already carries (the final text is in
// output_item.done, arguments arrive whole in function_call items, …).
// Their counts are logged when the stream ends.
var droppedEventTypes = [...]string{
	"response.in_progress",
	"response.queued",
	"response.output_text.done",
	"response.output_text.annotation.added",
	"response.content_part.added",
	"response.content_part.done",
	"response.function_call_arguments.delta",
	"response.function_call_arguments.done",
	"response.custom_tool_call_input.done",
	"response.reasoning_summary_text.done",
	"response.reasoning_summary_part.done",
	"response.reasoning_text.done",
	"response.refusal.delta",
	"response.refusal.done",
	"hosted tool progress", // response.web_search_call.*, response.image_generation_call.*, …
	"keepalive",
}

// droppedIndex returns the index of typ in droppedEventTypes, or -1.
func droppedIndex(typ string) int {
	switch typ {
	case "response.in_progress":
		return 0
	case "response.queued":
		return 1
	case "response.output_text.done":
		return 2
	case "response.output_text.annotation.added":
		return 3
	case "response.content_part.added":
		return 4
	case "response.content_part.done":
		return 5
	case "response.function_call_arguments.delta":
		return 6
	case "response.function_call_arguments.done":
		return 7
	case "response.custom_tool_call_input.done":
		return 8
	case "response.reasoning_summary_text.done":
		return 9
	case "response.reasoning_summary_part.done":
		return 10
	case "response.reasoning_text.done":
		return 11
	case "response.refusal.delta":
		return 12
	case "response.refusal.done":
		return 13
	case "keepalive":
		return 15
	}
	for _, p := range [...]string{"response.web_search_call.", "response.file_search_call.",
		"response.image_generation_call.", "response.code_interpreter_call", "response.mcp_"} {
		if strings.HasPrefix(typ, p) {
			return 14
		}
	}
	return -1
}

// handle turns one SSE event into a StreamEvent (emit) or nothing, or a
// terminal error. The type comes from the JSON "type", falling back to the
// SSE event name for servers that send only one of them.
func (s *sseStream) handle(sseType, data string) (StreamEvent, bool, error) {
	f := &s.fields
	scanErr := scanEvent(data, f)
	typ := f.typ
	if typ == "" || scanErr != nil {
		typ = sseType
	}
	var ev StreamEvent
	switch typ {
	case "response.output_text.delta":
		ev = StreamEvent{Kind: EventOutputTextDelta, ItemID: f.itemID, Delta: f.delta, ContentIndex: f.contentIndex}
	case "response.reasoning_summary_text.delta":
		ev = StreamEvent{Kind: EventReasoningSummaryDelta, ItemID: f.itemID, Delta: f.delta, SummaryIndex: f.summaryIndex}
	case "response.reasoning_text.delta":
		ev = StreamEvent{Kind: EventReasoningTextDelta, ItemID: f.itemID, Delta: f.delta, ContentIndex: f.contentIndex}
	case "response.custom_tool_call_input.delta":
		ev = StreamEvent{Kind: EventCustomToolCallInputDelta, ItemID: f.itemID, Delta: f.delta}
	case "response.reasoning_summary_part.added":
		ev = StreamEvent{Kind: EventReasoningSummaryPartAdded, ItemID: f.itemID, SummaryIndex: f.summaryIndex}
	case "response.output_item.added", "response.output_item.done":
		if scanErr != nil {
			break
		}
		item, err := ParseResponseItem([]byte(f.item))
		if err != nil {
			return ev, false, malformed(typ, err)
		}
		ev = StreamEvent{Kind: EventOutputItemAdded, Item: item, ItemID: item.ID()}
		if typ == "response.output_item.done" {
			ev.Kind = EventOutputItemDone
		}
	case "response.created":
		if scanErr != nil {
			break
		}
		r, err := s.scanResponse(f.response)
		if err != nil {
			return ev, false, malformed(typ, err)
		}
		ev = StreamEvent{Kind: EventCreated, ResponseID: r.id, Model: s.rerouted(r.headerModel)}
	case "response.completed":
		if scanErr != nil {
			break
		}
		r, err := s.scanResponse(f.response)
		if err != nil {
			return ev, false, malformed(typ, err)
		}
		ev = StreamEvent{Kind: EventCompleted, ResponseID: r.id, Model: s.rerouted(""), EndTurn: r.endTurn}
		if r.usage != "" {
			var u usageJSON
			if err := json.Unmarshal([]byte(r.usage), &u); err != nil {
				return ev, false, malformed(typ, err)
			}
			ev.Usage = u.tokenUsage()
			ev.RawUsage = []byte(r.usage)
		}
	case "response.failed":
		if scanErr != nil {
			break
		}
		r, err := s.scanResponse(f.response)
		if err != nil {
			return ev, false, malformed(typ, err)
		}
		var ae apiError
		if r.errorObj != "" {
			if err := json.Unmarshal([]byte(r.errorObj), &ae); err != nil {
				return ev, false, malformed(typ, err)
			}
		}
		return ev, false, classifyFailure(ae)
	case "response.incomplete":
		if scanErr != nil {
			break
		}
		r, err := s.scanResponse(f.response)
		if err != nil {
			return ev, false, malformed(typ, err)
		}
		reason := r.incompleteReason
		if reason == "" {
			reason = "unknown"
		}
		e := &Error{Kind: ErrResponseIncomplete, Code: reason,
			Message: "Incomplete response returned, reason: " + reason}
		if reason == "content_filter" {
			e.Kind = ErrContentPolicy
		}
		return ev, false, e
	case "error":
		if scanErr != nil {
			break
		}
		ae := apiError{Code: f.code, Message: f.message}
		if f.errorObj != "" {
			if err := json.Unmarshal([]byte(f.errorObj), &ae); err != nil {
				return ev, false, malformed(typ, err)
			}
		}
		return ev, false, classifyFailure(ae)
	default:
		if i := droppedIndex(typ); i >= 0 {
			s.dropped[i]++
			return ev, false, nil
		}
		if data == "" || data == "[DONE]" {
			return ev, false, nil
		}
		if s.unknown == nil {
			s.unknown = map[string]int{}
		}
		if s.unknown[typ] == 0 {
			s.log.Info("unknown model stream event ignored", zap.String("type", typ),
				zap.String("thread", s.threadID), zap.String("turn", s.turnID))
		}
		s.unknown[typ]++
		return ev, false, nil
	}
	if scanErr != nil {
		return ev, false, malformed(typ, scanErr)
	}
	return ev, true, nil
}

func malformed(typ string, err error) *Error {
	return &Error{Kind: ErrStreamDisconnected, Message: "malformed " + typ + " event: " + err.Error(), Err: err}
}

// responseFields is what the parser reads of a "response" object. The
// object also repeats the whole output, which can be large: it is skipped,
// not decoded.
type responseFields struct {
	id               string
	headerModel      string // "headers" → OpenAI-Model (response.created)
	usage            string // raw JSON
	endTurn          *bool
	errorObj         string // raw JSON
	incompleteReason string
}

// scanResponse reads raw (a "response" object, or empty) and records the id.
func (s *sseStream) scanResponse(raw string) (responseFields, error) {
	var r responseFields
	if raw == "" {
		return r, nil
	}
	it := startObject(raw, 0)
	for {
		key, ok := it.next()
		if !ok {
			break
		}
		switch key {
		case "id":
			r.id = it.stringValue()
		case "headers":
			// Some servers repeat the response headers in
			// response.created; the reference reads the served model
			// from there too. The body's own "model" field is not read.
			if h := it.rawValue(); h != "" {
				var hs map[string]any
				if err := json.Unmarshal([]byte(h), &hs); err == nil {
					for k, v := range hs {
						if str, ok := v.(string); ok && strings.EqualFold(k, servedModelHeader) {
							r.headerModel = strings.TrimSpace(str)
						}
					}
				}
			}
		case "usage":
			r.usage = it.rawValue()
		case "end_turn":
			if v, ok := it.boolValue(); ok {
				r.endTurn = &v
			}
		case "error":
			r.errorObj = it.rawValue()
		case "incomplete_details":
			if d := it.rawValue(); d != "" {
				var det struct {
					Reason string `json:"reason"`
				}
				if err := json.Unmarshal([]byte(d), &det); err != nil {
					return r, err
				}
				r.incompleteReason = det.Reason
			}
		default:
			it.skip()
		}
	}
	if err := it.end(); err != nil {
		return r, err
	}
	if r.id != "" {
		s.responseID = r.id
	}
	return r, nil
}

// servedModelHeader is the response header that names the model that
// served the request.
const servedModelHeader = "OpenAI-Model"

// rerouted returns the model that served the request when it is not the
// requested one (compared without regard to case, as the reference does),
// else "". The OpenAI-Model response header wins over inBody, the same
// header repeated inside response.created.
func (s *sseStream) rerouted(inBody string) string {
	served := s.servedModel
	if served == "" {
		served = inBody
	}
	if served == "" || strings.EqualFold(served, s.model) {
		return ""
	}
	return served
}

// usageJSON is the usage object of response.completed.
type usageJSON struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

func (u *usageJSON) tokenUsage() *TokenUsage {
	t := &TokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if u.InputTokensDetails != nil {
		t.CachedInputTokens = u.InputTokensDetails.CachedTokens
	}
	if u.OutputTokensDetails != nil {
		t.ReasoningOutputTokens = u.OutputTokensDetails.ReasoningTokens
	}
	return t
}
