package model

import "encoding/json"

// Request is the body of POST {base_url}/responses.
type Request struct {
	Model             string            `json:"model"`
	Instructions      string            `json:"instructions,omitempty"`
	Input             []ResponseItem    `json:"input"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        string            `json:"tool_choice"`
	ParallelToolCalls bool              `json:"parallel_tool_calls"`
	Reasoning         *Reasoning        `json:"reasoning,omitempty"`
	Store             bool              `json:"store"`
	Stream            bool              `json:"stream"`
	Include           []string          `json:"include"`
	PromptCacheKey    string            `json:"prompt_cache_key,omitempty"`
	Text              *TextControls     `json:"text,omitempty"`
	ClientMetadata    map[string]string `json:"client_metadata,omitempty"`
}

// Reasoning asks for reasoning effort and summaries.
type Reasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// TextControls shapes the text output: verbosity and an optional JSON
// schema the final answer must follow.
type TextControls struct {
	Verbosity string      `json:"verbosity,omitempty"`
	Format    *TextFormat `json:"format,omitempty"`
}

// TextFormat is a structured-output constraint.
type TextFormat struct {
	Type   string          `json:"type"` // "json_schema"
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// CallMeta is what the client adds to a request as headers: who calls and
// for which thread and turn.
type CallMeta struct {
	Originator string
	UserAgent  string
	ThreadID   string
	TurnID     string
	// SessionID is the session the thread belongs to (session-id); ""
	// means the thread's own id. A sub-agent's requests carry its parent
	// thread's.
	SessionID string
	// SubAgent names the sub-agent making the request ("review"), sent
	// as x-openai-subagent; ParentThreadID is the thread it works for
	// (x-codex-parent-thread-id).
	SubAgent       string
	ParentThreadID string
	// Traceparent and Tracestate, when set, carry the caller's W3C trace
	// context to the provider.
	Traceparent string
	Tracestate  string
	// TurnMetadata, when set, is sent as x-codex-turn-metadata: the
	// turn's metadata as a JSON object (the request's
	// client_metadata["x-codex-turn-metadata"] holds the same).
	TurnMetadata string
}
