package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// record is one decoded line, ready to be folded into the state.
type record struct {
	typ    string
	turnID string
	at     time.Time
	// One of these is set, by typ.
	meta      *wireMeta
	item      model.ResponseItem
	compacted *wireCompacted
	tc        *TurnContext
	name      *string
	rollback  int
	msg       core.EventMsg
	// started is an itemStarted event, kept undecoded: most items
	// complete later, and only the completed state is shown.
	started *startedItem
}

type startedItem struct {
	id  string
	raw []byte
}

// decodeRecord decodes one line. It is a pure function of its input, so
// the lines of a long thread are decoded in parallel; the result owns no
// part of b.
func decodeRecord(b []byte, ids interner, opts *ReadOptions) (record, error) {
	l, err := parseLine(b, ids)
	if err != nil {
		return record{}, err
	}
	r := record{typ: l.Type, turnID: l.TurnID, at: l.time()}
	switch l.Type {
	case LineSessionMeta:
		var w wireMeta
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.meta = &w
	case LineResponseItem:
		if opts.SkipHistory {
			break
		}
		if r.item, err = model.ParseResponseItem(l.Payload); err != nil {
			return record{}, err
		}
	case LineCompacted:
		var w wireCompacted
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.compacted = &w
	case LineTurnContext:
		var w wireTurnContext
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		tc := w.turnContext()
		r.tc = &tc
	case LineThreadName:
		var w wireThreadName
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.name = &w.Name
	case LineRollback:
		var w wireRollback
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.rollback = w.NumTurns
	case LineEventMsg:
		if typ, _ := peekType(l.Payload); typ == evItemStarted {
			raw, err := itemOfEvent(typ, l.Payload)
			if err != nil {
				return record{}, err
			}
			id, err := peekItemID(raw)
			if err != nil {
				return record{}, err
			}
			r.started = &startedItem{id: id, raw: bytes.Clone(raw)}
			break
		}
		r.msg, err = UnmarshalEvent(l.Payload)
		if errors.Is(err, ErrUnknownType) {
			r.msg = nil // written by a newer version: skipped
		} else if err != nil {
			return record{}, err
		}
	}
	return r, nil
}
