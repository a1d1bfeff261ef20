package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// outsideSurface lists the notifications the reference sends that are not
// part of agentd's surface, with the reason. They are dropped from both
// sides before comparing; this is the only place that drops anything.
var outsideSurface = map[string]string{
	"remoteControl/status/changed": "no remote control",
	"configWarning":                "environment-specific: the reference warned that bubblewrap was missing on the recording machine",
	"thread/goal/cleared":          "no thread goals",
	"thread/readState/changed":     "experimental read-state tracking, which agentd does not have",
	"thread/settings/updated":      "experimental thread settings, which agentd does not have",
}

// unknownModelWarning starts the reference's warning about a model missing
// from its catalog: environment-specific (which catalog is bundled), not a
// behaviour.
const unknownModelWarning = "Model metadata for `"

// ignoredReason says why a notification is dropped before comparing, or
// "" when it is compared.
func ignoredReason(method string, params json.RawMessage) string {
	if r, ok := outsideSurface[method]; ok {
		return r
	}
	if method == "warning" {
		var p struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(params, &p) == nil && strings.HasPrefix(p.Message, unknownModelWarning) {
			return "warning about unknown model metadata: depends on the bundled model catalog"
		}
	}
	return ""
}

// isVolatile reports whether a method is volatile: a delta, or a patch
// preview (each carries the whole patch so far). A run of the same
// volatile method compares as one: mocks split text differently, and
// agentd may coalesce them for a slow client.
func isVolatile(method string) bool {
	return strings.HasSuffix(strings.ToLower(method), "delta") || method == "item/fileChange/patchUpdated"
}

// wireEvent is one server message reduced to what the suite compares.
type wireEvent struct {
	// Kind is "notify", "request" (server → client) or "response".
	Kind string
	// Method is the notification's or request's method; for a response,
	// the method of the request it answers.
	Method string
	// Trigger identifies the event for pacing the replay: kind, method,
	// item type, response id. It ignores the details that may differ.
	Trigger string
	// Detail is the rest of what is compared.
	Detail string
}

func (e wireEvent) String() string {
	s := e.Kind + " " + e.Method
	if e.Detail != "" {
		s += " " + e.Detail
	}
	return s
}

var uuidRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// normalizeIDs replaces UUIDs (thread, turn, item ids) in a text.
func normalizeIDs(s string) string { return uuidRE.ReplaceAllString(s, "<id>") }

// keySet renders the sorted member names of a JSON object, "{}" for an
// empty one and "-" for something that is not an object.
func jsonKeySet(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "{" + strings.Join(keys, ",") + "}"
}

// canonical renders JSON with sorted keys and no spaces.
func canonicalJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "absent"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func jsonMember(raw json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m[name]
}

func jsonString(raw json.RawMessage, name string) string {
	var s string
	_ = json.Unmarshal(jsonMember(raw, name), &s)
	return s
}

// describeItem renders a ThreadItem: type, status (when it has one) and
// key set.
func describeItem(item json.RawMessage) (typ, detail string) {
	typ = jsonString(item, "type")
	detail = typ
	if st := jsonMember(item, "status"); st != nil {
		detail += " status=" + canonicalJSON(st)
	}
	return typ, detail + " item" + jsonKeySet(item)
}

// describeTurn renders a Turn: status, itemsView, item count, error.
func describeTurn(turn json.RawMessage) string {
	var items []json.RawMessage
	_ = json.Unmarshal(jsonMember(turn, "items"), &items)
	s := fmt.Sprintf("status=%s itemsView=%s items=%d", canonicalJSON(jsonMember(turn, "status")), canonicalJSON(jsonMember(turn, "itemsView")), len(items))
	for _, it := range items {
		_, d := describeItem(it)
		s += " [" + d + "]"
	}
	if e := jsonMember(turn, "error"); e != nil && string(e) != "null" {
		s += " error.codexErrorInfo=" + canonicalJSON(jsonMember(e, "codexErrorInfo"))
	}
	return s + " turn" + jsonKeySet(turn)
}

// normalize reduces one server message. method is the method of the
// request a response answers. ok is false for a notification outside the
// surface.
func normalizeMessage(msg map[string]json.RawMessage, method string) (e wireEvent, ok bool) {
	var m string
	_ = json.Unmarshal(msg["method"], &m)
	params := msg["params"]
	_, hasID := msg["id"]
	switch {
	case m == "" && hasID:
		e = wireEvent{Kind: "response", Method: method, Trigger: "response " + string(msg["id"])}
		if res, ok := msg["result"]; ok {
			e.Detail = "result" + jsonKeySet(res)
		} else {
			errObj := msg["error"]
			e.Detail = fmt.Sprintf("error %s %q", canonicalJSON(jsonMember(errObj, "code")), normalizeIDs(jsonString(errObj, "message")))
		}
		return e, true
	case m != "" && hasID:
		return wireEvent{Kind: "request", Method: m, Trigger: "request " + m, Detail: "params" + jsonKeySet(params)}, true
	}
	if ignoredReason(m, params) != "" {
		return wireEvent{}, false
	}
	e = wireEvent{Kind: "notify", Method: m, Trigger: "notify " + m}
	switch {
	case isVolatile(m):
		// Only the run is compared.
	case m == "item/started" || m == "item/completed":
		typ, d := describeItem(jsonMember(params, "item"))
		e.Trigger += " " + typ
		e.Detail = d + " params" + jsonKeySet(params)
	case m == "turn/started" || m == "turn/completed":
		e.Detail = describeTurn(jsonMember(params, "turn")) + " params" + jsonKeySet(params)
	case m == "error":
		e.Detail = fmt.Sprintf("codexErrorInfo=%s willRetry=%s error%s params%s",
			canonicalJSON(jsonMember(jsonMember(params, "error"), "codexErrorInfo")), canonicalJSON(jsonMember(params, "willRetry")),
			jsonKeySet(jsonMember(params, "error")), jsonKeySet(params))
	case m == "thread/status/changed":
		e.Detail = canonicalJSON(jsonMember(params, "status"))
	default:
		e.Detail = "params" + jsonKeySet(params)
	}
	return e, true
}

// appendEvent adds e to a sequence, folding a volatile notification into
// a run of the same method just before it. It reports whether e was added.
func appendEvent(seq []wireEvent, e wireEvent) ([]wireEvent, bool) {
	if isVolatile(e.Method) && e.Kind == "notify" && len(seq) > 0 && seq[len(seq)-1].Kind == "notify" && seq[len(seq)-1].Method == e.Method {
		return seq, false
	}
	return append(seq, e), true
}

// lines renders a sequence, one event a line.
func eventLines(seq []wireEvent) []string {
	out := make([]string, len(seq))
	for i, e := range seq {
		out[i] = e.String()
	}
	return out
}

// lineDiff renders a minimal line diff of want (reference) and got
// (agentd): "  " same, "- " only in the reference, "+ " only in agentd.
func lineDiff(want, got []string) string {
	n, m := len(want), len(got)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if want[i] == got[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var b strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && want[i] == got[j]:
			b.WriteString("    " + want[i] + "\n")
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			b.WriteString("  + " + got[j] + "\n")
			j++
		default:
			b.WriteString("  - " + want[i] + "\n")
			i++
		}
	}
	return b.String()
}
