package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// Event type tags of format 1 event_msg records (read only).
const (
	evTurnStarted      = "turnStarted"
	evTurnComplete     = "turnComplete"
	evTurnAborted      = "turnAborted"
	evItemStarted      = "itemStarted"
	evItemCompleted    = "itemCompleted"
	evTokenCount       = "tokenCount"
	evContextCompacted = "contextCompacted"
)

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

func (w wireTurnError) turnError() core.TurnError {
	return core.TurnError{Message: w.Message, Kind: core.ErrorKind(w.Kind), HTTPStatus: w.HTTPStatus, Details: w.Details}
}

// decodeEventV1 decodes an event_msg payload of format 1 (agentd's own
// camelCase events, read for threads written before format 2). The item
// of an itemStarted event is kept undecoded: most items complete later,
// and only the completed state is shown. A type tag it does not know
// yields an error wrapping ErrUnknownType.
func decodeEventV1(typ string, b []byte) (evRec, error) {
	switch typ {
	case evTurnStarted:
		var w wireTurnStarted
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		kind := core.TurnKind(w.Kind)
		if kind == "" {
			kind = core.TurnRegular
		}
		return evRec{kind: evkTurnStarted, at: w.StartedAt, turnKind: kind}, nil
	case evTurnComplete:
		var w wireTurnComplete
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		r := evRec{kind: evkTurnComplete, at: w.CompletedAt, lastMessage: w.LastAgentMessage}
		r.duration, r.hasDuration = time.Duration(w.DurationMs)*time.Millisecond, true
		if w.Error != nil {
			e := w.Error.turnError()
			r.err = &e
		}
		return r, nil
	case evTurnAborted:
		var w wireTurnAborted
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		r := evRec{kind: evkTurnAborted, at: w.CompletedAt}
		r.duration, r.hasDuration = time.Duration(w.DurationMs)*time.Millisecond, true
		return r, nil
	case evItemStarted:
		raw, err := itemOfEvent(typ, b)
		if err != nil {
			return evRec{}, err
		}
		id, err := peekItemID(raw)
		if err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkStarted, started: &startedItem{id: id, raw: bytes.Clone(raw)}}, nil
	case evItemCompleted:
		raw, err := itemOfEvent(typ, b)
		if err != nil {
			return evRec{}, err
		}
		it, err := unmarshalItemV1(raw)
		if err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkItem, item: it, completed: true}, nil
	case evTokenCount:
		var w wireTokenCount
		if err := json.Unmarshal(b, &w); err != nil {
			return evRec{}, err
		}
		return evRec{kind: evkTokenCount, info: core.TokenUsageInfo{
			Total: model.TokenUsage(w.Info.Total), Last: model.TokenUsage(w.Info.Last), ModelContextWindow: w.Info.ModelContextWindow,
		}}, nil
	}
	// contextCompacted is also skipped: its item and the compacted record
	// say it.
	return evRec{}, fmt.Errorf("%w: event %q", ErrUnknownType, typ)
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
