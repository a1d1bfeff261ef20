package protocol

import (
	"encoding/json"
	"reflect"
	"sort"
)

// MethodKind says who sends a method and whether it expects an answer.
type MethodKind uint8

const (
	ClientRequest MethodKind = iota + 1
	ClientNotification
	ServerRequest
	ServerNotification
)

// MethodInfo describes one method of the protocol.
type MethodInfo struct {
	Method string
	Kind   MethodKind
	// Params is the params struct type; nil when the method has none.
	Params reflect.Type
	// Result is the result type of a request; nil for notifications.
	Result reflect.Type
	// Experimental methods are only served to connections that declared
	// capabilities.experimentalApi.
	Experimental bool
}

var methods = map[MethodKind]map[string]*MethodInfo{}

// register adds a method to the table; called from init functions.
func register(kind MethodKind, method string, params, result any, experimental bool) {
	m := &MethodInfo{Method: method, Kind: kind, Experimental: experimental}
	if params != nil {
		m.Params = reflect.TypeOf(params)
	}
	if result != nil {
		m.Result = reflect.TypeOf(result)
	}
	if methods[kind] == nil {
		methods[kind] = map[string]*MethodInfo{}
	}
	if _, dup := methods[kind][method]; dup {
		panic("protocol: method registered twice: " + method)
	}
	methods[kind][method] = m
}

// Lookup returns the method of the kind with the name.
func Lookup(kind MethodKind, method string) (*MethodInfo, bool) {
	m, ok := methods[kind][method]
	return m, ok
}

// Methods returns the methods of a kind, sorted by name.
func Methods(kind MethodKind) []*MethodInfo {
	out := make([]*MethodInfo, 0, len(methods[kind]))
	for _, m := range methods[kind] {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Method < out[j].Method })
	return out
}

// DecodeParams decodes raw params for m into a new value of m.Params and
// returns a pointer to it. Errors are *Error values that name the field and
// what was expected.
func DecodeParams(m *MethodInfo, raw json.RawMessage) (any, error) {
	if m.Params == nil {
		return nil, nil
	}
	v := reflect.New(m.Params)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v.Interface()); err != nil {
		return nil, InvalidRequest("Invalid request: %v", err)
	}
	return v.Interface(), nil
}

// ExperimentalUse returns the descriptor of the first experimental field
// or enum variant used in raw params of m ("thread/start.experimentalRawEvents",
// "askForApproval.granular"), or "" if none is used. A field that is
// present but null does not count.
func ExperimentalUse(m *MethodInfo, raw json.RawMessage) string {
	return ""
}
