package protocol

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"path/filepath"
	"strconv"
)

// jsonMarshal writes with encoding/json, the encoder the server uses,
// without HTML escaping: the reference writes '<', '>' and '&' as they are,
// and the server's encoder does not undo escapes made here.
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonUnmarshal reads with encoding/json/v2, which matches names
// case-sensitively like the reference.
func jsonUnmarshal(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }

// RequestID is a JSON-RPC request id: a string or an integer, echoed back
// with its JSON type.
type RequestID struct {
	Str      string
	Num      int64
	IsString bool
}

// StringID returns a string request id.
func StringID(s string) RequestID { return RequestID{Str: s, IsString: true} }

// IntID returns an integer request id.
func IntID(n int64) RequestID { return RequestID{Num: n} }

// String returns the id as text (integers in decimal).
func (id RequestID) String() string {
	if id.IsString {
		return id.Str
	}
	return strconv.FormatInt(id.Num, 10)
}

// MarshalJSON writes the id as a JSON string or number.
func (id RequestID) MarshalJSON() ([]byte, error) {
	if id.IsString {
		return jsonMarshal(id.Str)
	}
	return strconv.AppendInt(nil, id.Num, 10), nil
}

// UnmarshalJSON reads a JSON string or integer.
func (id *RequestID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		id.IsString, id.Num = true, 0
		return json.Unmarshal(b, &id.Str)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return &decodeError{"data did not match any variant of untagged enum RequestId"}
	}
	*id = RequestID{Num: n}
	return nil
}

// WireSchema describes RequestID for the schema generator.
func (RequestID) WireSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "integer", "format": "int64"},
	}}
}

// AbsPath is an absolute file system path. Decoding rejects relative paths
// with the reference's message.
type AbsPath string

func (AbsPath) checkWire(s string) error {
	if !filepath.IsAbs(s) {
		return &decodeError{"AbsolutePathBuf deserialized without a base path"}
	}
	return nil
}

// values lists enum constants as strings.
func values[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// SortDirection orders list results.
type SortDirection string

// Sort directions.
const (
	SortAsc  SortDirection = "asc"
	SortDesc SortDirection = "desc"
)

func (SortDirection) wireValues() []string { return values(SortAsc, SortDesc) }

// TextRange is a span in a file (1-based lines and columns).
type TextRange struct {
	Start TextPosition `json:"start"`
	End   TextPosition `json:"end"`
}

// TextPosition is a line and column in a file.
type TextPosition struct {
	Line   uint `json:"line"`
	Column uint `json:"column"`
}

// Empty is the value of a variant or result that has no fields.
type Empty struct{}

// List is a JSON array that is never written as null: a nil List encodes as
// []. Output arrays use it so a forgotten initialisation cannot put a null
// where clients expect an array.
type List[T any] []T

// MarshalJSON writes l, or [] when l is nil.
func (l List[T]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return jsonMarshal([]T(l))
}

// MarshalJSONTo writes l into the encoder of the value it is part of, with
// that encoder's options: a long list (a thread's turns, a turn's items)
// is not encoded apart and then copied and checked again by its parent.
// Those options are encoding/json's (v1) wherever the server encodes; a
// caller of encoding/json/v2's Marshal would get v2's rules for l's
// elements too, where MarshalJSON kept v1's: encode protocol values with
// encoding/json.
func (l List[T]) MarshalJSONTo(enc *jsontext.Encoder) error {
	if l == nil {
		return enc.WriteValue(jsontext.Value("[]"))
	}
	return jsonv2.MarshalEncode(enc, []T(l))
}

func (List[T]) neverNull() {}

// Map is a JSON object that is never written as null: a nil Map encodes as {}.
type Map[V any] map[string]V

// MarshalJSON writes m, or {} when m is nil.
func (m Map[V]) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	return jsonMarshal(map[string]V(m))
}

// MarshalJSONTo writes m into its parent's encoder (see List).
func (m Map[V]) MarshalJSONTo(enc *jsontext.Encoder) error {
	if m == nil {
		return enc.WriteValue(jsontext.Value("{}"))
	}
	return jsonv2.MarshalEncode(enc, map[string]V(m))
}

func (Map[V]) neverNull() {}
