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
	// evType is the type of an event_msg record.
	evType string
	// One of these is set, by typ.
	meta      *SessionMeta
	item      model.ResponseItem
	compacted *Compaction
	tc        *TurnContext
	name      *string
	rollback  int
	ev        *evRec
}

// startedItem is the start of an item, kept undecoded: most items
// complete later, and only the completed state is shown.
type startedItem struct {
	id  string
	raw []byte
	// event: raw is a format 2 start event (exec_command_begin, …), not a
	// format 1 item.
	event bool
}

// decode returns the item the start holds.
func (s *startedItem) decode() (core.TurnItem, error) {
	if !s.event {
		return unmarshalItemV1(s.raw)
	}
	e, err := decodeEvent(s.raw)
	if err != nil {
		return nil, err
	}
	return e.item, nil
}

// lazyStart says whether a format 2 start event's decoding waits.
func lazyStart(typ string) bool {
	return typ == evExecBegin || typ == evPatchBegin || typ == evDynamicRequest
}

// peekCallID returns the call_id of a start event as agentd writes it
// (the member after "type").
func peekCallID(typ string, b []byte) (string, bool) {
	p := `{"type":"` + typ + `","call_id":"`
	if len(b) <= len(p) || string(b[:len(p)]) != p {
		return "", false
	}
	rest := b[len(p):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
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
		m, err := decodeMeta(l.Payload)
		if err != nil {
			return record{}, err
		}
		r.meta = &m
	case LineResponseItem:
		if opts.SkipHistory {
			break
		}
		if r.item, err = model.ParseResponseItem(stripInternal(l.Payload)); err != nil {
			return record{}, err
		}
	case LineCompacted:
		var w wireCompacted
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		c := w.compaction()
		r.compacted = &c
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
		r.evType, _ = peekType(l.Payload)
		// agentd's tool starts (they name their turn) wait to be decoded.
		// (Only whole records: the fast line parse does not check that a
		// payload with a turnId ends where the line does.)
		if lazyStart(r.evType) && l.TurnID != "" && objectEnd(l.Payload) == len(l.Payload) {
			if id, ok := peekCallID(r.evType, l.Payload); ok {
				r.ev = &evRec{kind: evkStarted, started: &startedItem{id: id, raw: bytes.Clone(l.Payload), event: true}}
				break
			}
		}
		ev, err := decodeEvent(l.Payload)
		if errors.Is(err, ErrUnknownType) {
			break // written by a newer version, or of no use here: skipped
		} else if err != nil {
			return record{}, err
		}
		r.ev = &ev
	}
	return r, nil
}

// internalMember is a member of the reference's history items that is
// its own bookkeeping and never sent to a model.
var internalMember = []byte(`"internal_chat_message_metadata_passthrough"`)

// stripInternal returns a history item without the reference's internal
// member, keeping the order of the others; b itself when it has none.
func stripInternal(b []byte) []byte {
	if !bytes.Contains(b, internalMember) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return b
	}
	out := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return b
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return b
		}
		if key == string(internalMember[1:len(internalMember)-1]) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendJSONString(out, key)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}')
}
