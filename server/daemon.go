package server

import (
	"fmt"
	"os"
	"runtime"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/metrics"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/threads"
	"github.com/agentd-dev/agentd/server/utility"
)

// TestHooksEnv enables the test-only methods (test/sleep, test/emit,
// test/call, test/rolloutWrites) when set to "1". Never set it in
// production.
const TestHooksEnv = "AGENTD_TEST_HOOKS"

// New returns the daemon for cfg: the JSON-RPC engine with the thread
// layer and the utility methods registered (and the test hooks, when
// TestHooksEnv asks for them). Logs go to log (nil: nowhere).
func New(cfg *config.Config, log *zap.Logger) *rpc.Server {
	return NewWithMetrics(cfg, log, nil)
}

// NewWithMetrics is New, reporting to m (nil: no metrics).
func NewWithMetrics(cfg *config.Config, log *zap.Logger, m *metrics.Metrics) *rpc.Server {
	return NewLive(config.Fixed(cfg), log, m)
}

// NewLive is NewWithMetrics over a configuration that can be reloaded
// (live.Reload, on SIGHUP and after config writes): new threads and the
// utility methods use the reloaded one; the engine's limits ([server])
// stay as they were at the start.
func NewLive(live *config.Live, log *zap.Logger, m *metrics.Metrics) *rpc.Server {
	cfg := live.Get()
	if log == nil {
		log = zap.NewNop()
	}
	var rpcObs rpc.Observer
	var threadObs threads.Observer
	if m != nil {
		rpcObs, threadObs = m, m
	}
	s := rpc.New(rpc.Options{
		Limits: rpc.Limits{
			MaxInflightPerConnection: cfg.Server.MaxInflightPerConnection,
			MaxInflight:              cfg.Server.MaxInflight,
			MaxQueuedRequestBytes:    cfg.Server.MaxQueuedRequestBytes,
			MaxMessageBytes:          cfg.Server.MaxMessageBytes,
			OutboundQueueSize:        cfg.Server.OutboundQueueSize,
			ShutdownTimeout:          cfg.Server.ShutdownTimeout,
		},
		Home:       cfg.Home,
		Logger:     log,
		Initialize: initializer(live),
		Observer:   rpcObs,
		Originator: os.Getenv(OriginatorEnv),
	})
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "/"
	}
	var hooks *testHooks
	if os.Getenv(TestHooksEnv) == "1" {
		hooks = &testHooks{}
	}
	var configWritten func()
	// The thread layer writes a project's trust through the utility
	// layer's config writes, which are registered after it (they tell
	// it of a write that changes its MCP servers).
	var util *utility.Service
	trustProject := func(r *rpc.Request, root string) error { return util.TrustProject(r, root) }
	if layer, err := threads.Register(s, threads.Options{Live: live, Log: log, Version: Version, Cwd: cwd, Observer: threadObs,
		RolloutWriteFault: hooks.rolloutWriteFault(), TrustProject: trustProject}); err != nil {
		// The daemon still serves the handshake and the utility methods.
		log.Error("thread layer unavailable", zap.Error(err))
	} else {
		// A config write that changes [mcp_servers] applies at once.
		configWritten = layer.ReloadMCP
	}
	util = utility.Register(s, utility.Options{Live: live, Log: log, Cwd: cwd, ConfigWritten: configWritten})
	if hooks != nil {
		registerTestHooks(s, hooks)
	}
	return s
}

// RolloutHealth returns a readiness check for s: an error while the
// rollout writes of a loaded thread fail (a full disk), until they
// succeed again. Probes call it.
func RolloutHealth(s *rpc.Server) func() error {
	return func() error {
		if n := s.Stats().Gauges[threads.GaugeRolloutsFailing]; n > 0 {
			return fmt.Errorf("saving the rollouts of %d thread(s) fails; agentd keeps retrying", n)
		}
		return nil
	}
}

// ConfigRequirements is what configRequirements/read answers, for
// --print-startup-config.
func ConfigRequirements() *protocol.ConfigRequirementsReadResponse {
	return threads.ConfigRequirements()
}

// initializer answers initialize: who we are, and then a configWarning
// for each problem found in the configuration in use.
func initializer(live *config.Live) func(rpc.ClientInfo) (any, []rpc.Notification) {
	return func(ci rpc.ClientInfo) (any, []rpc.Notification) {
		cfg := live.Get()
		var warnings []rpc.Notification
		for _, w := range cfg.Warnings {
			p := protocol.ConfigWarningNotification{Summary: w.Summary}
			if w.Details != "" {
				d := w.Details
				p.Details = &d
			}
			if n, err := rpc.NewNotification("configWarning", p); err == nil {
				warnings = append(warnings, n)
			}
		}
		return protocol.InitializeResponse{
			UserAgent:      threads.UserAgent(ci, Version),
			CodexHome:      protocol.AbsPath(cfg.Home),
			PlatformFamily: platformFamily(),
			PlatformOs:     platformOS(),
		}, warnings
	}
}

// OriginatorEnv, in the daemon's environment, names every client to the
// model provider and in the threads it starts, instead of its clientInfo
// name, as in the reference (the Codex SDKs set it).
const OriginatorEnv = "CODEX_INTERNAL_ORIGINATOR_OVERRIDE"

func platformFamily() string {
	if runtime.GOOS == "windows" {
		return "windows"
	}
	return "unix"
}

func platformOS() string {
	if runtime.GOOS == "darwin" {
		return "macos"
	}
	return runtime.GOOS
}

// EngineStats adapts the engine's state for the metrics.
func EngineStats(s *rpc.Server) func() metrics.EngineStats {
	return func() metrics.EngineStats {
		st := s.Stats()
		return metrics.EngineStats{
			Conns: st.Conns, QueueDepth: st.QueueDepth, Inflight: st.Inflight,
			Coalesced: st.Coalesced, SlowDisconnects: st.SlowDisconnects, RefusedConns: st.RefusedConns,
			ServerRequestsPending: st.Gauges["server requests pending"],
		}
	}
}
