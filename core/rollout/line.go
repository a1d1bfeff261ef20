package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Line types. A reader skips any other type (the reference writes more,
// such as world_state and token_usage_record), so either program can add
// record kinds without breaking the other.
const (
	LineSessionMeta  = "session_meta"
	LineResponseItem = "response_item"
	LineTurnContext  = "turn_context"
	LineEventMsg     = "event_msg"
	LineCompacted    = "compacted"
	// LineThreadName and LineRollback are format 1 records, still read:
	// format 2 keeps names in session_index.jsonl and rollbacks as
	// thread_rolled_back events, as the reference does.
	LineThreadName = "thread_name"
	LineRollback   = "rollback"
)

// timestampLayout is the line timestamp: UTC, millisecond precision.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// line is one decoded record envelope. Payload aliases the buffer it was
// parsed from; decode it before the buffer is reused.
type line struct {
	Timestamp []byte
	Type      string
	TurnID    string
	Payload   []byte
}

// time parses the line's timestamp; the zero time when it is malformed.
func (l *line) time() time.Time {
	if t, ok := parseTimestamp(l.Timestamp); ok {
		return t
	}
	t, err := time.Parse(timestampLayout, string(l.Timestamp))
	if err != nil {
		t, err = time.Parse(time.RFC3339Nano, string(l.Timestamp))
		if err != nil {
			return time.Time{}
		}
	}
	return t
}

// appendLine appends one whole record, newline included, to dst. The field
// order is fixed (timestamp, type, turnId, payload) so that parseLine can
// read it without a general JSON decode.
func appendLine(dst []byte, ts time.Time, typ, turnID string, payload []byte) []byte {
	dst = append(dst, `{"timestamp":"`...)
	dst = ts.UTC().AppendFormat(dst, timestampLayout)
	dst = append(dst, `","type":`...)
	dst = appendJSONString(dst, typ)
	if turnID != "" {
		dst = append(dst, `,"turnId":`...)
		dst = appendJSONString(dst, turnID)
	}
	dst = append(dst, `,"payload":`...)
	dst = append(dst, payload...)
	return append(dst, "}\n"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

var errBadLine = errors.New("not a rollout record")

var (
	prefixTimestamp = []byte(`{"timestamp":"`)
	sepType         = []byte(`","type":"`)
	sepTurnID       = []byte(`","turnId":"`)
	sepPayload      = []byte(`","payload":`)
)

// parseLine splits a record (without its newline) into its envelope.
// Records in agentd's fixed field order (timestamp, type, turnId, payload)
// are split by hand; anything else goes through a full JSON decode: the
// reference's records may have members after the payload ("metadata") or
// before the type ("ordinal"). The payload is not validated here: the
// decoder of its type does that, and a torn payload fails there.
func parseLine(b []byte, in interner) (line, error) {
	if l, ok := parseLineFast(b, in); ok {
		return l, nil
	}
	var w struct {
		Timestamp string          `json:"timestamp"`
		Type      string          `json:"type"`
		TurnID    string          `json:"turnId"`
		Payload   json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return line{}, err
	}
	if w.Type == "" {
		return line{}, fmt.Errorf("%w: no type", errBadLine)
	}
	return line{Timestamp: []byte(w.Timestamp), Type: w.Type, TurnID: w.TurnID, Payload: w.Payload}, nil
}

func parseLineFast(b []byte, in interner) (line, bool) {
	var l line
	if !bytes.HasPrefix(b, prefixTimestamp) || len(b) < len(prefixTimestamp)+24 || b[len(b)-1] != '}' {
		return l, false
	}
	rest := b[len(prefixTimestamp):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return l, false
	}
	l.Timestamp = rest[:end]
	rest = rest[end:]
	if !bytes.HasPrefix(rest, sepType) {
		return l, false
	}
	rest = rest[len(sepType):]
	end = bytes.IndexByte(rest, '"')
	if end <= 0 {
		return l, false
	}
	l.Type = lineType(rest[:end])
	rest = rest[end:]
	// Only agentd writes turnId, and it writes the payload last; in a
	// record without one, the payload must be seen to end the record.
	withTurn := bytes.HasPrefix(rest, sepTurnID)
	if withTurn {
		rest = rest[len(sepTurnID):]
		end = bytes.IndexByte(rest, '"')
		// An id with an escape or quote in it takes the slow path.
		if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
			return l, false
		}
		l.TurnID = in.get(rest[:end])
		rest = rest[end:]
	}
	if !bytes.HasPrefix(rest, sepPayload) {
		return l, false
	}
	l.Payload = rest[len(sepPayload) : len(rest)-1]
	if len(l.Payload) == 0 || (!withTurn && objectEnd(l.Payload) != len(l.Payload)) {
		return l, false
	}
	return l, true
}

// objectEnd returns the length of the JSON object b starts with (its
// strings skipped, its braces counted), or -1 when b does not start with
// a whole object. It does not validate the object.
func objectEnd(b []byte) int {
	if len(b) == 0 || b[0] != '{' {
		return -1
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// peekType returns the "type" of a JSON object whose first member is
// "type", as our encoders write it, or decodes the object to find it.
func peekType(b []byte) (string, error) {
	const p = `{"type":"`
	if bytes.HasPrefix(b, []byte(p)) {
		rest := b[len(p):]
		if end := bytes.IndexByte(rest, '"'); end > 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return tag(rest[:end]), nil
		}
	}
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return "", err
	}
	if t.Type == "" {
		return "", errors.New(`missing "type"`)
	}
	return t.Type, nil
}

// parseTimestamp parses our own "2006-01-02T15:04:05.000Z" by hand:
// time.Parse is a visible part of rebuilding a long thread.
func parseTimestamp(s []byte) (time.Time, bool) {
	if len(s) != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return time.Time{}, false
	}
	var v [7]int
	for i, f := range [7][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 23}} {
		n := 0
		for _, c := range s[f[0]:f[1]] {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			n = n*10 + int(c-'0')
		}
		v[i] = n
	}
	if v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60 {
		return time.Time{}, false
	}
	return time.Date(v[0], time.Month(v[1]), v[2], v[3], v[4], v[5], v[6]*1e6, time.UTC), true
}

// interner shares the strings of one file's turn ids: a thousand-turn
// thread repeats each id on a dozen records.
type interner map[string]string

func (in interner) get(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// lineType returns the known line type constant for b without allocating.
func lineType(b []byte) string {
	switch string(b) {
	case LineSessionMeta:
		return LineSessionMeta
	case LineResponseItem:
		return LineResponseItem
	case LineTurnContext:
		return LineTurnContext
	case LineEventMsg:
		return LineEventMsg
	case LineThreadName:
		return LineThreadName
	case LineRollback:
		return LineRollback
	case LineCompacted:
		return LineCompacted
	}
	return string(b)
}

// tag returns the known event or item tag for b without allocating.
func tag(b []byte) string {
	switch string(b) {
	case evTaskStarted:
		return evTaskStarted
	case evTaskComplete:
		return evTaskComplete
	case evTurnAbortedRef:
		return evTurnAbortedRef
	case evErrorRef:
		return evErrorRef
	case evTokenCountRef:
		return evTokenCountRef
	case evUserMessage:
		return evUserMessage
	case evAgentMessage:
		return evAgentMessage
	case evAgentReasoning:
		return evAgentReasoning
	case evAgentReasoningRaw:
		return evAgentReasoningRaw
	case evExecBegin:
		return evExecBegin
	case evExecEnd:
		return evExecEnd
	case evPatchBegin:
		return evPatchBegin
	case evPatchEnd:
		return evPatchEnd
	case evItemCompletedRef:
		return evItemCompletedRef
	case evContextCompactedRef:
		return evContextCompactedRef
	case evTurnStarted:
		return evTurnStarted
	case evTurnComplete:
		return evTurnComplete
	case evItemStarted:
		return evItemStarted
	case evItemCompleted:
		return evItemCompleted
	}
	return string(b)
}

// peekLineType returns the type of a record without decoding it, for
// readers that skip most types: it reads the envelope's leading members
// (timestamp, the reference's ordinal, type). ok is false when the line
// does not start that way.
func peekLineType(b []byte) (typ string, ok bool) {
	if !bytes.HasPrefix(b, prefixTimestamp) {
		return "", false
	}
	rest := b[len(prefixTimestamp):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "", false
	}
	rest = rest[end+1:]
	const ordinal = `,"ordinal":`
	if bytes.HasPrefix(rest, []byte(ordinal)) {
		rest = rest[len(ordinal):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		rest = rest[n:]
	}
	const typ0 = `,"type":"`
	if !bytes.HasPrefix(rest, []byte(typ0)) {
		return "", false
	}
	rest = rest[len(typ0):]
	end = bytes.IndexByte(rest, '"')
	if end <= 0 {
		return "", false
	}
	return lineType(rest[:end]), true
}
