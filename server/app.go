package server

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/model/demo"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/server/config"
)

// app is the thread layer of the daemon: the loaded threads, the rollout
// store, and the model clients. Its handlers live in api_*.go.
type app struct {
	s     *Server
	cfg   *config.Config
	log   *zap.Logger
	store *rollout.Store
	// cwd is the daemon's working directory, the default cwd of threads.
	cwd string

	threads *registry
	// loadMu serialises loading stored threads, so one is never loaded
	// twice.
	loadMu sync.Mutex

	// mu guards the fields that follow.
	mu      sync.Mutex
	clients map[string]*model.Client
	demoURL string
	demoEnd func()
	closed  bool
}

func newApp(s *Server) (*app, error) {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "/"
	}
	a := &app{s: s, cfg: s.cfg, log: s.log, cwd: cwd, clients: map[string]*model.Client{}}
	a.store, err = rollout.Open(s.cfg.Home, rollout.Options{
		Version:   Version,
		OnWarning: func(msg string) { s.log.Warn("rollout", zap.String("warning", msg)) },
	})
	if err != nil {
		return nil, fmt.Errorf("open thread store: %w", err)
	}
	a.threads = newRegistry(a)
	s.OnDrain(a.drain)
	return a, nil
}

// client returns the model client for a provider, starting the built-in
// demo model on loopback the first time it is needed.
func (a *app) client(p model.Provider) (*model.Client, model.Provider, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, p, fmt.Errorf("server is shutting down")
	}
	if p.ID == config.DemoProviderID && p.BaseURL == "" {
		if a.demoURL == "" {
			url, stop, err := demo.Start(context.Background())
			if err != nil {
				return nil, p, fmt.Errorf("start the demo model: %w", err)
			}
			a.demoURL, a.demoEnd = url, stop
		}
		p.BaseURL = a.demoURL
	}
	key := p.ID + "\x00" + p.BaseURL
	if c, ok := a.clients[key]; ok {
		return c, p, nil
	}
	c := model.NewClient(p, model.WithLogger(a.log.Named("model")))
	a.clients[key] = c
	return c, p, nil
}

// provider returns the provider with the id, or the configured one for "".
func (a *app) provider(id string) (model.Provider, bool) {
	if id == "" {
		return a.cfg.Provider, true
	}
	p, ok := a.cfg.Providers[id]
	return p, ok
}

// drain lets running turns finish until ctx (the shutdown deadline) ends,
// then stops every loaded thread (turns still running are aborted and
// recorded as such, rollouts synced), then the demo model and the store.
func (a *app) drain(ctx context.Context) {
	a.threads.waitIdle(ctx)
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.threads.closeAll(stopCtx)
	a.mu.Lock()
	a.closed = true
	stop := a.demoEnd
	a.demoEnd = nil
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
	if err := a.store.Close(); err != nil {
		a.log.Warn("closing the thread store", zap.Error(err))
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
// the daemon's configuration.
func (a *app) newSessionConfig(threadID string, p model.Provider) (core.Config, error) {
	c, p, err := a.client(p)
	if err != nil {
		return core.Config{}, err
	}
	return core.Config{
		ThreadID:         threadID,
		Provider:         p.ID,
		Client:           c,
		StreamMaxRetries: p.StreamMaxRetries,
		Log:              a.log.Named("core"),
	}, nil
}

// registerApp creates the thread layer and registers its methods. If the
// thread store cannot be opened the daemon still serves the handshake, and
// the thread methods answer with the reason.
func (s *Server) registerApp() {
	a, err := newApp(s)
	if err != nil {
		s.log.Error("thread layer unavailable", zap.Error(err))
		return
	}
	a.registerThreadAPI()
	a.registerThreadStoreAPI()
	a.registerTurnAPI()
	a.registerClientSupportAPI()
	a.registerUtilityAPI()
}
