// Package metrics exports agentd's Prometheus metrics (all named
// agentd_*), with the Go runtime and process collectors, from a registry of
// its own, and serves them with the health probes. It imports nothing of
// agentd: the engine's state comes from a function, and the thread layer
// reports through the methods of Metrics.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// EngineStats is the JSON-RPC engine's state at a scrape.
type EngineStats struct {
	// Conns counts the connected clients by transport.
	Conns map[string]int
	// QueueDepth is the messages waiting in outbound queues; Inflight the
	// requests admitted (being handled or waiting their turn).
	QueueDepth, Inflight int
	// Coalesced, SlowDisconnects and RefusedConns (clients refused at
	// the connection limit) are running totals.
	Coalesced, SlowDisconnects, RefusedConns uint64
	// ServerRequestsPending is the server requests awaiting an answer.
	ServerRequestsPending int
}

// Metrics holds agentd's collectors.
type Metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	turns          *prometheus.CounterVec
	modelRequests  *prometheus.CounterVec
	modelSeconds   prometheus.Histogram
	modelRetries   prometheus.Counter
	tokens         *prometheus.CounterVec
	toolCalls      *prometheus.CounterVec
	toolSeconds    *prometheus.HistogramVec
	rolloutFails   prometheus.Counter
	engine         engineCollector
	// profiling: Handler serves /debug/pprof/ too (EnableProfiling).
	profiling bool
}

// latencyBuckets span a millisecond to five minutes.
var latencyBuckets = prometheus.ExponentialBucketsRange(0.001, 300, 16)

// New registers the collectors. The engine's state is read at each scrape
// from the function SetEngine gives.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_requests_total", Help: "Client requests answered, by method and outcome (ok, error, overloaded, rejected, cancelled).",
		}, []string{"method", "outcome"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agentd_request_duration_seconds", Help: "Time from a request's start to its answer, by method (handled requests only).", Buckets: latencyBuckets,
		}, []string{"method"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_turns_total", Help: "Turns ended, by status (completed, failed, interrupted).",
		}, []string{"status"}),
		modelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_model_requests_total", Help: "Requests to the model provider, by outcome (ok: the stream opened; error).",
		}, []string{"outcome"}),
		modelSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "agentd_model_request_duration_seconds", Help: "Time until the model provider's stream opened (or failed).", Buckets: latencyBuckets,
		}),
		modelRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentd_model_retries_total", Help: "Model streams retried after an error.",
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_model_tokens_total", Help: "Tokens the model reported, by kind (input, cached_input, output, reasoning_output).",
		}, []string{"kind"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_tool_calls_total", Help: "Tool calls ended, by tool (command, patch, dynamic, mcp, …) and status.",
		}, []string{"tool", "status"}),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agentd_tool_call_duration_seconds", Help: "Tool call durations, by tool.", Buckets: latencyBuckets,
		}, []string{"tool"}),
		rolloutFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentd_rollout_write_failures_total", Help: "Failed attempts to write or sync a thread's rollout (a full disk, a read-only home); each is retried.",
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.requestSeconds, m.turns, m.modelRequests, m.modelSeconds, m.modelRetries, m.tokens, m.toolCalls, m.toolSeconds,
		m.rolloutFails, &m.engine,
	)
	return m
}

// SetEngine sets where the engine's state is read at each scrape.
func (m *Metrics) SetEngine(stats func() EngineStats) { m.engine.stats.Store(&stats) }

// RequestDone counts an answered client request (rpc.Observer).
func (m *Metrics) RequestDone(method, outcome string, d time.Duration) {
	m.requests.WithLabelValues(method, outcome).Inc()
	if outcome == "ok" || outcome == "error" {
		m.requestSeconds.WithLabelValues(method).Observe(d.Seconds())
	}
}

// TurnEnded counts a turn by its status.
func (m *Metrics) TurnEnded(status string) { m.turns.WithLabelValues(status).Inc() }

// ModelRequest counts a request to the provider and the time its stream
// took to open.
func (m *Metrics) ModelRequest(ok bool, d time.Duration) {
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	m.modelRequests.WithLabelValues(outcome).Inc()
	m.modelSeconds.Observe(d.Seconds())
}

// ModelRetry counts a stream retried.
func (m *Metrics) ModelRetry() { m.modelRetries.Inc() }

// Tokens adds tokens of a kind.
func (m *Metrics) Tokens(kind string, n int64) {
	if n > 0 {
		m.tokens.WithLabelValues(kind).Add(float64(n))
	}
}

// ToolCall counts a tool call that ended, and its duration.
func (m *Metrics) ToolCall(tool, status string, d time.Duration) {
	m.toolCalls.WithLabelValues(tool, status).Inc()
	m.toolSeconds.WithLabelValues(tool).Observe(d.Seconds())
}

// RolloutWriteFailed counts a failed attempt to write a rollout.
func (m *Metrics) RolloutWriteFailed() { m.rolloutFails.Inc() }

// engineCollector reads the engine's state at each scrape (nothing until
// SetEngine).
type engineCollector struct {
	stats atomic.Pointer[func() EngineStats]
}

var (
	connsDesc     = prometheus.NewDesc("agentd_connections", "Connected clients, by transport.", []string{"transport"}, nil)
	queueDesc     = prometheus.NewDesc("agentd_outbound_queue_messages", "Messages waiting in the outbound queues of all connections.", nil, nil)
	inflightDesc  = prometheus.NewDesc("agentd_requests_inflight", "Client requests admitted: being handled or waiting their turn.", nil, nil)
	coalescedDesc = prometheus.NewDesc("agentd_coalesced_deltas_total", "Deltas merged into a queued one for a client that fell behind.", nil, nil)
	slowDesc      = prometheus.NewDesc("agentd_slow_client_disconnects_total", "Connections closed because they did not read fast enough.", nil, nil)
	pendingDesc   = prometheus.NewDesc("agentd_server_requests_pending", "Server requests (approvals, questions, tool calls) awaiting an answer.", nil, nil)
	refusedDesc   = prometheus.NewDesc("agentd_connections_refused_total", "WebSocket clients refused with HTTP 503 because the connection limit (--max-connections) was reached.", nil, nil)
)

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{connsDesc, queueDesc, inflightDesc, coalescedDesc, slowDesc, pendingDesc, refusedDesc} {
		ch <- d
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	fn := c.stats.Load()
	if fn == nil {
		return
	}
	st := (*fn)()
	for _, transport := range []string{"stdio", "ws", "unix", "memory"} {
		ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(st.Conns[transport]), transport)
	}
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(st.QueueDepth))
	ch <- prometheus.MustNewConstMetric(inflightDesc, prometheus.GaugeValue, float64(st.Inflight))
	ch <- prometheus.MustNewConstMetric(coalescedDesc, prometheus.CounterValue, float64(st.Coalesced))
	ch <- prometheus.MustNewConstMetric(slowDesc, prometheus.CounterValue, float64(st.SlowDisconnects))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(st.ServerRequestsPending))
	ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(st.RefusedConns))
}

// Handler serves /metrics, /healthz (the process answers) and /readyz
// (ready returns nil: listeners up, home writable; else 503 with why).
func (m *Metrics) Handler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if m.profiling {
		profilingHandler(mux)
	}
	return mux
}

// Serve serves Handler on ln until ctx ends.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, ready func() error) error {
	srv := &http.Server{Handler: m.Handler(ready), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
