package model

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// maxRetries caps request_max_retries, as the reference does.
const maxRetries = 100

// Client streams responses from one provider. It is safe for concurrent
// use; each Stream call is an independent request.
type Client struct {
	provider Provider
	http     *http.Client
	log      *zap.Logger
	sleep    func(ctx context.Context, d time.Duration) error
	// apiKey, when set, gives the key of each request (WithAPIKey).
	apiKey func() string

	// url is the full endpoint, query included; setupErr is set instead
	// when the provider cannot be used, and every Stream call returns it.
	url      string
	setupErr *Error
	idle     time.Duration
	retries  int
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client. Its Timeout must be zero: a stream
// may last many minutes, and the client enforces the idle timeout itself.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithLogger sets the logger (default: none).
func WithLogger(l *zap.Logger) Option {
	return func(c *Client) { c.log = l }
}

// WithAPIKey makes the client ask key for the API key of every request
// instead of using Provider.APIKey, so that a key that changes while the
// client lives (a sign-in) is used from the next request on. An empty key
// sends no Authorization header.
func WithAPIKey(key func() string) Option {
	return func(c *Client) { c.apiKey = key }
}

// WithSleep replaces the wait between connection retries; it must return
// early with ctx.Err() when ctx ends. Tests use it to record the delays.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.sleep = sleep }
}

// NewClient returns a client for provider p. Zero StreamIdleTimeout means
// the default; RequestMaxRetries is used as given (the config loader fills
// in the default) and capped at 100. A provider that cannot work (bad
// base_url, wire_api other than "responses") makes every Stream call fail
// with ErrInvalidRequest.
func NewClient(p Provider, opts ...Option) *Client {
	c := &Client{
		provider: p,
		http:     http.DefaultClient,
		log:      zap.NewNop(),
		sleep:    Sleep,
		idle:     p.StreamIdleTimeout,
		retries:  min(max(p.RequestMaxRetries, 0), maxRetries),
	}
	if c.idle <= 0 {
		c.idle = DefaultStreamIdleTimeout
	}
	for _, o := range opts {
		o(c)
	}
	c.url, c.setupErr = endpointURL(p)
	return c
}

// Stream sends req and returns the open response stream once the server
// has answered 200 with an event stream. Retryable failures before that
// (connection errors, 5xx, no answer within the idle timeout; not a 429,
// as in the reference) are
// retried up to RequestMaxRetries times, waiting Backoff(n) or the delay the
// server asked for; the last failure is returned as an *Error. Failures
// after the stream has started are returned by Stream.Next and are not
// retried here: the turn loop retries whole streams (StreamMaxRetries).
//
// When ctx ends, Stream returns ctx.Err(). The stream stays bound to ctx:
// cancelling it closes the connection.
func (c *Client) Stream(ctx context.Context, req *Request, meta CallMeta) (Stream, error) {
	if c.setupErr != nil {
		return nil, c.setupErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	body, err := MarshalNoEscape(req)
	if err != nil {
		return nil, &Error{Kind: ErrInvalidRequest, Message: "cannot encode the request: " + err.Error(), Err: err}
	}
	for attempt := 0; ; attempt++ {
		st, err := c.open(ctx, body, req.Model, meta)
		if err == nil {
			return st, nil
		}
		var me *Error
		if !errors.As(err, &me) || !me.Kind.Retryable() || attempt >= c.retries {
			return nil, err
		}
		delay := me.RetryAfter
		if delay <= 0 {
			delay = Backoff(attempt + 1)
		}
		c.log.Info("model request failed; retrying",
			zap.String("thread", meta.ThreadID), zap.String("turn", meta.TurnID),
			zap.Int("retry", attempt+1), zap.Int("maxRetries", c.retries),
			zap.Duration("delay", delay), zap.Error(err))
		if err := c.sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// Sleep waits d, or until ctx ends and then returns its error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
