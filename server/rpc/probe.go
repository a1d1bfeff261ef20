package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/agentd-dev/agentd/server/transport"
)

// ProbeMethod is the method a Prober sends. No handler serves it: its
// "method not found" answer is proof enough that connections are read,
// requests dispatched and answers written.
const ProbeMethod = "agentd/probe"

// Prober checks that the engine answers requests, through a connection of
// its own, as a client would: a liveness check worth more than a timer
// (the systemd watchdog pings only after a probe is answered).
type Prober struct {
	st   transport.Stream
	mu   sync.Mutex
	next int
	wait map[string]chan struct{}
	done chan struct{}
}

// NewProber opens the probe connection and initializes it. Its client
// name is "agentd-probe".
func (s *Server) NewProber(ctx context.Context) (*Prober, error) {
	srvEnd, cliEnd := transport.Pipe(64)
	go s.serveStream(srvEnd, true)
	p := &Prober{st: cliEnd, wait: map[string]chan struct{}{}, done: make(chan struct{})}
	go p.read()
	if err := p.call(ctx, "initialize", `{"clientInfo":{"name":"agentd-probe","version":"0"}}`); err != nil {
		_ = cliEnd.Close()
		return nil, err
	}
	if err := p.st.Write(ctx, []byte(`{"method":"initialized"}`)); err != nil {
		_ = cliEnd.Close()
		return nil, err
	}
	return p, nil
}

// Probe sends one request and waits for its answer (whatever it is).
func (p *Prober) Probe(ctx context.Context) error {
	return p.call(ctx, ProbeMethod, "{}")
}

// Close ends the probe connection.
func (p *Prober) Close() error { return p.st.Close() }

func (p *Prober) call(ctx context.Context, method, params string) error {
	p.mu.Lock()
	p.next++
	id := strconv.Itoa(p.next)
	ch := make(chan struct{})
	p.wait[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.wait, id)
		p.mu.Unlock()
	}()
	msg := fmt.Sprintf(`{"id":%s,"method":%q,"params":%s}`, id, method, params)
	if err := p.st.Write(ctx, []byte(msg)); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-p.done:
		return errors.New("the probe connection closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// read consumes everything the engine sends (broadcasts included, so the
// connection is never a slow client) and wakes the caller of each answer.
func (p *Prober) read() {
	defer close(p.done)
	for {
		b, err := p.st.Read(context.Background())
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(b, &m) != nil || m.Method != "" || len(m.ID) == 0 {
			continue
		}
		p.mu.Lock()
		if ch, ok := p.wait[string(m.ID)]; ok {
			close(ch)
			delete(p.wait, string(m.ID))
		}
		p.mu.Unlock()
	}
}

// HoldDispatch stops the dispatch of every connection's requests, as a
// deadlocked engine would, until release is called: each read loop
// waits at the handler table with its next request. Only the test hooks
// call it (test/stall shows that the systemd watchdog notices a stuck
// engine, which a plain timer would not); release may be called more
// than once.
func (s *Server) HoldDispatch() (release func()) {
	s.hmu.Lock()
	var once sync.Once
	return func() { once.Do(s.hmu.Unlock) }
}
