package threads

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/mcp"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/model/demo"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/server/auth"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
)

// Options configure the thread layer.
type Options struct {
	// Live is the configuration new threads start with; a reload
	// replaces it, and a loaded thread keeps the snapshot it was loaded
	// with. When nil, Config is used for good.
	Live   *config.Live
	Config *config.Config
	Log    *zap.Logger
	// Version is agentd's version, recorded in the rollouts it writes and
	// shown as the threads' cliVersion.
	Version string
	// Cwd is the daemon's working directory, the default cwd of threads.
	Cwd string
	// Observer, when set, is told what the threads do (metrics).
	Observer Observer
	// RolloutWriteFault is rollout.Options.WriteFault: a test hook that
	// fails rollout writes as a full disk would. Leave it nil.
	RolloutWriteFault func() error
	// TrustProject, when set, records in config.toml, on behalf of the
	// request r, that the project at root is trusted (thread/start with
	// a sandbox that writes, in a git repository config.toml does not
	// rate; see trustProject).
	TrustProject func(r *rpc.Request, root string) error
}

// service is the thread layer of the daemon: the loaded threads, the
// rollout store, the model clients and the sign-in they use.
type service struct {
	s       *rpc.Server
	live    *config.Live
	log     *zap.Logger
	version string
	store   *rollout.Store
	cwd     string
	auth    *auth.Store
	obs     Observer
	// writeTrust is Options.TrustProject; trustFailed holds the
	// projects whose trust it could not write (warned about once).
	writeTrust  func(r *rpc.Request, root string) error
	trustFailed sync.Map

	threads *registry
	// trim returns freed memory to the system when no turn runs.
	trim *trimmer
	// storage tells subscribers of rollout write failures.
	storage *storageWarnings
	// mcp runs the daemon's MCP servers (mcp.go).
	mcp *mcp.Manager
	// rateLimits is what the provider's rate-limit headers last said.
	rateLimits rateLimitState
	// unloadingHook, when set (tests), runs as a thread is unloaded (gone
	// idle, archived or deleted): out of the registry, its rollout still
	// open.
	unloadingHook func(id string)

	// mu guards the fields that follow.
	mu      sync.Mutex
	clients map[string]cachedClient
	demoURL string
	demoEnd func()
	closed  bool
}

// Register creates the thread layer and registers its methods on s; its
// threads stop when s drains. It fails when the thread store cannot be
// opened.
func Register(s *rpc.Server, opts Options) (*Layer, error) {
	sv, err := newService(s, opts)
	if err != nil {
		return nil, err
	}
	sv.register()
	return &Layer{sv: sv}, nil
}

// Layer is a registered thread layer, for the rest of the daemon.
type Layer struct{ sv *service }

// ReloadMCP applies [mcp_servers] as config.toml now has it (after a
// config write), as config/mcpServer/reload does.
func (l *Layer) ReloadMCP() {
	if err := l.sv.reloadMCP(); err != nil {
		l.sv.log.Warn("MCP servers not reloaded after a config write", zap.Error(err))
	}
}

func newService(s *rpc.Server, opts Options) (*service, error) {
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	live := opts.Live
	if live == nil {
		live = config.Fixed(opts.Config)
	}
	home := live.Get().Home
	sv := &service{s: s, live: live, log: log, version: opts.Version, cwd: opts.Cwd, obs: opts.Observer, writeTrust: opts.TrustProject, clients: map[string]cachedClient{},
		auth: auth.Open(home), trim: newTrimmer(log)}
	if problem := sv.auth.Problem(); problem != "" {
		log.Warn("the stored sign-in cannot be used", zap.String("problem", problem))
	}
	sv.storage = &storageWarnings{sv: sv}
	var err error
	sv.store, err = rollout.Open(home, rollout.Options{
		Version:          opts.Version,
		OnWarning:        func(msg string) { log.Warn("rollout", zap.String("warning", msg)) },
		OnWriteFailed:    sv.storage.writeFailed,
		OnWriteRecovered: sv.storage.writeRecovered,
		OnSizeWarning:    sv.storage.sizeWarning,
		WriteFault:       opts.RolloutWriteFault,
		Limits:           rollout.Limits{MaxLineBytes: live.Get().Server.RolloutMaxLineBytes, MaxFileBytes: live.Get().Server.RolloutMaxFileBytes},
	})
	if err != nil {
		return nil, fmt.Errorf("open thread store: %w", err)
	}
	sv.threads = newRegistry(sv)
	sv.newMCP()
	s.OnDrain(sv.drain)
	return sv, nil
}

// config is the configuration in use now, what new threads start with.
// A loaded thread uses its own snapshot (thread.cfg) instead.
func (sv *service) config() *config.Config { return sv.live.Get() }

// register is the one place where the thread layer's methods are
// registered.
func (sv *service) register() {
	s := sv.s
	rpc.Handle(s, "thread/start", sv.threadStart)
	rpc.Handle(s, "thread/resume", sv.threadResume)
	rpc.Handle(s, "thread/fork", sv.threadFork)
	rpc.Handle(s, "thread/unsubscribe", sv.threadUnsubscribe)
	rpc.Handle(s, "thread/loaded/list", sv.threadLoadedList)
	rpc.Handle(s, "thread/read", sv.threadRead)
	rpc.Handle(s, "thread/list", sv.threadList)
	rpc.Handle(s, "thread/turns/list", sv.threadTurnsList)
	rpc.Handle(s, "thread/items/list", sv.threadItemsList)
	rpc.Handle(s, "thread/archive", sv.threadArchive)
	rpc.Handle(s, "thread/unarchive", sv.threadUnarchive)
	rpc.Handle(s, "thread/delete", sv.threadDelete)
	rpc.Handle(s, "thread/name/set", sv.threadNameSet)
	rpc.Handle(s, "thread/compact/start", sv.threadCompact)
	rpc.Handle(s, "thread/shellCommand", sv.threadShellCommand)
	rpc.Handle(s, "thread/inject_items", sv.threadInjectItems)
	rpc.Handle(s, "thread/revert", sv.threadRevert)
	rpc.Handle(s, "thread/settings/update", sv.threadSettingsUpdate)

	// A connection's requests about one thread are handled in the order
	// it sent them, as the reference handles them (an archive and the
	// unarchive right behind it, a rename and the read after it).
	rpc.Order(s, rpc.ByThread,
		"thread/resume", "thread/fork", "thread/unsubscribe", "thread/read", "thread/turns/list", "thread/items/list",
		"thread/archive", "thread/unarchive", "thread/delete", "thread/name/set", "thread/compact/start",
		"thread/shellCommand", "thread/inject_items", "thread/revert", "thread/settings/update",
		"thread/goal/get", "thread/backgroundTerminals/list", "thread/readState/update",
		"turn/start", "turn/steer", "turn/interrupt", "review/start")

	s.Gauge("threads loaded", func() int { return len(sv.threads.ids()) })
	s.Gauge("server requests pending", sv.pendingRequests)
	s.Gauge(GaugeRolloutsFailing, sv.store.Failing)

	rpc.Handle(s, "turn/start", sv.turnStart)
	rpc.Handle(s, "turn/steer", sv.turnSteer)
	rpc.Handle(s, "turn/interrupt", sv.turnInterrupt)
	rpc.Handle(s, "review/start", sv.reviewStart)

	// What clients such as the Codex TUI call at startup. Features agentd
	// does not have get an honest empty answer, never an invented one.
	rpc.Handle(s, "account/read", sv.accountRead)
	rpc.Handle(s, "account/login/start", sv.accountLoginStart)
	rpc.Handle(s, "account/login/cancel", accountLoginCancel)
	rpc.Handle(s, "account/logout", sv.accountLogout)
	rpc.Handle(s, "account/rateLimits/read", sv.accountRateLimitsRead)
	rpc.Handle(s, "model/list", sv.modelList)
	rpc.Handle(s, "permissionProfile/list", permissionProfileList)
	rpc.Handle(s, "configRequirements/read", configRequirementsRead)
	rpc.Handle(s, "hooks/list", hooksList)
	rpc.Handle(s, "account/bedrock/checkGovCloudRequirements", checkGovCloudRequirements)
	rpc.Handle(s, "collaborationMode/list", collaborationModeList)
	rpc.Handle(s, "plugin/installed", pluginInstalled)
	rpc.Handle(s, "mcpServerStatus/list", sv.mcpServerStatusList)
	rpc.Handle(s, "config/mcpServer/reload", sv.mcpReload)
	rpc.Handle(s, "mcpServer/resource/read", sv.mcpResourceRead)
	rpc.Handle(s, "mcpServer/tool/call", sv.mcpToolCall)
	rpc.Handle(s, "thread/goal/get", threadGoalGet)
	rpc.Handle(s, "thread/backgroundTerminals/list", backgroundTerminalsList)
	rpc.Handle(s, "thread/readState/update", readStateUpdate)
}

// cachedClient is a model client and the provider it was made for.
type cachedClient struct {
	p model.Provider
	c *model.Client
}

// client returns the model client for a provider, starting the built-in
// demo model on loopback the first time it is needed. A provider whose
// settings changed (a reloaded configuration) gets a new client; threads
// that run with the old one keep it.
func (sv *service) client(p model.Provider) (*model.Client, model.Provider, error) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.closed {
		return nil, p, fmt.Errorf("server is shutting down")
	}
	if p.ID == config.DemoProviderID && p.BaseURL == "" {
		if sv.demoURL == "" {
			url, stop, err := demo.Start(context.Background())
			if err != nil {
				return nil, p, fmt.Errorf("start the demo model: %w", err)
			}
			sv.demoURL, sv.demoEnd = url, stop
		}
		p.BaseURL = sv.demoURL
	}
	key := p.ID + "\x00" + p.BaseURL
	if cc, ok := sv.clients[key]; ok && reflect.DeepEqual(cc.p, p) {
		return cc.c, p, nil
	}
	opts := []model.Option{model.WithLogger(sv.log.Named("model"))}
	if key := sv.apiKeyFor(p); key != nil {
		opts = append(opts, model.WithAPIKey(key))
	}
	c := model.NewClient(p, opts...)
	sv.clients[key] = cachedClient{p: p, c: c}
	return c, p, nil
}

// providerIn returns cfg's provider with the id, or its configured one
// for "".
func providerIn(cfg *config.Config, id string) (model.Provider, bool) {
	if id == "" {
		return cfg.Provider, true
	}
	p, ok := cfg.Providers[id]
	return p, ok
}

// drain lets running turns finish until ctx (the shutdown deadline) ends,
// then stops every loaded thread (turns still running are aborted and
// recorded as such, rollouts synced), then the MCP servers, the demo model
// and the store.
func (sv *service) drain(ctx context.Context) {
	// Reads of rollout files in progress stop now: shutdown never waits
	// on one (the requests that made them get an error).
	sv.store.StopReads()
	sv.threads.waitIdle(ctx)
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sv.threads.closeAll(stopCtx)
	sv.trim.stop()
	sv.mcp.Close(stopCtx)
	sv.mu.Lock()
	sv.closed = true
	stop := sv.demoEnd
	sv.demoEnd = nil
	sv.mu.Unlock()
	if stop != nil {
		stop()
	}
	if err := sv.store.Close(); err != nil {
		sv.log.Warn("closing the thread store", zap.Error(err))
	}
}

// contextWindow is the context window of the models we know, in tokens;
// 0 for others (clients then show no context gauge).
func contextWindow(model string) int64 {
	switch model {
	case "gpt-5.5", "gpt-5.4", "gpt-5.3-codex", "gpt-5.2", "gpt-5.1", "gpt-5", "gpt-5-codex":
		return 258400
	case config.DemoModel:
		return 128000
	}
	return 0
}

// newSessionConfig fills the parts of a core session config that come from
// the daemon's configuration (cfg, the thread's snapshot).
func (sv *service) newSessionConfig(cfg *config.Config, threadID string, p model.Provider) (core.Config, error) {
	c, p, err := sv.client(p)
	if err != nil {
		return core.Config{}, err
	}
	var client core.ModelClient = c
	if sv.obs != nil {
		client = timedClient{ModelClient: c, obs: sv.obs}
	}
	return core.Config{
		ThreadID:         threadID,
		Provider:         p.ID,
		Client:           client,
		StreamMaxRetries: p.StreamMaxRetries,
		ShellEnv:         cfg.ShellEnv,
		ToolFamily:       cfg.ToolFamily,
		MCP:              sv.mcp,
		// The hosted tools: web search as configured for the provider;
		// generated images saved where the reference saves them.
		WebSearch:          core.WebSearchMode(cfg.WebSearchFor(p)),
		GeneratedImagesDir: filepath.Join(cfg.Home, "generated_images"),
		Log:                sv.log.Named("core"),
	}, nil
}
