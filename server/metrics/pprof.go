package metrics

import (
	"net/http"
	"net/http/pprof"
)

// EnableProfiling makes Handler also serve the Go runtime's profiles
// (net/http/pprof) under /debug/pprof/: heap, goroutine, allocs, profile
// (CPU), trace and the others. They show the daemon's code and data
// layout, and a CPU profile or trace costs CPU while it runs, so they are
// served only when asked for (--debug-pprof). Call it before Serve.
func (m *Metrics) EnableProfiling() { m.profiling = true }

// profilingHandler adds the profiles to mux.
func profilingHandler(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
