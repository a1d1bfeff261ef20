package mockmodel

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a scripted Responses server. Its methods are safe for
// concurrent use.
type Server struct {
	errorf      func(format string, args ...any) // a test's Errorf, or a process's report
	url         string
	client      *http.Client
	stop        func() // stops the HTTP server once the handlers are released
	allowUnused bool
	respond     func(Request) Response // answers when the script is empty
	dropReqs    bool

	shutdown chan struct{} // closed by Close: releases every gate and stall
	handlers sync.WaitGroup

	mu       sync.Mutex // guards the fields that follow
	closing  bool
	queue    []Response
	scripted int
	received int // requests so far, kept or not
	reqs     []Request
	gone     map[int]chan struct{}
}

// Option configures a Server.
type Option func(*Server)

// AllowUnused stops the server from failing the test when scripted
// responses are left over at the end.
func AllowUnused() Option {
	return func(s *Server) { s.allowUnused = true }
}

// Respond makes f answer every request that finds the script empty, for a
// server whose responses depend on the request (the load harness's mock
// model: many clients, unknown order). Scripted responses still go first.
func Respond(f func(Request) Response) Option {
	return func(s *Server) { s.respond = f }
}

// DropRequests stops the server from keeping the requests it receives
// (Requests then returns none), so that a long-running server does not
// grow with every request.
func DropRequests() Option {
	return func(s *Server) { s.dropReqs = true }
}

func newServer(errorf func(string, ...any), opts []Option) *Server {
	s := &Server{errorf: errorf, shutdown: make(chan struct{}), gone: map[int]chan struct{}{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// New starts a server on a loopback port; it stops when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t.Errorf, opts)
	hs := httptest.NewServer(s)
	s.url = hs.URL + "/v1"
	s.client = hs.Client()
	s.stop = func() {
		hs.CloseClientConnections()
		hs.Close()
	}
	t.Cleanup(s.Close)
	return s
}

// NewInMemory starts a server on an in-memory network, for tests inside a
// testing/synctest bubble (call it inside the bubble). Only the client
// from HTTPClient can reach it.
func NewInMemory(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t.Errorf, opts)
	l := newPipeListener()
	hs := &http.Server{Handler: s}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(l)
	}()
	tr := &http.Transport{DialContext: l.dial}
	s.url = "http://mockmodel.test/v1"
	s.client = &http.Client{Transport: tr}
	s.stop = func() {
		_ = hs.Close()
		<-served
		tr.CloseIdleConnections()
	}
	t.Cleanup(s.Close)
	return s
}

// Serve starts a server on l outside any test, for a mock model that runs
// as its own process; failures go to errorf. Close stops it.
func Serve(l net.Listener, errorf func(format string, args ...any), opts ...Option) *Server {
	s := newServer(errorf, opts)
	hs := &http.Server{Handler: s}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(l)
	}()
	s.url = "http://" + l.Addr().String() + "/v1"
	s.client = &http.Client{}
	s.stop = func() {
		_ = hs.Close()
		<-served
	}
	return s
}

// URL is the base URL to configure as the provider's base_url; it ends in
// /v1, and requests go to URL()+"/responses".
func (s *Server) URL() string { return s.url }

// HTTPClient returns an HTTP client for the server. With New any client
// works; with NewInMemory only this one does.
func (s *Server) HTTPClient() *http.Client { return s.client }

// Enqueue adds responses to the script; each POST takes the next one.
func (s *Server) Enqueue(resps ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, resps...)
	s.scripted += len(resps)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Pending is the number of scripted responses not yet requested.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Disconnected returns a channel that is closed when the server notices
// that the client of request i (from 0) went away while its response was
// being served: a write failed, or the client closed the connection while
// the response waited at a gate, a stall or a pace.
func (s *Server) Disconnected(i int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goneLocked(i)
}

func (s *Server) goneLocked(i int) chan struct{} {
	c, ok := s.gone[i]
	if !ok {
		c = make(chan struct{})
		s.gone[i] = c
	}
	return c
}

func (s *Server) markGone(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.goneLocked(i)
	select {
	case <-c:
	default:
		close(c)
	}
}

// Close releases every held response, stops the server and checks that
// the script was used up. The test's cleanup calls it; calling it again is
// harmless.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	close(s.shutdown)
	unused := len(s.queue)
	s.mu.Unlock()
	s.stop()
	s.handlers.Wait()
	if unused > 0 && !s.allowUnused {
		s.errorf("mockmodel: %d scripted response(s) were never requested", unused)
	}
}

// ServeHTTP answers one request from the script.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		http.Error(w, "mockmodel: server closed", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()

	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		s.errorf("mockmodel: unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "mockmodel: only POST .../responses is served", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// The client hung up before its body was whole: a request it
		// cancelled while sending (a steered or interrupted turn), or one
		// Go's transport sent on a connection the server was closing and
		// sends again on another. It takes no response.
		return
	}
	if err != nil {
		s.errorf("mockmodel: reading request body: %v", err)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, &req.JSON); err != nil {
		s.errorf("mockmodel: request body is not a JSON object: %v", err)
	}

	s.mu.Lock()
	n := s.received
	s.received++
	if !s.dropReqs {
		s.reqs = append(s.reqs, req)
	}
	resp, ok := Response{}, len(s.queue) > 0
	if ok {
		resp, s.queue = s.queue[0], s.queue[1:]
	}
	scripted := s.scripted
	s.mu.Unlock()
	if !ok && s.respond != nil {
		resp, ok = s.respond(req), true
	}

	for _, e := range pairingErrors(req.Input()) {
		s.errorf("mockmodel: request %d: %s", n, e)
	}
	if !ok {
		s.errorf("mockmodel: request %d arrived but only %d response(s) were scripted", n, scripted)
		// 400 is not retried, so the client stops at once.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"mockmodel: no scripted response","type":"invalid_request_error"}}`)
		return
	}
	s.serve(w, r, n, resp)
}

// serve plays one scripted response.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, n int, resp Response) {
	if resp.holdSet && !s.wait(r, n, resp.holdHeaders) {
		return
	}
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.status != 0 {
		if w.Header().Get("Content-Type") == "" {
			ct := "text/plain; charset=utf-8"
			if json.Valid([]byte(resp.body)) {
				ct = "application/json"
			}
			w.Header().Set("Content-Type", ct)
		}
		body := resp.body
		if resp.echoHeaders {
			body = echoBody(r.Header)
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(resp.status)
		_, _ = io.WriteString(w, body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		s.markGone(n)
		return
	}
	var st stamper
	for i := 0; i <= len(resp.events); i++ {
		if g, ok := resp.gates[i]; ok && !s.wait(r, n, g) {
			return
		}
		if i == resp.cutAfter {
			if i < len(resp.events) {
				b := st.apply(resp.events[i]).encode(resp.dataOnly)
				_, _ = w.Write(b[:len(b)/2])
				_ = rc.Flush()
			}
			// Drops the connection without the end of the chunked body.
			panic(http.ErrAbortHandler)
		}
		if i == len(resp.events) {
			return
		}
		if resp.pace > 0 && i > 0 && !s.sleep(r, n, resp.pace) {
			return
		}
		if _, err := w.Write(st.apply(resp.events[i]).encode(resp.dataOnly)); err != nil {
			s.markGone(n)
			return
		}
		if rc.Flush() != nil {
			s.markGone(n)
			return
		}
	}
}

// echoBody is an OpenAI-style error whose message lists the request's
// headers.
func echoBody(h http.Header) string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[name] {
			lines = append(lines, name+": "+v)
		}
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "request rejected; it carried " + strings.Join(lines, "; "), "type": "invalid_request_error",
	}})
	return string(b)
}

// wait blocks until g opens (a nil g never does); false when the client
// went away or the server is closing.
func (s *Server) wait(r *http.Request, n int, g *Gate) bool {
	var open chan struct{}
	if g != nil {
		g.markReached()
		open = g.open
	}
	select {
	case <-open:
		return true
	case <-r.Context().Done():
		s.markGone(n)
		return false
	case <-s.shutdown:
		return false
	}
}

// sleep waits d; false when the client went away or the server is closing.
func (s *Server) sleep(r *http.Request, n int, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		s.markGone(n)
		return false
	case <-s.shutdown:
		return false
	}
}
