package protocol

import (
	"encoding/json"
	"reflect"
	"sort"
	"sync"
)

// MethodKind says who sends a method and whether it expects an answer.
type MethodKind uint8

// Method kinds.
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
	// ExperimentalDelivery marks notifications that are stable in the schema
	// but sent only to experimental connections (thread/settings/updated,
	// thread/readState/changed).
	ExperimentalDelivery bool
	// NameOnly marks a client request of the reference that agentd knows
	// by its name only: it has no params or result types for it (Params
	// and Result are nil) and does not serve it. Such a request is gated
	// like any other and answered -32601; the schema bundles leave it out.
	NameOnly bool
}

// methodTable is the protocol's methods: table.go lists them.
type methodTable struct {
	methods map[MethodKind]map[string]*MethodInfo
	// order lists each kind's methods in registration order.
	order map[MethodKind][]string
}

// table is built at its first use (the first request a daemon handles),
// not at every start of the program: a reflect.Type per params and
// result type, 234 methods (125 of them client requests known by name
// only).
var table = sync.OnceValue(buildTable)

// register adds a method to the table; called from buildTable.
func (t *methodTable) register(kind MethodKind, method string, params, result any, experimental bool) *MethodInfo {
	m := &MethodInfo{Method: method, Kind: kind, Experimental: experimental}
	if params != nil {
		m.Params = reflect.TypeOf(params)
	}
	if result != nil {
		m.Result = reflect.TypeOf(result)
	}
	if t.methods[kind] == nil {
		t.methods[kind] = map[string]*MethodInfo{}
	}
	if _, dup := t.methods[kind][method]; dup {
		panic("protocol: method registered twice: " + method)
	}
	t.methods[kind][method] = m
	t.order[kind] = append(t.order[kind], method)
	return m
}

// Lookup returns the method of the kind with the name.
func Lookup(kind MethodKind, method string) (*MethodInfo, bool) {
	m, ok := table().methods[kind][method]
	return m, ok
}

// Methods returns the methods of a kind, sorted by name.
func Methods(kind MethodKind) []*MethodInfo {
	methods := table().methods[kind]
	out := make([]*MethodInfo, 0, len(methods))
	for _, m := range methods {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Method < out[j].Method })
	return out
}

// DecodeParams decodes raw params for m into a new value of m.Params and
// returns a pointer to it (nil when m has no params type). Omitted or null
// params are accepted when the params type has no required fields; otherwise
// the error is "Invalid request: missing field `params`". Other errors are
// *Error values with CodeInvalidRequest that name the field and what was
// expected, worded like the reference ("Invalid request: missing field
// `threadId`"). Unknown fields are ignored. See Unmarshal.
func DecodeParams(m *MethodInfo, raw json.RawMessage) (any, error) {
	if m.Params == nil {
		return nil, nil
	}
	v := reflect.New(m.Params)
	if absent(raw) {
		if ShapeOf(m.Params).required > 0 {
			return nil, InvalidRequest("Invalid request: missing field `params`")
		}
		return v.Interface(), nil
	}
	if err := Unmarshal(raw, v.Interface()); err != nil {
		return nil, InvalidRequest("Invalid request: %s", err.Error())
	}
	return v.Interface(), nil
}

// UnknownMethod returns the error for a client request with a method that is
// not in the table, listing the known ones as the reference does.
func UnknownMethod(method string) *Error {
	return InvalidRequest("Invalid request: %s", unknownVariant(method, table().order[ClientRequest]).Error())
}
