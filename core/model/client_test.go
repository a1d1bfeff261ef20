package model_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// Headers that carry what a client sent lose the characters a header may
// not hold, rather than make the request fail: a DEL or a line break in a
// client's version (User-Agent) or in its turn metadata.
func TestHeadersFromClientsAreCleaned(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok")))
	m := meta
	m.UserAgent = "agentd-tests/0.1 (client; 1\x7f\r\nX-Evil: 1)"
	m.TurnMetadata = "{\"k\":\"v\x7f\"}"
	st, err := model.NewClient(provider(srv)).Stream(context.Background(), request("hi"), m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, st); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if got := h.Get("User-Agent"); got != "agentd-tests/0.1 (client; 1X-Evil: 1)" || h.Get("X-Evil") != "" {
		t.Errorf("User-Agent %q, X-Evil %q", got, h.Get("X-Evil"))
	}
	if got := h.Get("X-Codex-Turn-Metadata"); got != `{"k":"v"}` {
		t.Errorf("turn metadata %q", got)
	}
}

func TestRequestHeadersBodyAndQuery(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok")))
	p := provider(srv)
	p.APIKey = "sk-test"
	p.HTTPHeaders = map[string]string{"X-Team": "core", "OpenAI-Organization": "org_1"}
	p.QueryParams = map[string]string{"api-version": "2025-04-01", "b": "x y"}
	req := request("compare <a> & <b>")
	req.PromptCacheKey = "thr_1"
	st, err := model.NewClient(p).Stream(context.Background(), req, meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, st); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	if r.Path != "/v1/responses" {
		t.Errorf("path = %q", r.Path)
	}
	wantHeaders := map[string]string{
		"Accept":              "text/event-stream",
		"Content-Type":        "application/json",
		"Authorization":       "Bearer sk-test",
		"Originator":          "agentd-tests",
		"User-Agent":          "agentd-tests/0.1",
		"Session-Id":          "thr_1",
		"Thread-Id":           "thr_1",
		"X-Client-Request-Id": "thr_1",
		"X-Team":              "core",
		"Openai-Organization": "org_1",
	}
	for k, v := range wantHeaders {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if diff := cmp.Diff(map[string][]string{"api-version": {"2025-04-01"}, "b": {"x y"}}, map[string][]string(r.Query)); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	// Compact JSON, no HTML escaping, and the same content as the request.
	if !strings.Contains(string(r.Body), `"text":"compare <a> & <b>"`) || strings.Contains(string(r.Body), "\n") {
		t.Errorf("body is not compact unescaped JSON: %s", r.Body)
	}
	want, _ := json.Marshal(req)
	var a, b any
	_ = json.Unmarshal(want, &a)
	_ = json.Unmarshal(r.Body, &b)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestNoAuthorizationWithoutKey(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Reply("resp_1"))
	p := provider(srv)
	st, err := model.NewClient(p).Stream(context.Background(), request("hi"), model.CallMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, st); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	for _, k := range []string{"Authorization", "Originator", "Session-Id", "Thread-Id", "X-Client-Request-Id"} {
		if v, ok := h[k]; ok {
			t.Errorf("header %s = %q, want it absent", k, v)
		}
	}
	if h.Get("User-Agent") != "agentd" {
		t.Errorf("User-Agent = %q, want the default", h.Get("User-Agent"))
	}
}

func TestUnusableProviderFailsWithoutRequest(t *testing.T) {
	srv := mockmodel.New(t)
	for _, p := range []model.Provider{
		{ID: "chat", BaseURL: srv.URL(), WireAPI: "chat"},
		{ID: "nourl", BaseURL: "localhost:1234/v1"},
		{ID: "bad", BaseURL: "http://[::1"},
	} {
		_, err := model.NewClient(p).Stream(context.Background(), request("hi"), meta)
		if me := modelError(t, err); me.Kind != model.ErrInvalidRequest || me.Retryable() {
			t.Errorf("%s: %v, want a fatal invalid request", p.ID, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests made, want 0", n)
	}
}

const (
	fromStream = "Stream"
	fromNext   = "Next"
)

func TestErrorClasses(t *testing.T) {
	body400 := `{"error":{"message":"Invalid value for 'model'","type":"invalid_request_error","param":"model","code":"invalid_value"}}`
	cases := []struct {
		name      string
		retries   int
		script    []mockmodel.Response
		from      string
		kind      model.ErrorKind
		status    int
		message   string // exact; empty: not checked
		prefix    string
		code      string
		delay     time.Duration // RetryAfter
		requests  int
		retryable bool
	}{
		{name: "400 is fatal with the raw body", retries: 3, script: []mockmodel.Response{mockmodel.Status(400, body400)},
			from: fromStream, kind: model.ErrInvalidRequest, status: 400, message: body400, code: "invalid_value", requests: 1},
		{name: "400 context window", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(400, `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}}`)},
			from:   fromStream, kind: model.ErrContextWindowExceeded, status: 400, message: "Your input exceeds the context window of this model.", code: "context_length_exceeded", requests: 1},
		{name: "400 context window by message only", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(400, `{"error":{"message":"This model's maximum context length is 8192 tokens."}}`)},
			from:   fromStream, kind: model.ErrContextWindowExceeded, status: 400, requests: 1},
		{name: "400 content policy", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(400, `{"error":{"message":"flagged","code":"content_policy_violation"}}`)},
			from:   fromStream, kind: model.ErrContentPolicy, status: 400, message: "flagged", requests: 1},
		{name: "429 insufficient quota", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`)},
			from:   fromStream, kind: model.ErrQuotaExceeded, status: 429, code: "insufficient_quota", requests: 1},
		{name: "429 usage limit", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(429, `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached"}}`)},
			from:   fromStream, kind: model.ErrQuotaExceeded, status: 429, code: "usage_limit_reached", requests: 1},
		{name: "401", retries: 3, script: []mockmodel.Response{mockmodel.Status(401, `{"error":{"message":"Incorrect API key"}}`)},
			from: fromStream, kind: model.ErrUnauthorized, status: 401, requests: 1},
		{name: "403", retries: 3, script: []mockmodel.Response{mockmodel.Status(403, `forbidden`)},
			from: fromStream, kind: model.ErrUnauthorized, status: 403, message: "forbidden", requests: 1},
		{name: "404", retries: 3, script: []mockmodel.Response{mockmodel.Status(404, `{"error":{"code":"model_not_found","message":"no such model"}}`)},
			from: fromStream, kind: model.ErrModelNotFound, status: 404, requests: 1},
		{name: "422 other 4xx", retries: 3, script: []mockmodel.Response{mockmodel.Status(422, `nope`)},
			from: fromStream, kind: model.ErrInvalidRequest, status: 422, message: "nope", requests: 1},
		{name: "500 retried then fails", retries: 2,
			script: []mockmodel.Response{mockmodel.Status(500, `{}`), mockmodel.Status(500, `{}`), mockmodel.Status(500, `{"error":{"message":"x"}}`)},
			from:   fromStream, kind: model.ErrInternalServer, status: 500,
			message: "We\u2019re currently experiencing high demand, which may cause temporary errors.", requests: 3, retryable: true},
		{name: "503 no retries", retries: 0, script: []mockmodel.Response{mockmodel.Status(503, `down`)},
			from: fromStream, kind: model.ErrInternalServer, status: 503, message: "unexpected status 503 Service Unavailable: down", requests: 1, retryable: true},
		{name: "500 overloaded is fatal", retries: 2,
			script: []mockmodel.Response{mockmodel.Status(503, `{"error":{"code":"server_is_overloaded","message":"overloaded"}}`)},
			from:   fromStream, kind: model.ErrServerOverloaded, status: 503, message: "overloaded", requests: 1},
		// A 429 that is not a quota: never retried by the request
		// (retries: 3, one request), "exceeded retry limit" as the
		// reference words it; retryable by the turn only with Retry-After.
		{name: "429 not retried by the request", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(429, `{"error":{"message":"mock rate limited","type":"requests"}}`)},
			from:   fromStream, kind: model.ErrRetryLimit, status: 429, message: "exceeded retry limit, last status: 429 Too Many Requests", requests: 1},
		{name: "429 with a request id", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(429, `{}`).WithHeader("x-request-id", "req-123")},
			from:   fromStream, kind: model.ErrRetryLimit, status: 429, message: "exceeded retry limit, last status: 429 Too Many Requests, request id: req-123", requests: 1},
		{name: "429 retry-after-ms is not read", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(429, `{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`).WithHeader("retry-after-ms", "1500")},
			from:   fromStream, kind: model.ErrRetryLimit, status: 429, requests: 1},
		{name: "429 with Retry-After: retryable by the turn", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(429, `{}`).WithHeader("Retry-After", "3")},
			from:   fromStream, kind: model.ErrRetryLimit, status: 429, delay: 3 * time.Second, requests: 1, retryable: true},
		{name: "429 delay in the message is not read", retries: 3,
			script: []mockmodel.Response{mockmodel.Status(429, `{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached. Please try again in 250ms."}}`)},
			from:   fromStream, kind: model.ErrRetryLimit, status: 429, requests: 1},
		{name: "200 that is not an event stream", retries: 2,
			script: []mockmodel.Response{mockmodel.Status(200, `<html>login</html>`).WithHeader("Content-Type", "text/html")},
			from:   fromStream, kind: model.ErrInvalidRequest, status: 200, requests: 1},
		{name: "response.failed", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.Failed("r", "server_error", "mock response.failed event"))},
			from:   fromNext, kind: model.ErrResponseFailed, message: "stream disconnected before completion: mock response.failed event",
			code: "server_error", requests: 1, retryable: true},
		{name: "response.failed context window", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.Failed("r", "context_length_exceeded", "too long"))},
			from:   fromNext, kind: model.ErrContextWindowExceeded, message: "too long", requests: 1},
		{name: "response.failed quota", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.Failed("r", "insufficient_quota", "pay up"))},
			from:   fromNext, kind: model.ErrQuotaExceeded, requests: 1},
		{name: "response.failed rate limit", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.Failed("r", "rate_limit_exceeded", "Rate limit reached for gpt. Please try again in 1.898s. Visit …"))},
			from:   fromNext, kind: model.ErrRateLimited, delay: 1898 * time.Millisecond, requests: 1, retryable: true},
		{name: "response.failed content policy", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.Failed("r", "cyber_policy", "refused"))},
			from:   fromNext, kind: model.ErrContentPolicy, requests: 1},
		{name: "response.incomplete", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.Text("m", "partial"), mockmodel.Incomplete("r", "max_output_tokens"))},
			from:   fromNext, kind: model.ErrResponseIncomplete, message: "Incomplete response returned, reason: max_output_tokens", requests: 1, retryable: true},
		{name: "error event", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.ErrorEvent("internal", "oops"))},
			from:   fromNext, kind: model.ErrResponseFailed, prefix: "stream disconnected before completion: oops", requests: 1, retryable: true},
		{name: "clean end without response.completed", retries: 3,
			script: []mockmodel.Response{mockmodel.SSE(mockmodel.Created("r"), mockmodel.Text("m", "cut short"))},
			from:   fromNext, kind: model.ErrStreamDisconnected, message: "stream closed before response.completed", requests: 1, retryable: true},
		{name: "connection cut mid-event", retries: 3,
			script: []mockmodel.Response{mockmodel.Reply("r", mockmodel.Text("m", "one two three")).CutAfter(3)},
			from:   fromNext, kind: model.ErrStreamDisconnected, prefix: "error reading the SSE stream", requests: 1, retryable: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := mockmodel.New(t)
			srv.Enqueue(tc.script...)
			p := provider(srv)
			p.RequestMaxRetries = tc.retries
			var sl sleeps
			c := model.NewClient(p, model.WithSleep(sl.sleep))
			st, err := c.Stream(context.Background(), request("hi"), meta)
			switch {
			case tc.from == fromStream && err == nil:
				st.Close()
				t.Fatal("Stream succeeded, want an error")
			case tc.from == fromNext && err != nil:
				t.Fatalf("Stream: %v", err)
			case tc.from == fromNext:
				_, err = drain(t, st)
			}
			me := modelError(t, err)
			if me.Kind != tc.kind || me.HTTPStatus != tc.status || me.Retryable() != tc.retryable {
				t.Errorf("got kind %v status %d retryable %v, want %v %d %v (%v)", me.Kind, me.HTTPStatus, me.Retryable(), tc.kind, tc.status, tc.retryable, me)
			}
			if tc.message != "" && me.Message != tc.message {
				t.Errorf("message = %q, want %q", me.Message, tc.message)
			}
			if !strings.HasPrefix(me.Message, tc.prefix) {
				t.Errorf("message = %q, want prefix %q", me.Message, tc.prefix)
			}
			if tc.code != "" && me.Code != tc.code {
				t.Errorf("code = %q, want %q", me.Code, tc.code)
			}
			if me.RetryAfter != tc.delay {
				t.Errorf("RetryAfter = %v, want %v", me.RetryAfter, tc.delay)
			}
			if n := len(srv.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if n := len(sl.all()); n != tc.requests-1 {
				t.Errorf("%d retry waits, want %d", n, tc.requests-1)
			}
		})
	}
}

func TestConnectionRetriesBackOff(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(
		mockmodel.Status(500, ``),
		mockmodel.Status(502, ``),
		mockmodel.Status(503, `{}`).WithHeader("Retry-After", "2"),
		mockmodel.Status(504, ``),
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "finally")),
	)
	p := provider(srv)
	p.RequestMaxRetries = 4
	var sl sleeps
	st, err := model.NewClient(p, model.WithSleep(sl.sleep)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if evs[len(evs)-2].Item.MessageText() != "finally" {
		t.Errorf("unexpected events %v", kinds(evs))
	}
	got := sl.all()
	if len(got) != 4 {
		t.Fatalf("waits = %v, want 4", got)
	}
	// Backoff for retries 1, 2 and 4; the server's 2 s for retry 3.
	for i, base := range map[int]time.Duration{0: 200 * time.Millisecond, 1: 400 * time.Millisecond, 3: 1600 * time.Millisecond} {
		lo, hi := base*9/10, base*11/10
		if got[i] < lo || got[i] > hi {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, got[i], lo, hi)
		}
	}
	if got[2] != 2*time.Second {
		t.Errorf("wait 3 = %v, want the server's 2s", got[2])
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
}

func TestConnectionFailureRetried(t *testing.T) {
	// A port nobody listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var sl sleeps
	p := model.Provider{ID: "dead", BaseURL: "http://" + addr + "/v1", RequestMaxRetries: 2}
	_, err = model.NewClient(p, model.WithSleep(sl.sleep)).Stream(context.Background(), request("hi"), meta)
	me := modelError(t, err)
	if me.Kind != model.ErrConnectionFailed || !me.Retryable() || me.Err == nil {
		t.Errorf("got %v (%v), want a retryable connection failure", me.Kind, me)
	}
	if n := len(sl.all()); n != 2 {
		t.Errorf("%d retry waits, want 2", n)
	}
}

func TestStreamCancelledDuringRetryWait(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Status(500, ``))
	p := provider(srv)
	p.RequestMaxRetries = 3
	ctx, cancel := context.WithCancel(context.Background())
	sleep := func(ctx context.Context, d time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	_, err := model.NewClient(p, model.WithSleep(sleep)).Stream(ctx, request("hi"), meta)
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestBackoff(t *testing.T) {
	for n := 1; n <= 6; n++ {
		base := 200 * time.Millisecond << (n - 1)
		for range 50 {
			if d := model.Backoff(n); d < base*9/10 || d > base*11/10 {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", n, d, base*9/10, base*11/10)
			}
		}
	}
	if d := model.Backoff(100); d <= 0 {
		t.Errorf("Backoff(100) = %v overflows", d)
	}
	if d := model.Backoff(0); d > 220*time.Millisecond {
		t.Errorf("Backoff(0) = %v, want the first delay", d)
	}
}

// Reading to io.EOF after response.completed reads the end of the body, so
// that the next request reuses the connection.
func TestConnectionReusedAfterCompletion(t *testing.T) {
	srv := mockmodel.New(t)
	// The server holds the end of the body until the client has the
	// completed event, so the end is only read if the client drains it.
	var gates []*mockmodel.Gate
	for i := range 2 {
		r := mockmodel.Reply("resp", mockmodel.Text("msg", "text"))
		gates = append(gates, mockmodel.NewGate())
		srv.Enqueue(r.GateAfter(len(r.Events()), gates[i]))
	}
	var mu sync.Mutex
	var reused []bool
	base := srv.HTTPClient().Transport
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			mu.Lock()
			reused = append(reused, info.Reused)
			mu.Unlock()
		}}
		return base.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
	})}
	c := model.NewClient(provider(srv), model.WithHTTPClient(hc))
	for i := range 2 {
		st, err := c.Stream(context.Background(), request("hi"), meta)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := st.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == model.EventCompleted {
				break
			}
		}
		gates[i].Open()
		if _, err := st.Next(); err != io.EOF {
			t.Fatalf("Next after completed = %v, want io.EOF", err)
		}
		st.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]bool{false, true}, reused); diff != "" {
		t.Errorf("connection reuse (-want +got):\n%s", diff)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
