package model

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file turns what a provider says went wrong (an HTTP status with a
// body, a response.failed or error event) into a classified *Error.

// internalServerErrorMessage is the text the reference shows for HTTP 500
// instead of the body; clients match on it.
const internalServerErrorMessage = "We\u2019re currently experiencing high demand, which may cause temporary errors."

// streamDisconnectedPrefix starts the message of a response.failed or error
// event that is retried, as the reference words it.
const streamDisconnectedPrefix = "stream disconnected before completion: "

// maxServerDelay caps a delay the server asks for before a retry, so that a
// bogus Retry-After cannot park a turn for hours.
const maxServerDelay = 5 * time.Minute

// apiError is the provider's error object: {"error":{"code","type","message"}}
// over HTTP, the "error" of response.failed, or the top level of an error
// event.
type apiError struct {
	Code    string `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// parseHTTPErrorBody extracts the error object of an HTTP error body. It
// accepts {"error":{...}} and a bare {...}; anything else yields zero.
func parseHTTPErrorBody(body []byte) apiError {
	var wrapped struct {
		Error json.RawMessage `json:"error"`
		apiError
	}
	if json.Unmarshal(body, &wrapped) != nil {
		return apiError{}
	}
	var inner apiError
	if len(wrapped.Error) > 0 && json.Unmarshal(wrapped.Error, &inner) == nil {
		return inner
	}
	if s, err := strconv.Unquote(string(wrapped.Error)); err == nil {
		// {"error":"text"}
		return apiError{Message: s}
	}
	return wrapped.apiError
}

// codeKind maps a provider error code (or type) to a fatal or specially
// handled kind; 0 when the code is not one of them.
func codeKind(e apiError) ErrorKind {
	for _, c := range [...]string{e.Code, e.Type} {
		switch c {
		case "context_length_exceeded", "context_window_exceeded":
			return ErrContextWindowExceeded
		case "insufficient_quota", "usage_limit_reached", "usage_not_included", "quota_exceeded":
			return ErrQuotaExceeded
		case "content_policy_violation", "content_filter", "cyber_policy":
			return ErrContentPolicy
		case "invalid_prompt":
			return ErrInvalidRequest
		case "server_is_overloaded", "slow_down":
			return ErrServerOverloaded
		case "rate_limit_exceeded":
			return ErrRateLimited
		case "model_not_found":
			return ErrModelNotFound
		}
	}
	// Some compatible servers carry no code, only the text.
	m := strings.ToLower(e.Message)
	if strings.Contains(m, "maximum context length") || strings.Contains(m, "context window") {
		return ErrContextWindowExceeded
	}
	return 0
}

// classifyHTTP classifies a non-2xx response.
func classifyHTTP(status int, h http.Header, body []byte) *Error {
	ae := parseHTTPErrorBody(body)
	code := ae.Code
	if code == "" {
		code = ae.Type
	}
	raw := string(body)
	e := &Error{HTTPStatus: status, Code: code, Message: raw}
	if e.Message == "" {
		e.Message = strconv.Itoa(status) + " " + http.StatusText(status)
	}
	kind := codeKind(ae)
	switch {
	case kind == ErrContextWindowExceeded || kind == ErrQuotaExceeded || kind == ErrContentPolicy:
		e.Kind = kind
		if ae.Message != "" {
			e.Message = ae.Message
		}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = ErrUnauthorized
	case status == http.StatusNotFound:
		e.Kind = ErrModelNotFound
	case status == http.StatusTooManyRequests:
		// As the reference (0.169, observed): a 429 that is not a quota
		// or usage limit is not retried by the request; it fails as
		// "exceeded retry limit" (responseTooManyFailedAttempts), which
		// the turn retries only when the server said when to, in a
		// Retry-After header (retry-after-ms and "try again in" in the
		// message are not read).
		e.Kind = ErrRetryLimit
		e.Message = "exceeded retry limit, last status: " + strconv.Itoa(status) + " " + http.StatusText(status)
		if id := requestID(h); id != "" {
			e.Message += ", request id: " + id
		}
		e.RetryAfter = retryAfterHeader(h)
	case status >= 500 && kind == ErrServerOverloaded:
		e.Kind = ErrServerOverloaded
		if ae.Message != "" {
			e.Message = ae.Message
		}
	case status == http.StatusInternalServerError:
		e.Kind = ErrInternalServer
		e.Message = internalServerErrorMessage
		e.RetryAfter = retryAfter(h, "")
	case status >= 500:
		e.Kind = ErrInternalServer
		e.Message = "unexpected status " + strconv.Itoa(status) + " " + http.StatusText(status) + ": " + raw
		e.RetryAfter = retryAfter(h, "")
	default:
		// HTTP 400 and every other 4xx: the raw body is the message, as
		// the reference shows it.
		e.Kind = ErrInvalidRequest
	}
	return e
}

// classifyFailure classifies the error object of a response.failed or error
// event. Unknown codes are a retryable ErrResponseFailed.
func classifyFailure(ae apiError) *Error {
	code := ae.Code
	if code == "" {
		code = ae.Type
	}
	e := &Error{Code: code, Message: ae.Message}
	switch k := codeKind(ae); k {
	case ErrContextWindowExceeded, ErrQuotaExceeded, ErrContentPolicy, ErrInvalidRequest,
		ErrServerOverloaded, ErrModelNotFound:
		e.Kind = k
	case ErrRateLimited:
		e.Kind = ErrRateLimited
		e.RetryAfter = tryAgainIn(ae.Message)
	default:
		e.Kind = ErrResponseFailed
		msg := ae.Message
		if msg == "" {
			msg = "response.failed event received"
		}
		e.Message = streamDisconnectedPrefix + msg
	}
	return e
}

// requestID is the id the server gave the request in its headers, as the
// reference looks for it: cf-ray, then x-request-id, then
// x-oai-request-id; "" when there is none.
func requestID(h http.Header) string {
	for _, k := range [...]string{"cf-ray", "x-request-id", "x-oai-request-id"} {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			return v
		}
	}
	return ""
}

// retryAfterHeader reads the Retry-After header alone (seconds or an HTTP
// date); 0 when there is none.
func retryAfterHeader(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return capDelay(time.Duration(s * float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return capDelay(d)
		}
	}
	return 0
}

// retryAfter reads the delay the server asks for: retry-after-ms, then
// Retry-After (seconds or an HTTP date), then "try again in …" in the
// message. 0 when there is none.
func retryAfter(h http.Header, message string) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 {
			return capDelay(time.Duration(ms * float64(time.Millisecond)))
		}
	}
	if d := retryAfterHeader(h); d > 0 {
		return d
	}
	return tryAgainIn(message)
}

// tryAgainIn parses "… try again in 1.5s" or "… in 250ms" from a rate
// limit message, the only place some providers put the delay.
func tryAgainIn(message string) time.Duration {
	const marker = "try again in "
	i := strings.Index(strings.ToLower(message), marker)
	if i < 0 {
		return 0
	}
	rest := message[i+len(marker):]
	j := 0
	for j < len(rest) && (rest[j] == '.' || ('0' <= rest[j] && rest[j] <= '9')) {
		j++
	}
	n, err := strconv.ParseFloat(rest[:j], 64)
	if err != nil || n < 0 {
		return 0
	}
	unit := strings.ToLower(strings.TrimSpace(rest[j:]))
	switch {
	case strings.HasPrefix(unit, "ms"):
		return capDelay(time.Duration(n * float64(time.Millisecond)))
	case strings.HasPrefix(unit, "s"):
		return capDelay(time.Duration(n * float64(time.Second)))
	}
	return 0
}

func capDelay(d time.Duration) time.Duration {
	return min(d, maxServerDelay)
}
