package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// Event type tags of event_msg records.
const (
	evTurnStarted      = "turnStarted"
	evTurnComplete     = "turnComplete"
	evTurnAborted      = "turnAborted"
	evItemStarted      = "itemStarted"
	evItemCompleted    = "itemCompleted"
	evError            = "error"
	evTokenCount       = "tokenCount"
	evContextCompacted = "contextCompacted"
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
		core.Error, core.TokenCount, core.ContextCompacted:
		return decisionKeep
	case core.SessionConfigured:
		return decisionDrop // session_meta and turn_context carry it
	case core.AgentMessageDelta, core.ReasoningSummaryPartAdded, core.ReasoningSummaryDelta,
		core.ReasoningRawDelta, core.ExecCommandOutputDelta, core.PatchPreview:
		return decisionDrop // volatile: the completed item holds the result
	case core.AgentMessage, core.ExecCommandBegin, core.ExecCommandEnd,
		core.PatchApplyBegin, core.PatchApplyEnd:
		return decisionDrop // first-generation duplicates of item events
	case core.ExecApprovalRequest, core.PatchApprovalRequest, core.UserInputRequest,
		core.DynamicToolCallRequest:
		return decisionDrop // pending requests die with the process; the item records the outcome
	case core.PlanUpdate, core.TurnDiff:
		return decisionDrop // derivable or re-sent on the next turn; not part of the rebuilt view
	case core.StreamError, core.Warning, core.ModelReroute:
		return decisionDrop // transient notices
	case core.RawResponseItem:
		return decisionDrop // the item itself arrives through RecordItem
	case core.RawResponseCompleted:
		return decisionDrop // TokenCount carries the usage
	case core.RateLimits:
		return decisionDrop // account state, not the thread's; the next response reports it again
	case core.ShutdownComplete:
		return decisionDrop // a process fact, not a thread fact
	}
	return decisionUnknown
}

// Keeps reports whether the rollout records events of msg's variant.
func Keeps(msg core.EventMsg) bool { return decide(msg) == decisionKeep }

type wireTurnStarted struct {
	Type               string    `json:"type"`
	Kind               string    `json:"kind,omitempty"`
	StartedAt          time.Time `json:"startedAt,omitzero"`
	ModelContextWindow int64     `json:"modelContextWindow,omitempty"`
}

type wireTurnComplete struct {
	Type             string         `json:"type"`
	LastAgentMessage string         `json:"lastAgentMessage,omitempty"`
	Error            *wireTurnError `json:"error,omitempty"`
	CompletedAt      time.Time      `json:"completedAt,omitzero"`
	DurationMs       int64          `json:"durationMs"`
}

type wireTurnAborted struct {
	Type        string    `json:"type"`
	Reason      string    `json:"reason"`
	CompletedAt time.Time `json:"completedAt,omitzero"`
	DurationMs  int64     `json:"durationMs"`
}

type wireTurnError struct {
	Message    string `json:"message"`
	Kind       string `json:"kind,omitempty"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Details    string `json:"details,omitempty"`
}

type wireItemEvent struct {
	Type string          `json:"type"`
	Item json.RawMessage `json:"item"`
}

type wireErrorEvent struct {
	Type  string        `json:"type"`
	Error wireTurnError `json:"error"`
}

type wireTokenCount struct {
	Type string        `json:"type"`
	Info wireUsageInfo `json:"info"`
}

type wireUsageInfo struct {
	Total              wireUsage `json:"total"`
	Last               wireUsage `json:"last"`
	ModelContextWindow int64     `json:"modelContextWindow,omitempty"`
}

type wireUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
}

type wireTypeOnly struct {
	Type string `json:"type"`
}

func turnErrorToWire(e core.TurnError) wireTurnError {
	return wireTurnError{Message: e.Message, Kind: string(e.Kind), HTTPStatus: e.HTTPStatus, Details: e.Details}
}

func (w wireTurnError) turnError() core.TurnError {
	return core.TurnError{Message: w.Message, Kind: core.ErrorKind(w.Kind), HTTPStatus: w.HTTPStatus, Details: w.Details}
}

// MarshalEvent encodes a kept event in the rollout's stable form. Durations
// are kept in whole milliseconds, the precision the protocol shows.
func MarshalEvent(msg core.EventMsg) ([]byte, error) {
	var w any
	switch v := msg.(type) {
	case core.TurnStarted:
		w = wireTurnStarted{Type: evTurnStarted, Kind: string(v.Kind), StartedAt: v.StartedAt.UTC(), ModelContextWindow: v.ModelContextWindow}
	case core.TurnComplete:
		tw := wireTurnComplete{Type: evTurnComplete, LastAgentMessage: v.LastAgentMessage, CompletedAt: v.CompletedAt.UTC(), DurationMs: v.Duration.Milliseconds()}
		if v.Error != nil {
			e := turnErrorToWire(*v.Error)
			tw.Error = &e
		}
		w = tw
	case core.TurnAborted:
		w = wireTurnAborted{Type: evTurnAborted, Reason: string(v.Reason), CompletedAt: v.CompletedAt.UTC(), DurationMs: v.Duration.Milliseconds()}
	case core.ItemStarted:
		return marshalItemEvent(evItemStarted, v.Item)
	case core.ItemCompleted:
		return marshalItemEvent(evItemCompleted, v.Item)
	case core.Error:
		w = wireErrorEvent{Type: evError, Error: turnErrorToWire(v.Err)}
	case core.TokenCount:
		w = wireTokenCount{Type: evTokenCount, Info: wireUsageInfo{
			Total: wireUsage(v.Info.Total), Last: wireUsage(v.Info.Last), ModelContextWindow: v.Info.ModelContextWindow,
		}}
	case core.ContextCompacted:
		w = wireTypeOnly{Type: evContextCompacted}
	default:
		return nil, fmt.Errorf("rollout: event %T is not recorded", msg)
	}
	return model.MarshalNoEscape(w)
}

func marshalItemEvent(tag string, it core.TurnItem) ([]byte, error) {
	item, err := MarshalItem(it)
	if err != nil {
		return nil, err
	}
	return model.MarshalNoEscape(wireItemEvent{Type: tag, Item: item})
}

// UnmarshalEvent decodes an event written by MarshalEvent. A type tag it
// does not know yields an error wrapping ErrUnknownType.
func UnmarshalEvent(b []byte) (core.EventMsg, error) {
	typ, err := peekType(b)
	if err != nil {
		return nil, fmt.Errorf("rollout: event: %w", err)
	}
	switch typ {
	case evTurnStarted:
		var w wireTurnStarted
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.TurnStarted{Kind: core.TurnKind(w.Kind), StartedAt: w.StartedAt, ModelContextWindow: w.ModelContextWindow}, nil
	case evTurnComplete:
		var w wireTurnComplete
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		ev := core.TurnComplete{LastAgentMessage: w.LastAgentMessage, CompletedAt: w.CompletedAt, Duration: time.Duration(w.DurationMs) * time.Millisecond}
		if w.Error != nil {
			e := w.Error.turnError()
			ev.Error = &e
		}
		return ev, nil
	case evTurnAborted:
		var w wireTurnAborted
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.TurnAborted{Reason: core.AbortReason(w.Reason), CompletedAt: w.CompletedAt, Duration: time.Duration(w.DurationMs) * time.Millisecond}, nil
	case evItemStarted, evItemCompleted:
		raw, err := itemOfEvent(typ, b)
		if err != nil {
			return nil, err
		}
		it, err := UnmarshalItem(raw)
		if err != nil {
			return nil, err
		}
		if typ == evItemStarted {
			return core.ItemStarted{Item: it}, nil
		}
		return core.ItemCompleted{Item: it}, nil
	case evError:
		var w wireErrorEvent
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.Error{Err: w.Error.turnError()}, nil
	case evTokenCount:
		var w wireTokenCount
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.TokenCount{Info: core.TokenUsageInfo{
			Total: model.TokenUsage(w.Info.Total), Last: model.TokenUsage(w.Info.Last), ModelContextWindow: w.Info.ModelContextWindow,
		}}, nil
	case evContextCompacted:
		return core.ContextCompacted{}, nil
	default:
		return nil, fmt.Errorf("%w: event %q", ErrUnknownType, typ)
	}
}

// itemOfEvent returns the item of an item event's payload. Our own
// encoding is sliced directly (the item is its last member), which saves
// decoding every item twice when a long thread is rebuilt.
func itemOfEvent(typ string, b []byte) ([]byte, error) {
	prefix := `{"type":"` + typ + `","item":`
	if len(b) > len(prefix)+1 && string(b[:len(prefix)]) == prefix && b[len(b)-1] == '}' {
		return b[len(prefix) : len(b)-1], nil
	}
	var w wireItemEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	if len(w.Item) == 0 {
		return nil, errors.New("rollout: item event without item")
	}
	return w.Item, nil
}
