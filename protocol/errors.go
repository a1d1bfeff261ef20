package protocol

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC error codes used on the wire. The reference answers every
// validation failure with CodeInvalidRequest; so do we (see docs/protocol.md).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeOverloaded answers a request that arrived while the server was
	// at its in-flight limit. Retryable.
	CodeOverloaded = -32001
	// CodeRequestCancelled answers a request the client cancelled with
	// $/cancelRequest (an agentd extension; the code is the Language
	// Server Protocol's RequestCancelled).
	CodeRequestCancelled = -32800
)

// Error is a JSON-RPC error value. It is the only error type converted to
// the wire as is; any other error becomes CodeInternalError.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Is reports whether target is an *Error with the same code and message,
// so errors.Is works against the sentinel values below.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == e.Message
}

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidRequest returns a CodeInvalidRequest error with the message.
func InvalidRequest(format string, args ...any) *Error {
	return Errorf(CodeInvalidRequest, format, args...)
}

// WithData returns a copy of e carrying data (encoded as JSON).
func (e *Error) WithData(data any) *Error {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("protocol.Error.WithData: %v", err))
	}
	c := *e
	c.Data = b
	return &c
}

// Sentinel errors with the reference's exact texts.
var (
	ErrNotInitialized     = &Error{Code: CodeInvalidRequest, Message: "Not initialized"}
	ErrAlreadyInitialized = &Error{Code: CodeInvalidRequest, Message: "Already initialized"}
	ErrOverloaded         = (&Error{Code: CodeOverloaded, Message: "Server overloaded; retry later."}).WithData(map[string]bool{"retryable": true})
)
