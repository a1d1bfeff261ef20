// Package execcli is agentd exec: one turn (or one more turn of a stored
// thread) run without a user, as codex exec runs it. It is a client of
// the app-server protocol, in process or of a running daemon, and turns
// the server's notifications into either a human transcript (stderr) or
// the JSONL event stream of codex exec --json (stdout), the stream the
// Codex TypeScript SDK reads. docs/exec-events.schema.json describes that
// stream.
package execcli

import (
	"encoding/json"
	"strings"
)

// The JSONL events. Their type names and fields are codex exec's.
type (
	threadStarted struct {
		Type     string `json:"type"`
		ThreadID string `json:"thread_id"`
	}
	turnStarted struct {
		Type string `json:"type"`
	}
	turnCompleted struct {
		Type  string `json:"type"`
		Usage Usage  `json:"usage"`
	}
	turnFailed struct {
		Type  string      `json:"type"`
		Error threadError `json:"error"`
	}
	itemEvent struct {
		Type string `json:"type"`
		Item any    `json:"item"`
	}
	errorEvent struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	threadError struct {
		Message string `json:"message"`
	}
)

// Usage is a turn.completed's token counts: the thread's totals as the
// server last reported them.
type Usage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

// The items of item.* events: an id of the stream's own (item_0,
// item_1, …), a type, and the type's fields.
type (
	itemHead struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	textItem struct {
		itemHead
		Text string `json:"text"`
	}
	commandItem struct {
		itemHead
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		ExitCode         *int64 `json:"exit_code"`
		Status           string `json:"status"`
	}
	fileChangeItem struct {
		itemHead
		Changes []fileUpdate `json:"changes"`
		Status  string       `json:"status"`
	}
	fileUpdate struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	}
	mcpItem struct {
		itemHead
		Server    string     `json:"server"`
		Tool      string     `json:"tool"`
		Arguments any        `json:"arguments"`
		Result    *mcpResult `json:"result"`
		Error     *mcpError  `json:"error"`
		Status    string     `json:"status"`
	}
	mcpResult struct {
		Content           []any `json:"content"`
		StructuredContent any   `json:"structured_content"`
	}
	mcpError struct {
		Message string `json:"message"`
	}
	webSearchItem struct {
		itemHead
		Query  string `json:"query"`
		Action any    `json:"action,omitempty"`
	}
	todoListItem struct {
		itemHead
		Items []todo `json:"items"`
	}
	todo struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	}
	errorItem struct {
		itemHead
		Message string `json:"message"`
	}
)

// wireItem is the part of a protocol ThreadItem the events use.
type wireItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Text             string          `json:"text"`
	Summary          []string        `json:"summary"`
	Command          string          `json:"command"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int64          `json:"exitCode"`
	Status           string          `json:"status"`
	Changes          []wireChange    `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        any             `json:"arguments"`
	Result           *wireMcpResult  `json:"result"`
	Error            *mcpError       `json:"error"`
	Query            string          `json:"query"`
	Action           json.RawMessage `json:"action"`
}

type wireChange struct {
	Path string `json:"path"`
	Kind struct {
		Type string `json:"type"`
	} `json:"kind"`
}

type wireMcpResult struct {
	Content           []any `json:"content"`
	StructuredContent any   `json:"structuredContent"`
}

type wireTurnError struct {
	Message           string  `json:"message"`
	AdditionalDetails *string `json:"additionalDetails"`
}

// withDetails is "message (details)", as codex exec words an error with
// details.
func withDetails(msg string, details *string) string {
	if details != nil && *details != "" {
		return msg + " (" + *details + ")"
	}
	return msg
}

// snake is a protocol status in the events' spelling (inProgress →
// in_progress).
func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
