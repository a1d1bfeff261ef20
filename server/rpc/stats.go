package rpc

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/agentd-dev/agentd/protocol"
)

// Observer is told what the engine does, for metrics. Its methods are
// called on the engine's paths: they must be quick and safe for
// concurrent use.
type Observer interface {
	// RequestDone reports a client request answered: method is a
	// protocol method name ("unknown" for any other), outcome one of
	// OutcomeOK, OutcomeError, OutcomeOverloaded, OutcomeRejected,
	// OutcomeCancelled, and d
	// the time from its arrival to its answer (0 when it was answered
	// without running).
	RequestDone(method, outcome string, d time.Duration)
}

// Request outcomes, for Observer.RequestDone.
const (
	OutcomeOK         = "ok"
	OutcomeError      = "error"
	OutcomeOverloaded = "overloaded"
	// OutcomeRejected: refused before any handler ran (not initialized,
	// unknown or not implemented method, invalid params).
	OutcomeRejected = "rejected"
	// OutcomeCancelled: the client cancelled it ($/cancelRequest) and it
	// was answered with -32800.
	OutcomeCancelled = "cancelled"
)

// Stats is a snapshot of the engine's state.
type Stats struct {
	// Conns counts the initialized client connections by transport
	// ("stdio", "ws", "unix", "memory").
	Conns map[string]int
	// QueueDepth is the messages waiting in every outbound queue.
	QueueDepth int
	// Inflight is the requests admitted: being handled or waiting their
	// turn.
	Inflight int
	// Coalesced counts the deltas merged since the start (all
	// connections, closed ones too).
	Coalesced uint64
	// SlowDisconnects counts the connections closed because they did not
	// read fast enough.
	SlowDisconnects uint64
	// RefusedConns counts the WebSocket clients refused (HTTP 503)
	// because the connection limit was reached.
	RefusedConns uint64
	// Gauges are the registered gauges' values, by name.
	Gauges map[string]int
}

// counters are the engine's running totals.
type counters struct {
	coalescedClosed atomic.Uint64 // merged deltas of connections that ended
	slowDisconnects atomic.Uint64
	refusedConns    atomic.Uint64
}

// Stats returns a snapshot of the engine's state.
func (s *Server) Stats() Stats {
	st := Stats{Conns: map[string]int{}}
	s.mu.Lock()
	for _, c := range s.conns {
		// The merges of every connection ever, counted once: a closing
		// one moves its count to coalescedClosed under s.mu.
		st.Coalesced += c.out.coalescedCount()
		if c.Initialized() && !c.internal {
			st.Conns[c.info.Transport]++
			st.QueueDepth += c.out.depth()
		}
	}
	st.Coalesced += s.counts.coalescedClosed.Load()
	st.Inflight = s.inflight
	gauges := slices.Clone(s.gauges)
	s.mu.Unlock()
	st.SlowDisconnects = s.counts.slowDisconnects.Load()
	st.RefusedConns = s.counts.refusedConns.Load()
	st.Gauges = make(map[string]int, len(gauges))
	for _, g := range gauges {
		st.Gauges[g.name] = g.fn()
	}
	return st
}

// observeRequest reports a request of c to the observer, if any (not the
// engine's own probes). method is reported only when the protocol knows
// it.
func (s *Server) observeRequest(c *Conn, method, outcome string, d time.Duration) {
	if s.opts.Observer == nil || c.internal {
		return
	}
	// The label is the protocol's name or "unknown": never a client's
	// invention (the handler table is not needed for that).
	if info, _ := protocol.Lookup(protocol.ClientRequest, method); info == nil {
		method = "unknown"
	}
	s.opts.Observer.RequestDone(method, outcome, d)
}
