package rpc

import (
	"encoding/json"
	"sync"
)

// OrderKey names the requests of a connection that must be handled one
// after the other, in the order they arrived: requests with the same
// non-empty key wait for each other; "" runs at once. It runs on the read
// loop, on the raw params, and must be quick.
type OrderKey func(params json.RawMessage) string

// Order gives methods an ordering key. Requests of one connection with the
// same key (say, the same thread) are handled, and so answered, in the
// order received, as the reference handles them; the others run
// concurrently.
func Order(s *Server, key OrderKey, methods ...string) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	for _, m := range methods {
		s.orderKeys[m] = key
	}
}

// ByThread keys a request by its threadId param ("thread:<id>").
func ByThread(params json.RawMessage) string {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ThreadID == "" {
		return ""
	}
	return "thread:" + p.ThreadID
}

// Fixed returns an OrderKey that puts every request of its methods in one
// line (say, the config writes).
func Fixed(key string) OrderKey { return func(json.RawMessage) string { return key } }

// orderKey returns the ordering key of a request, "" for none.
func (s *Server) orderKey(method string, params json.RawMessage) string {
	s.hmu.RLock()
	key := s.orderKeys[method]
	s.hmu.RUnlock()
	if key == nil {
		return ""
	}
	return key(params)
}

// serialLine runs the requests of one key of one connection in turn.
type serialLine struct {
	queue []func()
}

// lines holds a connection's serial lines by key.
type lines struct {
	mu sync.Mutex
	by map[string]*serialLine
}

// trim drops the map of lines when it is empty (an idle connection keeps
// none).
func (l *lines) trim() {
	l.mu.Lock()
	if len(l.by) == 0 {
		l.by = nil
	}
	l.mu.Unlock()
}

// run runs fn now, on its own goroutine, when no request of key is
// running; otherwise after those that arrived before it.
func (l *lines) run(key string, fn func()) {
	l.mu.Lock()
	if l.by == nil {
		l.by = map[string]*serialLine{}
	}
	if line, busy := l.by[key]; busy {
		line.queue = append(line.queue, fn)
		l.mu.Unlock()
		return
	}
	line := &serialLine{}
	l.by[key] = line
	l.mu.Unlock()
	go func() {
		for next := fn; next != nil; {
			next()
			l.mu.Lock()
			if len(line.queue) == 0 {
				delete(l.by, key)
				next = nil
			} else {
				next, line.queue = line.queue[0], line.queue[1:]
			}
			l.mu.Unlock()
		}
	}()
}
