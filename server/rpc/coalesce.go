package rpc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// This file defines, in one place, which notifications are volatile deltas
// that may be coalesced when a client falls behind, and how they merge.
// See the overflow policy in docs/protocol.md.

// maxCoalescedText caps the text one merged notification carries: past
// it, deltas queue separately, so a client never receives one message too
// large for it to read.
const maxCoalescedText = 1 << 20

// coalesceRule says how notifications of one method merge.
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
// ending in "/delta" follows deltaRule. Everything else (item and turn
// lifecycle, token usage, server requests, responses) is authoritative and
// delivered one by one.
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
// of that method are authoritative.
func coalesceRuleFor(method string) *coalesceRule {
	if r, ok := coalesceRules[method]; ok {
		return r
	}
	if strings.HasSuffix(method, "/delta") {
		return deltaRule
	}
	return nil
}

// coalesced accumulates the deltas merged into one queued notification.
// Merging costs the size of the new delta only; the merged params are
// encoded once, when the writer takes the message.
type coalesced struct {
	rule *coalesceRule
	// fields are the newest notification's members; the text field is
	// replaced by text when encoding.
	fields map[string]json.RawMessage
	// text is the joined text (the decoded bytes, for base64 fields).
	text []byte
	// joined is set once a delta was merged: until then the queued
	// message's bytes are still right (a look-back started this
	// accumulator without merging into it).
	joined bool
}

// start begins accumulating from a queued notification's params.
func (r *coalesceRule) start(params []byte) (*coalesced, bool) {
	fields, text, ok := r.parse(params)
	if !ok {
		return nil, false
	}
	return &coalesced{rule: r, fields: fields, text: text}, true
}

// parse splits params into members and the decoded text field.
func (r *coalesceRule) parse(params []byte) (map[string]json.RawMessage, []byte, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil || fields == nil {
		return nil, nil, false
	}
	if r.replace {
		return fields, nil, true
	}
	var s string
	if json.Unmarshal(fields[r.field], &s) != nil {
		return nil, nil, false
	}
	if r.base64 {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, nil, false
		}
		return fields, b, true
	}
	return fields, []byte(s), true
}

// add merges the params of a newer notification, or reports false (and
// changes nothing) when it belongs to another stream, is malformed, or
// would make the merged text too large. Members other than the keys and
// the text come from the newer notification (command/exec's capReached
// only ever turns true).
func (a *coalesced) add(params []byte) bool {
	fields, text, ok := a.rule.parse(params)
	return ok && a.keysEqual(fields) && a.join(fields, text)
}

// join merges a parsed delta of a's stream, or reports false (and changes
// nothing) when the merged text would be too large.
func (a *coalesced) join(fields map[string]json.RawMessage, text []byte) bool {
	if len(a.text)+len(text) > maxCoalescedText {
		return false
	}
	a.fields = fields
	a.text = append(a.text, text...)
	a.joined = true
	return true
}

// keysEqual reports whether fields have a's stream keys.
func (a *coalesced) keysEqual(fields map[string]json.RawMessage) bool {
	for _, k := range a.rule.keys {
		if !bytes.Equal(a.fields[k], fields[k]) {
			return false
		}
	}
	return true
}

// params encodes the merged notification's params.
func (a *coalesced) params() ([]byte, error) {
	if !a.rule.replace {
		var s string
		if a.rule.base64 {
			s = base64.StdEncoding.EncodeToString(a.text)
		} else {
			s = string(a.text)
		}
		e := getEncBuf()
		err := e.value(s)
		v := e.bytes()
		e.release()
		if err != nil {
			return nil, err
		}
		a.fields[a.rule.field] = v
	}
	e := getEncBuf()
	defer e.release()
	if err := e.value(a.fields); err != nil {
		return nil, err
	}
	return e.bytes(), nil
}
