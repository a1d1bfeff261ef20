package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// This file defines, in one place, which notifications are volatile deltas
// that may be coalesced when a client falls behind, and how two of them
// merge. See the overflow policy in docs/protocol.md.

// maxCoalescedParams caps a merged notification's params: past it, deltas
// queue separately, so a client never receives one message too large for
// it to read.
const maxCoalescedParams = 1 << 20

// coalesceRule says how two notifications of one method merge.
type coalesceRule struct {
	// keys must be equal in both (same thread, turn, item, part…).
	keys []string
	// field holds the text to concatenate (older first).
	field string
	// base64 marks field as base64 bytes: decoded, joined, re-encoded.
	base64 bool
	// replace means each notification carries the whole current state:
	// the newer one replaces the older.
	replace bool
}

var itemKeys = []string{"threadId", "turnId", "itemId"}

// coalesceRules lists the coalescible notifications. Any other method
// ending in "/delta" follows deltaRule.
var coalesceRules = map[string]*coalesceRule{
	"item/agentMessage/delta":           {keys: itemKeys, field: "delta"},
	"item/plan/delta":                   {keys: itemKeys, field: "delta"},
	"item/reasoning/summaryTextDelta":   {keys: append(itemKeys[:3:3], "summaryIndex"), field: "delta"},
	"item/reasoning/textDelta":          {keys: append(itemKeys[:3:3], "contentIndex"), field: "delta"},
	"item/commandExecution/outputDelta": {keys: itemKeys, field: "delta"},
	"item/fileChange/outputDelta":       {keys: itemKeys, field: "delta"},
	// patchUpdated carries the whole patch so far: the latest wins.
	"item/fileChange/patchUpdated": {keys: itemKeys, replace: true},
	"command/exec/outputDelta":     {keys: []string{"processId", "stream"}, field: "deltaBase64", base64: true},
}

var deltaRule = &coalesceRule{keys: itemKeys, field: "delta"}

// coalesceRuleFor returns the rule for method, or nil when notifications
// of that method are authoritative and must be delivered one by one.
func coalesceRuleFor(method string) *coalesceRule {
	if r, ok := coalesceRules[method]; ok {
		return r
	}
	if strings.HasSuffix(method, "/delta") {
		return deltaRule
	}
	return nil
}

// merge returns the params of one notification equivalent to older
// followed by newer, or false when they do not merge (other item, a field
// missing or of another type, or the result would be too large). Members
// other than the keys and the text field come from newer (for example
// command/exec's capReached, which only ever turns true).
func (r *coalesceRule) merge(older, newer []byte) ([]byte, bool) {
	if len(older)+len(newer) > maxCoalescedParams {
		return nil, false
	}
	var a, b map[string]json.RawMessage
	if json.Unmarshal(older, &a) != nil || json.Unmarshal(newer, &b) != nil {
		return nil, false
	}
	for _, k := range r.keys {
		if !bytes.Equal(a[k], b[k]) {
			return nil, false
		}
	}
	if r.replace {
		return newer, true
	}
	var sa, sb string
	if json.Unmarshal(a[r.field], &sa) != nil || json.Unmarshal(b[r.field], &sb) != nil {
		return nil, false
	}
	joined := sa + sb
	if r.base64 {
		da, errA := base64.StdEncoding.DecodeString(sa)
		db, errB := base64.StdEncoding.DecodeString(sb)
		if errA != nil || errB != nil {
			return nil, false
		}
		joined = base64.StdEncoding.EncodeToString(append(da, db...))
	}
	e := getEncBuf()
	defer e.release()
	if e.value(joined) != nil {
		return nil, false
	}
	b[r.field] = json.RawMessage(e.bytes())
	e.b.Reset()
	if e.value(b) != nil {
		return nil, false
	}
	return e.bytes(), true
}
