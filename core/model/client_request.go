package model

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/tmaxmax/go-sse"
)

// maxErrorBody caps how much of an HTTP error body is read.
const maxErrorBody = 1 << 20

// endpointURL builds {base_url}/responses with the provider's query params.
func endpointURL(p Provider) (string, *Error) {
	if p.WireAPI != "" && p.WireAPI != "responses" {
		return "", &Error{Kind: ErrInvalidRequest, Message: "provider " + p.ID + ": wire_api " + p.WireAPI + " is not supported; use \"responses\""}
	}
	u, err := url.Parse(strings.TrimRight(p.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &Error{Kind: ErrInvalidRequest, Message: "provider " + p.ID + ": base_url " + p.BaseURL + " is not an http(s) URL", Err: err}
	}
	u.Path += "/responses"
	u.RawPath = ""
	if len(p.QueryParams) > 0 {
		q := u.Query()
		keys := make([]string, 0, len(p.QueryParams))
		for k := range p.QueryParams {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			q.Set(k, p.QueryParams[k])
		}
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// requestKey is the API key the next request sends.
func (c *Client) requestKey() string {
	if c.apiKey != nil {
		return c.apiKey()
	}
	return c.provider.APIKey
}

// headerValue is s without the characters a header value may not hold
// (control characters other than tab, and DEL). Some of a request's
// headers carry what a client sent (its version in User-Agent, its
// metadata in x-codex-turn-metadata, where JSON escapes the other control
// characters but not DEL): one such character would make the HTTP client
// refuse every model request of the thread.
func headerValue(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// setHeaders sets the request headers, key being the API key. Provider
// http_headers come last so that a configuration can override the
// defaults.
func (c *Client) setHeaders(h http.Header, meta CallMeta, key string) {
	h.Set("Accept", "text/event-stream")
	h.Set("Content-Type", "application/json")
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	if meta.Originator != "" {
		h.Set("originator", headerValue(meta.Originator))
	}
	ua := headerValue(meta.UserAgent)
	if ua == "" {
		ua = "agentd"
	}
	h.Set("User-Agent", ua)
	if meta.ThreadID != "" {
		session := meta.SessionID
		if session == "" {
			session = meta.ThreadID
		}
		h.Set("session-id", session)
		h.Set("thread-id", meta.ThreadID)
		h.Set("x-client-request-id", meta.ThreadID)
	}
	if meta.SubAgent != "" {
		h.Set("x-openai-subagent", meta.SubAgent)
	}
	if meta.ParentThreadID != "" {
		h.Set("x-codex-parent-thread-id", meta.ParentThreadID)
	}
	if meta.TurnMetadata != "" {
		h.Set("x-codex-turn-metadata", headerValue(meta.TurnMetadata))
	}
	if meta.Traceparent != "" {
		h.Set("traceparent", headerValue(meta.Traceparent))
		if meta.Tracestate != "" {
			h.Set("tracestate", headerValue(meta.Tracestate))
		}
	}
	for k, v := range c.provider.HTTPHeaders {
		h.Set(k, v)
	}
}

// open makes one attempt: it sends the request and returns the stream once
// a 200 event stream has started, or a classified error.
func (c *Client) open(ctx context.Context, body []byte, model string, meta CallMeta) (Stream, error) {
	actx, cancel := context.WithCancel(ctx)
	key := c.requestKey()
	// A server may echo the request's headers (or its URL) in an error:
	// every error of this request has the credentials cut out, before
	// anyone logs, records or shows it.
	secrets := c.provider.Secrets(key)
	s := &sseStream{ctx: ctx, cancel: cancel, log: c.log, model: model, idle: c.idle,
		threadID: meta.ThreadID, turnID: meta.TurnID, secrets: secrets}
	// The idle timer also covers the wait for the response headers: a
	// server that accepts the connection and never answers is as stuck as
	// one that stops mid-stream.
	s.timer = time.AfterFunc(c.idle, s.onIdle)
	fail := func(err error) (Stream, error) {
		s.timer.Stop()
		cancel()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if s.idleFired.Load() {
			return nil, idleError()
		}
		return nil, redactError(err, secrets)
	}

	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fail(&Error{Kind: ErrInvalidRequest, Message: err.Error(), Err: err})
	}
	c.setHeaders(hreq.Header, meta, key)
	resp, err := c.http.Do(hreq)
	if err != nil {
		return fail(&Error{Kind: ErrConnectionFailed, Message: err.Error(), Err: err})
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return fail(classifyHTTP(resp.StatusCode, resp.Header, b))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "text/event-stream" {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			return fail(&Error{Kind: ErrInvalidRequest, HTTPStatus: resp.StatusCode,
				Message: "expected an event stream from " + c.url + ", got " + ct + ": " + string(b)})
		}
	}
	s.limits = ParseRateLimits(resp.Header)
	s.servedModel = strings.TrimSpace(resp.Header.Get(servedModelHeader))
	s.start(resp.Body)
	return s, nil
}

// sseReadConfig raises go-sse's 64 KiB event limit: response.completed
// repeats the whole output and easily exceeds it.
var sseReadConfig = &sse.ReadConfig{MaxEventSize: 16 << 20}
