package model

import (
	"fmt"
	"time"
)

// ErrorKind classifies why a model call failed. The turn loop decides from
// it whether to retry and what to tell the client.
type ErrorKind uint8

const (
	// Fatal kinds: the turn fails at once.
	ErrContextWindowExceeded ErrorKind = iota + 1
	ErrQuotaExceeded                   // quota or usage limit
	ErrInvalidRequest                  // HTTP 400 and other 4xx not listed here
	ErrUnauthorized                    // HTTP 401 / 403
	ErrContentPolicy                   // refused by the provider's policy
	ErrServerOverloaded                // the backend says it is overloaded
	ErrModelNotFound                   // HTTP 404 for the model

	// Retryable kinds.
	ErrInternalServer     // HTTP 5xx
	ErrRateLimited        // a rate limit in a response.failed or error event
	ErrConnectionFailed   // network error before a response
	ErrStreamDisconnected // stream ended before response.completed, or a read error
	ErrResponseFailed     // response.failed / error event
	ErrStreamIdleTimeout  // no data for stream_idle_timeout
	ErrResponseIncomplete // response.incomplete
	ErrRetryLimit         // HTTP 429 (not a quota): "exceeded retry limit"; retried by the turn only with Retry-After
)

var errorKindNames = [...]string{
	ErrContextWindowExceeded: "contextWindowExceeded",
	ErrQuotaExceeded:         "usageLimitExceeded",
	ErrInvalidRequest:        "badRequest",
	ErrUnauthorized:          "unauthorized",
	ErrContentPolicy:         "contentPolicy",
	ErrServerOverloaded:      "serverOverloaded",
	ErrModelNotFound:         "modelNotFound",
	ErrInternalServer:        "internalServerError",
	ErrRateLimited:           "rateLimitExceeded",
	ErrConnectionFailed:      "httpConnectionFailed",
	ErrStreamDisconnected:    "responseStreamDisconnected",
	ErrResponseFailed:        "responseFailed",
	ErrStreamIdleTimeout:     "streamIdleTimeout",
	ErrResponseIncomplete:    "responseIncomplete",
	ErrRetryLimit:            "responseTooManyFailedAttempts",
}

func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) && errorKindNames[k] != "" {
		return errorKindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", k)
}

// Retryable reports whether a new attempt may succeed.
func (k ErrorKind) Retryable() bool {
	switch k {
	case ErrInternalServer, ErrRateLimited, ErrConnectionFailed, ErrStreamDisconnected,
		ErrResponseFailed, ErrStreamIdleTimeout, ErrResponseIncomplete:
		return true
	}
	return false
}

// Error is a classified model failure. Errors are values on the stream,
// never events.
type Error struct {
	Kind ErrorKind
	// HTTPStatus is the response status, 0 when there was none.
	HTTPStatus int
	// Message is what to show the user: for HTTP 400 the raw body, as the
	// reference does.
	Message string
	// RetryAfter is the delay the server asked for, 0 if none.
	RetryAfter time.Duration
	// Code is the provider's machine error code, if any.
	Code string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	if e.HTTPStatus != 0 {
		return fmt.Sprintf("model %s (HTTP %d): %s", e.Kind, e.HTTPStatus, e.Message)
	}
	return fmt.Sprintf("model %s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the failure may go away on a new stream, the
// turn's retry: a retryable kind, or a 429 whose server said when to try
// again (Retry-After), as the reference retries it. The request's own
// retries (Client.Stream) go by the kind alone.
func (e *Error) Retryable() bool {
	return e.Kind.Retryable() || (e.Kind == ErrRetryLimit && e.HTTPStatus == 429 && e.RetryAfter > 0)
}
