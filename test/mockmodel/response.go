package mockmodel

import (
	"maps"
	"net/http"
	"sync"
	"time"
)

// Response is what the server does with one request: an HTTP error, or an
// event stream that may be paced, gated, stalled or cut. Its methods return
// a modified copy, so a Response can be built in one expression.
type Response struct {
	status      int // 0: 200 with the event stream
	body        string
	header      http.Header
	events      []Event
	gates       map[int]*Gate // before event i; a nil gate never opens
	holdHeaders *Gate
	holdSet     bool
	cutAfter    int // -1: no cut
	pace        time.Duration
	dataOnly    bool
	echoHeaders bool
}

// SSE is a 200 event stream of the given events, in order, with
// output_index and sequence_number filled in and response.completed's
// output listing the items of the output_item.done events.
func SSE(parts ...Events) Response {
	return Response{events: finish(parts), cutAfter: -1}
}

// Reply is a complete response: response.created, the parts,
// response.completed with zero usage.
func Reply(respID string, parts ...Events) Response {
	all := append([]Events{Created(respID)}, parts...)
	all = append(all, Completed(respID, Usage{}))
	return SSE(all...)
}

// Status answers with an HTTP status and body (JSON or text) instead of a
// stream.
func Status(code int, body string) Response {
	return Response{status: code, body: body, cutAfter: -1}
}

func (r Response) clone() Response {
	r.header = r.header.Clone()
	r.gates = maps.Clone(r.gates)
	r.events = append([]Event(nil), r.events...)
	return r
}

// WithHeader adds a response header (Retry-After, retry-after-ms, …).
func (r Response) WithHeader(key, value string) Response {
	r = r.clone()
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Add(key, value)
	return r
}

// CutAfter writes the first n events, then half of the next one (if any),
// and drops the connection without ending the body.
func (r Response) CutAfter(n int) Response {
	r = r.clone()
	r.cutAfter = n
	return r
}

// GateAfter holds the stream after n events until g is opened. The wait
// also ends when the client disconnects or the server closes.
func (r Response) GateAfter(n int, g *Gate) Response {
	r = r.clone()
	if r.gates == nil {
		r.gates = map[int]*Gate{}
	}
	r.gates[n] = g
	return r
}

// StallAfter holds the stream after n events until the client disconnects
// or the server closes.
func (r Response) StallAfter(n int) Response {
	return r.GateAfter(n, nil)
}

// HoldHeaders delays the status line and headers until g is opened (nil:
// until the client disconnects), to test a server that never answers.
func (r Response) HoldHeaders(g *Gate) Response {
	r = r.clone()
	r.holdHeaders, r.holdSet = g, true
	return r
}

// EchoHeaders appends the request's headers (every name and value, the
// Authorization header included) to the message of a Status response's
// JSON error body, as a careless or hostile server might: tests use it to
// check that no credential escapes through an error.
func (r Response) EchoHeaders() Response {
	r = r.clone()
	r.echoHeaders = true
	return r
}

// Pace waits d before each event after the first.
func (r Response) Pace(d time.Duration) Response {
	r = r.clone()
	r.pace = d
	return r
}

// Paced reports the wait Pace set (0: none).
func (r Response) Paced() time.Duration { return r.pace }

// DataOnly omits the "event:" lines, as some compatible servers do; the type
// is then only in the JSON.
func (r Response) DataOnly() Response {
	r = r.clone()
	r.dataOnly = true
	return r
}

// Events returns the events the response streams.
func (r Response) Events() []Event { return append([]Event(nil), r.events...) }

// Gate is a point in a scripted stream that the test opens.
type Gate struct {
	open        chan struct{}
	reached     chan struct{}
	openOnce    sync.Once
	reachedOnce sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{open: make(chan struct{}), reached: make(chan struct{})}
}

// Open lets the stream continue. It may be called more than once.
func (g *Gate) Open() { g.openOnce.Do(func() { close(g.open) }) }

// Reached is closed once the server waits at the gate (or has passed it).
func (g *Gate) Reached() <-chan struct{} { return g.reached }

func (g *Gate) markReached() { g.reachedOnce.Do(func() { close(g.reached) }) }
