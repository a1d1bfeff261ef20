package protocol_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/schema/refschema"
)

// jsonDiff compares two JSON texts as values and describes the first
// difference (key sets, nulls and values all count), or returns "".
func jsonDiff(want, got []byte) string {
	var a, b any
	if err := decodeNumber(want, &a); err != nil {
		return "want: " + err.Error()
	}
	if err := decodeNumber(got, &b); err != nil {
		return "got: " + err.Error()
	}
	return diffValue("$", a, b)
}

func decodeNumber(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

func diffValue(path string, a, b any) string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %s", path, short(b))
		}
		var keys []string
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inA:
				return fmt.Sprintf("%s.%s: unexpected key (= %s)", path, k, short(y))
			case !inB:
				return fmt.Sprintf("%s.%s: missing key (want %s)", path, k, short(x))
			}
			if d := diffValue(path+"."+k, x, y); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return fmt.Sprintf("%s: want %s, got %s", path, short(a), short(b))
		}
		for i := range av {
			if d := diffValue(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%s: want %s, got %s", path, short(a), short(b))
	}
	return ""
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// roundTrip decodes raw into a new value of t with protocol.Unmarshal and
// encodes it again with encoding/json.
func roundTrip(t reflect.Type, raw []byte) ([]byte, error) {
	v := reflect.New(t)
	if err := protocol.Unmarshal(raw, v.Interface()); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return json.Marshal(v.Interface())
}

// TestGoldenServerMessages decodes every notification, server request and
// result the reference server sent (for the methods we have) into our types,
// encodes it again and requires the same JSON: same keys, same nulls, same
// values. The re-encoded notifications must also pass the reference schema.
func TestGoldenServerMessages(t *testing.T) {
	v := refschema.Validator(t)
	counts := map[string]int{}
	for _, m := range refschema.Transcripts(t) {
		if !m.FromServer || m.Error != nil || m.Method == "" {
			continue
		}
		var info *protocol.MethodInfo
		var raw []byte
		var ok bool
		switch {
		case m.Response:
			info, ok = protocol.Lookup(protocol.ClientRequest, m.Method)
			if ok {
				raw = m.Result
			}
		case m.ID != nil:
			info, ok = protocol.Lookup(protocol.ServerRequest, m.Method)
			raw = m.Params
		default:
			info, ok = protocol.Lookup(protocol.ServerNotification, m.Method)
			raw = m.Params
		}
		if !ok {
			counts["(not ours) "+m.Method]++
			continue
		}
		typ := info.Params
		if m.Response {
			typ = info.Result
		}
		got, err := roundTrip(typ, raw)
		if err != nil {
			t.Errorf("%s:%d %s: %v", m.File, m.Line, m.Method, err)
			continue
		}
		if d := jsonDiff(raw, got); d != "" {
			t.Errorf("%s:%d %s (%v): %s", m.File, m.Line, m.Method, typ, d)
			continue
		}
		counts[m.Method]++
		if m.Response || !v.Has("ServerNotification", m.Method) {
			continue
		}
		msg, _ := json.Marshal(map[string]any{"method": m.Method, "params": json.RawMessage(got), "emittedAtMs": 1})
		if err := v.ValidateNotification(m.Method, msg); err != nil {
			t.Errorf("%s:%d %s: re-encoded: %v", m.File, m.Line, m.Method, err)
		}
	}
	for _, must := range []string{"item/completed", "item/started", "thread/start", "turn/completed", "thread/resume",
		"item/commandExecution/requestApproval", "item/fileChange/requestApproval", "item/tool/call", "model/list"} {
		if counts[must] == 0 {
			t.Errorf("no %s message was round-tripped", must)
		}
	}
	t.Logf("round-tripped: %v", counts)
}

// acceptedRefusals are the reference's refusals of params that agentd
// accepts on purpose, by the reference's message (docs/protocol.md,
// Extensions).
var acceptedRefusals = map[string]bool{
	// review/start delivery "detached": a review on a fork of the thread.
	"Invalid request: unknown variant `detached`, expected `inline`": true,
}

// TestGoldenClientMessages decodes every request the recorded clients sent.
// Where the reference rejected the params ("Invalid request: …"), DecodeParams
// must give the same message; where it served them, DecodeParams must accept
// them; where it refused an experimental field, ExperimentalUse must name it.
// Client answers to server requests must round-trip through our result types.
func TestGoldenClientMessages(t *testing.T) {
	// The reference's answer to each request, by file, connection and id.
	answers := map[string]refschema.Message{}
	msgs := refschema.Transcripts(t)
	for _, m := range msgs {
		if m.FromServer && m.Response {
			answers[m.File+m.Conn+string(m.ID)] = m
		}
	}
	checked := 0
	accepted := map[string]bool{}
	for _, m := range msgs {
		if m.FromServer || m.Method == "" {
			continue
		}
		if m.Response {
			info, ok := protocol.Lookup(protocol.ServerRequest, m.Method)
			if !ok || m.Error != nil {
				continue
			}
			got, err := roundTrip(info.Result, m.Result)
			if err != nil {
				t.Errorf("%s:%d %s response: %v", m.File, m.Line, m.Method, err)
			} else if d := jsonDiff(m.Result, got); d != "" {
				t.Errorf("%s:%d %s response: %s", m.File, m.Line, m.Method, d)
			}
			checked++
			continue
		}
		info, ok := protocol.Lookup(protocol.ClientRequest, m.Method)
		if !ok || m.ID == nil {
			continue
		}
		ans := answers[m.File+m.Conn+string(m.ID)]
		var refErr struct{ Message string }
		if ans.Error != nil {
			_ = json.Unmarshal(ans.Error, &refErr)
		}
		if info.NameOnly {
			// No params type to decode with: only the method's own
			// gating can be compared (docs/protocol.md, Unknown methods).
			if refErr.Message == m.Method+" requires experimentalApi capability" && !info.Experimental {
				t.Errorf("%s:%d %s: the reference gates it, the table does not", m.File, m.Line, m.Method)
			}
			continue
		}
		_, err := protocol.DecodeParams(info, m.Params)
		use := protocol.ExperimentalUse(info, m.Params)
		checked++
		switch {
		case acceptedRefusals[refErr.Message]:
			accepted[refErr.Message] = true
			if err != nil {
				t.Errorf("%s:%d %s %s: %v (an extension agentd accepts)", m.File, m.Line, m.Method, m.Params, err)
			}
		case strings.HasPrefix(refErr.Message, "Invalid request: missing field `params`"):
			// Accepted on purpose: agentd serves params-less requests when
			// the params type has no required fields.
		case strings.HasPrefix(refErr.Message, "Invalid request: "):
			if err == nil || err.Error() != (&protocol.Error{Code: protocol.CodeInvalidRequest, Message: refErr.Message}).Error() {
				t.Errorf("%s:%d %s %s: error %v, reference said %q", m.File, m.Line, m.Method, m.Params, err, refErr.Message)
			}
		case strings.HasSuffix(refErr.Message, " requires experimentalApi capability"):
			if want := strings.TrimSuffix(refErr.Message, " requires experimentalApi capability"); use != want {
				t.Errorf("%s:%d %s: ExperimentalUse = %q, want %q", m.File, m.Line, m.Method, use, want)
			}
		case err != nil:
			t.Errorf("%s:%d %s %s: %v (the reference served it)", m.File, m.Line, m.Method, m.Params, err)
		}
	}
	if checked < 200 {
		t.Errorf("only %d client messages checked", checked)
	}
	for msg := range acceptedRefusals {
		if !accepted[msg] {
			t.Errorf("no recorded request was refused with %q: drop it from acceptedRefusals", msg)
		}
	}
}
