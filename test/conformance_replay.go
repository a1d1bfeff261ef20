package test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/schema/refschema"
)

// notInSchema lists the server methods the reference sends although its
// generated schema does not have them; their messages are not validated.
var notInSchema = map[string]bool{
	"rawResponseItem/completed": true,
	"rawResponse/completed":     true,
}

// replayTrigger is what a client message waits for before it is sent: the
// n-th event with a Trigger key, as in the reference, where the client
// sent it right after that event.
type replayTrigger struct {
	key string
	n   int
}

// refSequence is the reference side of a transcript: the compared events,
// and for each client message (by record index) its replayTrigger.
type refSequence struct {
	events   []wireEvent
	triggers map[int]replayTrigger
	// methods maps a client request id to its method.
	methods map[string]string
	// results maps a client request id to the reference's result.
	results map[string]json.RawMessage
	// serverReqs lists, per method, the reference's server request ids in
	// order.
	serverReqs map[string][]string
}

func referenceSequence(recs []refRecord) refSequence {
	rs := refSequence{triggers: map[int]replayTrigger{}, methods: map[string]string{}, results: map[string]json.RawMessage{}, serverReqs: map[string][]string{}}
	counts := map[string]int{}
	var last string
	for i, r := range recs {
		if !r.FromServer {
			if m := r.method(); m != "" && r.id() != nil {
				rs.methods[string(r.id())] = m
			}
			if last != "" {
				rs.triggers[i] = replayTrigger{key: last, n: counts[last]}
			}
			continue
		}
		method := r.method()
		switch {
		case r.isResponse():
			method = rs.methods[string(r.id())]
			if res, ok := r.Msg["result"]; ok {
				rs.results[string(r.id())] = res
			}
		case r.id() != nil:
			rs.serverReqs[method] = append(rs.serverReqs[method], string(r.id()))
		}
		e, ok := normalizeMessage(r.Msg, method)
		if !ok {
			continue
		}
		var added bool
		if rs.events, added = appendEvent(rs.events, e); added {
			counts[e.Trigger]++
		}
		last = rs.events[len(rs.events)-1].Trigger
	}
	return rs
}

// replay drives agentd through a reference transcript: it sends the
// client's messages in order, each once agentd has sent what preceded it
// in the reference, answers server requests as the reference client did,
// and records what agentd sends.
type replayRun struct {
	t   *testing.T
	c   *Client
	v   *refschema.V
	ref refSequence

	refCwd, cwd string
	// onEvent, when set, sees every compared event of agentd.
	onEvent func(wireEvent)

	// ids maps reference thread and turn ids to agentd's.
	ids map[string]string
	// serverReqIDs maps a reference server request id to agentd's.
	serverReqIDs map[string]json.RawMessage
	ourReqs      map[string]int
	answered     map[string]bool
	sent         map[string]bool

	got      []wireEvent
	raw      []Message
	counts   map[string]int
	problems []string
}

func newReplay(t *testing.T, c *Client, recs []refRecord, refCwd, cwd string) *replayRun {
	return &replayRun{
		t: t, c: c, v: refschema.Validator(t), ref: referenceSequence(recs),
		refCwd: refCwd, cwd: cwd,
		ids: map[string]string{}, serverReqIDs: map[string]json.RawMessage{}, ourReqs: map[string]int{},
		answered: map[string]bool{}, sent: map[string]bool{}, counts: map[string]int{},
	}
}

func (r *replayRun) problemf(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// run replays recs and waits for the end: every request answered, as
// many turns completed as in the reference, then a quiet window for
// trailing messages.
func (r *replayRun) run(recs []refRecord) {
	for i, rec := range recs {
		if rec.FromServer {
			continue
		}
		if tr, ok := r.ref.triggers[i]; ok {
			r.waitFor(fmt.Sprintf("%s #%d (before line %d)", tr.key, tr.n, rec.Line), func() bool { return r.counts[tr.key] >= tr.n })
		}
		r.send(rec)
	}
	wantTurns := 0
	for _, e := range r.ref.events {
		if e.Kind == "notify" && e.Method == "turn/completed" {
			wantTurns++
		}
	}
	r.waitFor("every answer and the last turn/completed", func() bool {
		for id := range r.sent {
			if !r.answered[id] {
				return false
			}
		}
		return r.counts["notify turn/completed"] >= wantTurns
	})
	for {
		m, err := r.c.ReadUntilTimeout(func(Message) bool { return true }, QuietWindow)
		if err != nil {
			return
		}
		r.observe(m)
	}
}

// waitFor reads agentd's messages until cond holds; on timeout it records
// a problem and returns, so that the comparison still shows the diff.
func (r *replayRun) waitFor(what string, cond func() bool) {
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		m, err := r.c.ReadUntilTimeout(func(Message) bool { return true }, time.Until(deadline))
		if err != nil {
			r.problemf("waiting for %s: %v", what, err)
			return
		}
		r.observe(m)
	}
}

// send sends one client message of the transcript, with reference ids
// and paths replaced by agentd's.
func (r *replayRun) send(rec refRecord) {
	method := rec.method()
	if method == "" {
		// An answer to a server request.
		refID := string(rec.id())
		ourID, ok := r.serverReqIDs[refID]
		if !ok {
			r.problemf("line %d: agentd sent no server request matching the reference's request %s; answer not sent", rec.Line, refID)
			return
		}
		out := map[string]any{"id": ourID}
		for _, k := range []string{"result", "error"} {
			if v, ok := rec.Msg[k]; ok {
				out[k] = r.substitute(v)
			}
		}
		r.c.Send(out)
		return
	}
	out := map[string]any{"method": method}
	if p, ok := rec.Msg["params"]; ok {
		out["params"] = r.substitute(p)
	}
	if id := rec.id(); id != nil {
		out["id"] = id
		r.sent[string(id)] = true
	}
	r.c.Send(out)
}

// substitute decodes raw and replaces reference thread and turn ids and
// the reference's working directory by agentd's.
func (r *replayRun) substitute(raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		r.t.Fatalf("transcript message: %v", err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if id, ok := r.ids[x]; ok {
				return id
			}
			if x == r.refCwd || strings.HasPrefix(x, r.refCwd+"/") {
				return r.cwd + strings.TrimPrefix(x, r.refCwd)
			}
		}
		return v
	}
	return walk(v)
}

// observe validates and records one message from agentd.
func (r *replayRun) observe(m Message) {
	r.raw = append(r.raw, m)
	method := m.Method
	switch {
	case m.IsServerRequest() || m.IsNotification():
		if err := r.v.ValidateServerMessage(m.Raw); err != nil && !(errors.Is(err, refschema.ErrNotInSchema) && notInSchema[m.Method]) {
			r.problemf("%s does not match the reference schema: %v\n    %s", m.Method, err, m.Raw)
		}
	default:
		id := string(m.ID)
		method = r.ref.methods[id]
		r.answered[id] = true
		if m.Result != nil && method != "" {
			if err := r.v.ValidateResponse(method, m.Result); err != nil {
				r.problemf("result of %s does not match the reference schema: %v\n    %s", method, err, m.Raw)
			}
			r.learnIDs(r.ref.results[id], m.Result)
		}
	}
	if m.IsServerRequest() {
		k := r.ourReqs[m.Method]
		r.ourReqs[m.Method]++
		if refs := r.ref.serverReqs[m.Method]; k < len(refs) {
			r.serverReqIDs[refs[k]] = m.ID
		}
	}
	e, ok := normalizeMessage(m.Fields, method)
	if !ok {
		return
	}
	var added bool
	if r.got, added = appendEvent(r.got, e); added {
		r.counts[e.Trigger]++
		if r.onEvent != nil {
			r.onEvent(e)
		}
	}
}

// learnIDs walks a reference result and agentd's side by side and maps
// the reference's thread and turn ids to agentd's.
func (r *replayRun) learnIDs(ref, ours json.RawMessage) {
	var a, b any
	if json.Unmarshal(ref, &a) != nil || json.Unmarshal(ours, &b) != nil {
		return
	}
	var walk func(a, b any)
	walk = func(a, b any) {
		switch x := a.(type) {
		case map[string]any:
			y, ok := b.(map[string]any)
			if !ok {
				return
			}
			for k, av := range x {
				bv, ok := y[k]
				if !ok {
					continue
				}
				as, aok := av.(string)
				bs, bok := bv.(string)
				if aok && bok && (k == "id" || k == "threadId" || k == "turnId") {
					r.ids[as] = bs
					continue
				}
				walk(av, bv)
			}
		case []any:
			y, ok := b.([]any)
			if !ok {
				return
			}
			for i := 0; i < len(x) && i < len(y); i++ {
				walk(x[i], y[i])
			}
		}
	}
	walk(a, b)
}
