package model

import "time"

// StreamEventKind names one kind of event a model stream yields.
type StreamEventKind uint8

// The events a stream yields. Redundant SSE events (in_progress,
// output_text.done, content_part.*, function_call_arguments.delta) are
// dropped by the parser and never appear here.
const (
	// EventCreated: the response exists (response.created).
	EventCreated StreamEventKind = iota + 1
	// EventOutputItemAdded: an output item started; Item holds what is
	// known so far (response.output_item.added).
	EventOutputItemAdded
	// EventOutputTextDelta: text for the message ItemID.
	EventOutputTextDelta
	// EventReasoningSummaryPartAdded: a new summary part SummaryIndex of
	// reasoning item ItemID.
	EventReasoningSummaryPartAdded
	// EventReasoningSummaryDelta: summary text for part SummaryIndex.
	EventReasoningSummaryDelta
	// EventReasoningTextDelta: raw reasoning text for part ContentIndex.
	EventReasoningTextDelta
	// EventCustomToolCallInputDelta: input for the custom tool call ItemID.
	EventCustomToolCallInputDelta
	// EventOutputItemDone: the output item Item is complete
	// (response.output_item.done).
	EventOutputItemDone
	// EventCompleted: the response completed (response.completed); the
	// stream yields nothing after it.
	EventCompleted
)

// StreamEvent is one event of a model stream. It is a flat struct rather than
// an interface so that the per-delta path does not allocate for boxing; only
// the fields named in the kind's doc are set.
type StreamEvent struct {
	Kind         StreamEventKind
	ItemID       string
	Delta        string
	SummaryIndex int
	ContentIndex int
	Item         ResponseItem

	// Set on EventCreated and EventCompleted.
	ResponseID string
	// Model is set on EventCreated and EventCompleted only when the
	// server names, in its OpenAI-Model response header (or that header
	// repeated in response.created), a model other than Request.Model:
	// the request was rerouted, and the turn loop reports it. The body's
	// "model" field is not read, as the reference does not.
	Model string
	// Set on EventCompleted.
	Usage *TokenUsage
	// EndTurn is the server's end_turn hint on EventCompleted, nil when
	// absent.
	EndTurn *bool
	// RawUsage is the usage object exactly as the server sent it.
	RawUsage []byte
}

// TokenUsage counts the tokens of one response (or a sum of them).
type TokenUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
}

// Add returns the sum of u and o.
func (u TokenUsage) Add(o TokenUsage) TokenUsage {
	return TokenUsage{
		InputTokens:           u.InputTokens + o.InputTokens,
		CachedInputTokens:     u.CachedInputTokens + o.CachedInputTokens,
		OutputTokens:          u.OutputTokens + o.OutputTokens,
		ReasoningOutputTokens: u.ReasoningOutputTokens + o.ReasoningOutputTokens,
		TotalTokens:           u.TotalTokens + o.TotalTokens,
	}
}

// Stream is an open model response. Next returns the next event, or an
// error: io.EOF after EventCompleted, *Error for every failure (a stream cut
// before completion is an *Error of kind ErrStreamDisconnected). Close
// releases the connection; it is safe to call more than once and from
// another goroutine, and cancelling the context passed to Client.Stream
// has the same effect: a Next blocked on the network returns promptly with
// context.Canceled (or the context's error). Calling Next until io.EOF
// after EventCompleted lets the connection be reused. Next itself must not
// be called from two goroutines at once. RateLimits returns what the
// response's headers said of the rate limits (an empty snapshot of the
// default bucket when they said nothing); it is known once the stream is
// open and may be called at any time.
type Stream interface {
	Next() (StreamEvent, error)
	Close() error
	RateLimits() RateLimitSnapshot
}

// Provider describes a Responses-compatible endpoint, with the reference's
// config key names in the comments.
type Provider struct {
	ID                 string            // the key under [model_providers]
	Name               string            // name
	BaseURL            string            // base_url, e.g. http://127.0.0.1:8080/v1
	EnvKey             string            // env_key: variable holding the API key
	APIKey             string            // resolved from EnvKey at startup (see WithAPIKey)
	WireAPI            string            // wire_api: only "responses"
	RequiresOpenAIAuth bool              // requires_openai_auth
	RequestMaxRetries  int               // request_max_retries (default 4)
	StreamMaxRetries   int               // stream_max_retries (default 5)
	StreamIdleTimeout  time.Duration     // stream_idle_timeout_ms (default 300 s)
	HTTPHeaders        map[string]string // http_headers, with env_http_headers resolved
	EnvHTTPHeaders     map[string]string // env_http_headers: header → variable
	QueryParams        map[string]string // query_params
	// NoWebSearch: the provider has no hosted web_search tool, which is
	// then never offered (agentd's supports_web_search = false; the
	// built-in demo provider).
	NoWebSearch bool
}

// Default retry and timeout values, as the reference uses.
const (
	DefaultRequestMaxRetries = 4
	DefaultStreamMaxRetries  = 5
	DefaultStreamIdleTimeout = 300 * time.Second
)
