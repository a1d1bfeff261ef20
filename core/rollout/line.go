package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Line types. A reader skips any other type, so a newer agentd can add
// record kinds without breaking an older reader.
const (
	LineSessionMeta  = "session_meta"
	LineResponseItem = "response_item"
	LineTurnContext  = "turn_context"
	LineEventMsg     = "event_msg"
	LineThreadName   = "thread_name"
	LineRollback     = "rollback"
	LineCompacted    = "compacted"
)

// timestampLayout is the line timestamp: UTC, millisecond precision.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// line is one decoded record envelope. Payload aliases the buffer it was
// parsed from; decode it before the buffer is reused.
type line struct {
	Timestamp string
	Type      string
	TurnID    string
	Payload   []byte
}

// time parses the line's timestamp; the zero time when it is malformed.
func (l *line) time() time.Time {
	t, err := time.Parse(timestampLayout, l.Timestamp)
	if err != nil {
		t, err = time.Parse(time.RFC3339Nano, l.Timestamp)
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

// parseLine splits a record (without its newline) into its envelope. Lines
// in our own fixed field order are split by hand; anything else goes through
// a full JSON decode. The payload is not validated here: the decoder of its
// type does that, and a torn payload fails there.
func parseLine(b []byte) (line, error) {
	if l, ok := parseLineFast(b); ok {
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
	return line{Timestamp: w.Timestamp, Type: w.Type, TurnID: w.TurnID, Payload: w.Payload}, nil
}

func parseLineFast(b []byte) (line, bool) {
	var l line
	if !bytes.HasPrefix(b, prefixTimestamp) || len(b) < len(prefixTimestamp)+24 || b[len(b)-1] != '}' {
		return l, false
	}
	rest := b[len(prefixTimestamp):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return l, false
	}
	l.Timestamp = string(rest[:end])
	rest = rest[end:]
	if !bytes.HasPrefix(rest, sepType) {
		return l, false
	}
	rest = rest[len(sepType):]
	end = bytes.IndexByte(rest, '"')
	if end <= 0 {
		return l, false
	}
	l.Type = string(rest[:end])
	rest = rest[end:]
	if bytes.HasPrefix(rest, sepTurnID) {
		rest = rest[len(sepTurnID):]
		end = bytes.IndexByte(rest, '"')
		// An id with an escape or quote in it takes the slow path.
		if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
			return l, false
		}
		l.TurnID = string(rest[:end])
		rest = rest[end:]
	}
	if !bytes.HasPrefix(rest, sepPayload) {
		return l, false
	}
	l.Payload = rest[len(sepPayload) : len(rest)-1]
	if len(l.Payload) == 0 {
		return l, false
	}
	return l, true
}

// peekType returns the "type" of a JSON object whose first member is
// "type", as our encoders write it, or decodes the object to find it.
func peekType(b []byte) (string, error) {
	const p = `{"type":"`
	if bytes.HasPrefix(b, []byte(p)) {
		rest := b[len(p):]
		if end := bytes.IndexByte(rest, '"'); end > 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return string(rest[:end]), nil
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

// marshal encodes v as compact JSON without HTML escaping (the file is
// read by people too).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
