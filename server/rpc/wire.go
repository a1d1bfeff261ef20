package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"go.uber.org/zap"
)

// This file is the JSON-RPC envelope as agentd speaks it: no "jsonrpc"
// member on output (accepted and ignored on input), ids that are integers
// or strings echoed byte for byte, compact JSON without HTML escaping, and
// a top-level emittedAtMs on every server notification.

// nullID answers a message whose id could not be read.
var nullID = json.RawMessage("null")

type msgKind uint8

const (
	kindRequest msgKind = iota + 1
	kindNotification
	kindResponse
)

// inMessage is one decoded client message. Params, Result and Error keep
// their raw bytes; they are decoded by whoever handles the message.
type inMessage struct {
	kind msgKind
	// id is the request id exactly as sent (compact), nil for a
	// notification.
	id     json.RawMessage
	method string
	params json.RawMessage
	result json.RawMessage
	err    json.RawMessage
	// trace is the request's W3C trace context, if it sent one.
	trace *traceContext
	// arrived is when a request was read (for its latency, waiting for
	// its turn included).
	arrived time.Time
	// size is the message's size in bytes.
	size int
}

// traceContext is a request's optional "trace" member.
type traceContext struct {
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate"`
}

// wireMessage is the shape json.Unmarshal fills. "jsonrpc" is not listed
// and therefore ignored.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Trace  json.RawMessage `json:"trace"`
}

// decodeMessage classifies one message. On failure it returns the error to
// answer with and the id to answer to (null when unreadable).
func decodeMessage(data []byte) (inMessage, *protocol.Error, json.RawMessage) {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return inMessage{}, protocol.Errorf(protocol.CodeParseError, "Parse error: %v", err), nullID
		}
		first := firstByte(data)
		if first == '[' {
			return inMessage{}, protocol.InvalidRequest("Invalid request: batch messages are not supported"), nullID
		}
		if first != '{' {
			return inMessage{}, protocol.InvalidRequest("Invalid request: a message must be a JSON object"), nullID
		}
		// A member of the wrong type (json.RawMessage accepts any value,
		// so this cannot happen for the members we read).
		return inMessage{}, protocol.InvalidRequest("Invalid request: %v", err), nullID
	}
	if w.Method == nil && w.Result == nil && w.Error == nil && w.ID == nil && w.Params == nil {
		if firstByte(data) != '{' {
			return inMessage{}, protocol.InvalidRequest("Invalid request: a message must be a JSON object"), nullID
		}
	}
	hasID := w.ID != nil && !isNull(w.ID)
	if hasID && !validID(w.ID) {
		return inMessage{}, protocol.InvalidRequest("Invalid request: id must be an integer or a string"), nullID
	}
	if hasID && len(w.ID) > protocol.MaxEcho {
		// Every answer echoes the id whole: a huge one would make every
		// answer huge. Refused, answered to null.
		return inMessage{}, protocol.InvalidRequest("Invalid request: id is longer than %d bytes", protocol.MaxEcho), nullID
	}
	answerTo := nullID
	if hasID {
		answerTo = w.ID
	}
	if w.Method != nil && !isNull(w.Method) {
		var method string
		if err := json.Unmarshal(w.Method, &method); err != nil {
			return inMessage{}, protocol.InvalidRequest("Invalid request: method must be a string"), answerTo
		}
		m := inMessage{method: method, params: w.Params, trace: parseTrace(w.Trace)}
		if hasID {
			m.kind, m.id = kindRequest, w.ID
		} else {
			// "id": null is a notification, as in the reference (which
			// does not answer it).
			m.kind = kindNotification
		}
		return m, nil, nil
	}
	if w.Result != nil || w.Error != nil {
		if !hasID {
			return inMessage{}, protocol.InvalidRequest("Invalid request: a response needs an id"), nullID
		}
		return inMessage{kind: kindResponse, id: w.ID, result: w.Result, err: w.Error}, nil, nil
	}
	return inMessage{}, protocol.InvalidRequest("Invalid request: a message needs a method, a result or an error"), answerTo
}

// parseTrace reads a request's trace context; a malformed one is ignored
// (tracing is best effort and never fails a request).
func parseTrace(raw json.RawMessage) *traceContext {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var tc traceContext
	if err := json.Unmarshal(raw, &tc); err != nil || tc.Traceparent == "" {
		return nil
	}
	return &tc
}

func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// validID accepts a JSON string or an integer that fits in 64 bits signed,
// the reference's RequestId.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil
	}
	return false
}

// intID reads an integer id (ours, on responses to server requests).
func intID(raw json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// encBuf builds one outgoing message. Values are encoded with HTML escaping
// off, so "<", ">" and "&" go out as themselves, as the reference sends
// them.
type encBuf struct {
	b   bytes.Buffer
	enc *json.Encoder
}

var encPool = sync.Pool{New: func() any {
	e := &encBuf{}
	e.enc = json.NewEncoder(&e.b)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledBuf keeps one huge message from pinning its buffer forever.
const maxPooledBuf = 1 << 20

func getEncBuf() *encBuf {
	e := encPool.Get().(*encBuf)
	e.b.Reset()
	return e
}

func (e *encBuf) release() {
	if e.b.Cap() <= maxPooledBuf {
		encPool.Put(e)
	}
}

// value appends v as compact JSON.
func (e *encBuf) value(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.b.Truncate(e.b.Len() - 1) // Encode's newline
	return nil
}

// str appends s as a JSON string.
func (e *encBuf) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			_ = e.value(s)
			return
		}
	}
	e.b.WriteByte('"')
	e.b.WriteString(s)
	e.b.WriteByte('"')
}

func (e *encBuf) bytes() []byte {
	out := make([]byte, e.b.Len())
	copy(out, e.b.Bytes())
	return out
}

// encodeNotification builds {"method":…,"params":…,"emittedAtMs":…} and
// returns it with the offsets of params inside it (0, 0 when omitted).
func encodeNotification(method string, params any, emittedAtMs int64) (data []byte, pStart, pEnd int, err error) {
	e := getEncBuf()
	defer e.release()
	e.b.WriteString(`{"method":`)
	e.str(method)
	if params != nil {
		e.b.WriteString(`,"params":`)
		pStart = e.b.Len()
		if err := e.value(params); err != nil {
			return nil, 0, 0, fmt.Errorf("encoding %s params: %w", method, err)
		}
		pEnd = e.b.Len()
	}
	e.b.WriteString(`,"emittedAtMs":`)
	e.b.Write(strconv.AppendInt(e.b.AvailableBuffer(), emittedAtMs, 10))
	e.b.WriteByte('}')
	return e.bytes(), pStart, pEnd, nil
}

// encodeResponse builds {"id":…,"result":…}. A nil result is sent as {}.
func encodeResponse(id json.RawMessage, result any) ([]byte, error) {
	e := getEncBuf()
	defer e.release()
	e.b.WriteString(`{"id":`)
	e.b.Write(id)
	e.b.WriteString(`,"result":`)
	if result == nil {
		e.b.WriteString(`{}`)
	} else if err := e.value(result); err != nil {
		return nil, err
	}
	e.b.WriteByte('}')
	return e.bytes(), nil
}

// encodeError builds {"error":{…},"id":…}, the member order the
// reference uses. It is where every error response is bounded, whoever
// built it: the message is cut to protocol.MaxErrorMessage and data past
// maxErrorData is dropped, so that no error is larger than a few KB.
func encodeError(id json.RawMessage, perr *protocol.Error) []byte {
	if len(perr.Message) > protocol.MaxErrorMessage || len(perr.Data) > maxErrorData {
		bounded := *perr
		bounded.Message = protocol.CutTo(perr.Message, protocol.MaxErrorMessage)
		if len(perr.Data) > maxErrorData {
			bounded.Data = nil
		}
		perr = &bounded
	}
	e := getEncBuf()
	defer e.release()
	e.b.WriteString(`{"error":`)
	if err := e.value(perr); err != nil {
		// Only Data can fail, and WithData already validated it; still,
		// never send a broken message.
		e.b.Truncate(len(`{"error":`))
		_ = e.value(&protocol.Error{Code: perr.Code, Message: perr.Message})
	}
	e.b.WriteString(`,"id":`)
	e.b.Write(id)
	e.b.WriteByte('}')
	return e.bytes()
}

// maxErrorData bounds an error's data member; ours are a few bytes.
const maxErrorData = 1024

// logMethod and logID are the log fields of a client's method and request
// id, cut to protocol.MaxEcho: they are what a client chose.
func logMethod(method string) zap.Field { return zap.String("method", protocol.Cut(method)) }

func logID(id json.RawMessage) zap.Field { return zap.String("request", protocol.Cut(idText(id))) }

// encodeRequest builds a server→client request {"id":n,"method":…,"params":…}.
func encodeRequest(id int64, method string, params any) ([]byte, error) {
	e := getEncBuf()
	defer e.release()
	e.b.WriteString(`{"id":`)
	e.b.Write(strconv.AppendInt(e.b.AvailableBuffer(), id, 10))
	e.b.WriteString(`,"method":`)
	e.str(method)
	if params != nil {
		e.b.WriteString(`,"params":`)
		if err := e.value(params); err != nil {
			return nil, fmt.Errorf("encoding %s params: %w", method, err)
		}
	}
	e.b.WriteByte('}')
	return e.bytes(), nil
}

// Notification is a server notification encoded once, to be sent to any
// number of connections (Conn.Send).
type Notification struct {
	m outMsg
}

// NewNotification encodes a notification, stamped with the current time
// as its emittedAtMs.
func NewNotification(method string, params any) (Notification, error) {
	m, err := newNotification(method, params, time.Now().UnixMilli())
	return Notification{m: m}, err
}

// Method returns the notification's method.
func (n Notification) Method() string { return n.m.method }

// newNotification encodes a notification for the outbox.
func newNotification(method string, params any, emittedAtMs int64) (outMsg, error) {
	data, ps, pe, err := encodeNotification(method, params, emittedAtMs)
	if err != nil {
		return outMsg{}, err
	}
	return outMsg{data: data, method: method, pStart: ps, pEnd: pe, emittedAtMs: emittedAtMs}, nil
}
