package model

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ResponseItem is one entry of the model history, in the Responses API's own
// JSON form. The raw bytes are canonical: an item received from the model is
// replayed to it exactly, unknown fields included, so that provider fields we
// do not understand (encrypted reasoning, item ids, annotations) survive.
//
// The header fields (Type, ID, Role, CallID, Name) are decoded once when the
// item is created and are read-only views of the raw bytes. A ResponseItem is
// immutable: build a new one to change it.
type ResponseItem struct {
	raw  json.RawMessage
	head itemHead
}

// itemHead is the part of an item every consumer needs without a full decode.
type itemHead struct {
	Type   string `json:"type"`
	ID     string `json:"id,omitempty"`
	Role   string `json:"role,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status,omitempty"`
}

// ParseResponseItem wraps raw JSON as a ResponseItem. The bytes are copied
// and compacted; it fails when raw is not a JSON object with a "type".
func ParseResponseItem(raw []byte) (ResponseItem, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return ResponseItem{}, fmt.Errorf("response item: %w", err)
	}
	var h itemHead
	if err := json.Unmarshal(buf.Bytes(), &h); err != nil {
		return ResponseItem{}, fmt.Errorf("response item: %w", err)
	}
	if h.Type == "" {
		return ResponseItem{}, fmt.Errorf("response item: missing \"type\"")
	}
	return ResponseItem{raw: buf.Bytes(), head: h}, nil
}

// NewResponseItem encodes v (a struct or map with a "type" field) as a
// ResponseItem. It panics if v cannot be encoded, which is a programming error.
func NewResponseItem(v any) ResponseItem {
	b, err := MarshalNoEscape(v)
	if err != nil {
		panic(fmt.Sprintf("model.NewResponseItem: %v", err))
	}
	it, err := ParseResponseItem(b)
	if err != nil {
		panic(fmt.Sprintf("model.NewResponseItem: %v", err))
	}
	return it
}

// Raw returns the item's JSON. Callers must not modify it.
func (it ResponseItem) Raw() json.RawMessage { return it.raw }

// IsZero reports whether it holds no item.
func (it ResponseItem) IsZero() bool { return len(it.raw) == 0 }

// Type is the item's "type" (message, reasoning, function_call, …).
func (it ResponseItem) Type() string { return it.head.Type }

// ID is the item's "id", if any.
func (it ResponseItem) ID() string { return it.head.ID }

// Role is the "role" of a message item.
func (it ResponseItem) Role() string { return it.head.Role }

// CallID is the "call_id" of a tool call or tool call output.
func (it ResponseItem) CallID() string { return it.head.CallID }

// Name is the "name" of a tool call.
func (it ResponseItem) Name() string { return it.head.Name }

// Status is the item's "status", if any.
func (it ResponseItem) Status() string { return it.head.Status }

// Decode unmarshals the whole item into v.
func (it ResponseItem) Decode(v any) error { return json.Unmarshal(it.raw, v) }

// MarshalJSON returns the raw bytes unchanged.
func (it ResponseItem) MarshalJSON() ([]byte, error) {
	if len(it.raw) == 0 {
		return []byte("null"), nil
	}
	return it.raw, nil
}

// UnmarshalJSON keeps the bytes as they are (compacted).
func (it *ResponseItem) UnmarshalJSON(b []byte) error {
	p, err := ParseResponseItem(b)
	if err != nil {
		return err
	}
	*it = p
	return nil
}

// Item types of the Responses API that the core handles by name.
const (
	TypeMessage              = "message"
	TypeReasoning            = "reasoning"
	TypeFunctionCall         = "function_call"
	TypeFunctionCallOutput   = "function_call_output"
	TypeCustomToolCall       = "custom_tool_call"
	TypeCustomToolCallOutput = "custom_tool_call_output"
	TypeLocalShellCall       = "local_shell_call"
	TypeWebSearchCall        = "web_search_call"
	TypeImageGenerationCall  = "image_generation_call"
	TypeCompaction           = "compaction"
)

// IsToolCall reports whether the item asks the client side to run a tool.
func (it ResponseItem) IsToolCall() bool {
	switch it.head.Type {
	case TypeFunctionCall, TypeCustomToolCall, TypeLocalShellCall:
		return true
	}
	return false
}

// IsToolOutput reports whether the item answers a tool call.
func (it ResponseItem) IsToolOutput() bool {
	switch it.head.Type {
	case TypeFunctionCallOutput, TypeCustomToolCallOutput:
		return true
	}
	return false
}

// ContentPart is one part of a message's content.
type ContentPart struct {
	Type        string          `json:"type"` // input_text, output_text, input_image
	Text        string          `json:"text,omitempty"`
	ImageURL    string          `json:"image_url,omitempty"`
	Detail      string          `json:"detail,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// MessageFields is the decoded form of a message item.
type MessageFields struct {
	Type    string        `json:"type"`
	ID      string        `json:"id,omitempty"`
	Role    string        `json:"role"`
	Status  string        `json:"status,omitempty"`
	Content []ContentPart `json:"content"`
	Phase   string        `json:"phase,omitempty"`
}

// NewMessage builds a message item. id may be empty.
func NewMessage(id, role string, parts ...ContentPart) ResponseItem {
	return NewResponseItem(MessageFields{Type: TypeMessage, ID: id, Role: role, Content: parts})
}

// NewTextMessage builds a message item with one text part: input_text for
// user, developer and system roles, output_text for the assistant.
func NewTextMessage(id, role, text string) ResponseItem {
	kind := "input_text"
	if role == "assistant" {
		kind = "output_text"
	}
	return NewMessage(id, role, ContentPart{Type: kind, Text: text})
}

// MessageText joins the text parts of a message item ("" for other items).
func (it ResponseItem) MessageText() string {
	if it.head.Type != TypeMessage {
		return ""
	}
	var m MessageFields
	if err := json.Unmarshal(it.raw, &m); err != nil {
		return ""
	}
	var b []byte
	for _, p := range m.Content {
		if p.Type == "input_text" || p.Type == "output_text" {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// FunctionCallFields is the decoded form of a function_call item.
type FunctionCallFields struct {
	Type      string `json:"type"`
	ID        string `json:"id,omitempty"`
	Status    string `json:"status,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
}

// CustomToolCallFields is the decoded form of a custom_tool_call item.
type CustomToolCallFields struct {
	Type   string `json:"type"`
	ID     string `json:"id,omitempty"`
	Status string `json:"status,omitempty"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
}

// LocalShellCallFields is the decoded form of a local_shell_call item
// (the hosted local_shell tool); Action is kept as JSON.
type LocalShellCallFields struct {
	Type   string          `json:"type"`
	ID     string          `json:"id,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	Status string          `json:"status,omitempty"`
	Action json.RawMessage `json:"action"`
}

// ReasoningFields is the decoded form of a reasoning item.
type ReasoningFields struct {
	Type    string `json:"type"`
	ID      string `json:"id,omitempty"`
	Summary []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"summary"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content,omitempty"`
	EncryptedContent *string `json:"encrypted_content,omitempty"`
}

// NewFunctionCallOutput builds the answer to a function_call. output is
// either a string or a slice of content items ([]ContentPart).
func NewFunctionCallOutput(id, callID string, output any) ResponseItem {
	return NewResponseItem(struct {
		Type   string `json:"type"`
		ID     string `json:"id,omitempty"`
		CallID string `json:"call_id"`
		Output any    `json:"output"`
	}{TypeFunctionCallOutput, id, callID, output})
}

// NewCustomToolCallOutput builds the answer to a custom_tool_call.
func NewCustomToolCallOutput(id, callID, output string) ResponseItem {
	return NewResponseItem(struct {
		Type   string `json:"type"`
		ID     string `json:"id,omitempty"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}{TypeCustomToolCallOutput, id, callID, output})
}

// MarshalNoEscape encodes v as compact JSON without HTML escaping, as the
// wire and the rollout files carry text ('<', '>' and '&' as they are).
// It is the core's one such helper; protocol has its own, since neither
// may import the other.
func MarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
