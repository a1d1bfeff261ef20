package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server"
	"github.com/agentd-dev/agentd/server/auth"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/metrics"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/transport/wsauth"
)

// serveFlags are app-server's own flags: the reference's, with the same
// meaning, plus several --listen at once.
type serveFlags struct {
	listen             []string
	stdio              bool
	printStartupConfig bool
	// startupSignOut removes the stored sign-in before anything else.
	startupSignOut bool
	// Accepted for the reference's launchers; see docs/compatibility.md.
	analyticsDefaultEnabled bool
	startupClientInfo       string
	cloudSkillsSnapshot     string
	codeModeHost            string
	// WebSocket authentication, as the reference's --ws-* flags; and
	// agentd's --allow-unauthenticated.
	wsAuth               wsauth.Flags
	allowUnauthenticated bool
	// metricsListen serves /metrics, /healthz and /readyz (HOST:PORT).
	metricsListen string
	// debugPprof also serves net/http/pprof on the metrics address.
	debugPprof bool
	// tlsCert and tlsKey are the certificate of wss:// listeners
	// (reloaded on SIGHUP).
	tlsCert, tlsKey string
	// maxConnections bounds the WebSocket connections (TCP and Unix).
	maxConnections int
	// fsRoots replace [fs] roots (--fs-root, repeatable).
	fsRoots []string
}

// defaultMaxConnections is --max-connections' default.
const defaultMaxConnections = 1024

func newAppServerCmd(g *globalFlags, name string) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   name,
		Short: "Serve the app-server protocol",
		Long: `Serve the app-server protocol on every --listen URL at once:
  stdio://         newline-delimited JSON on stdin/stdout (the default; also --stdio)
  ws://IP:PORT     WebSocket; port 0 picks a free port (the bound address is logged)
  wss://IP:PORT    WebSocket over TLS (TLS 1.2 or later), with --tls-cert and --tls-key
  unix://[PATH]    WebSocket over a Unix socket (mode 0600); without PATH,
                   <home>/app-server-control/app-server-control.sock
  off              no transport of its own (an error unless another is given)
SIGTERM or SIGINT shuts down gracefully; a second signal exits at once.
SIGHUP reloads config.toml for new threads, and the TLS certificate for new
connections (a file that fails to load leaves what is in use); an edit of
config.toml also reaches the next new thread with no signal.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.wsAuth.MaxClockSkewSecondsOK = cmd.Flags().Changed("ws-max-clock-skew-seconds")
			return serve(g, f, cmd.Flags().Changed("listen"))
		},
	}
	if name == "app-server" {
		cmd.Short = "Serve the app-server protocol (the reference's name for serve)"
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.listen, "listen", []string{"stdio://"}, "listen URL: stdio://, ws://IP:PORT, wss://IP:PORT, unix://[PATH] or off; repeatable")
	fl.BoolVar(&f.stdio, "stdio", false, "serve stdio (the same as --listen stdio://)")
	fl.BoolVar(&f.printStartupConfig, "print-startup-config", false, "check the configuration, print the startup requirements as JSON and exit")
	fl.BoolVar(&f.analyticsDefaultEnabled, "analytics-default-enabled", false, "accepted for IDE launchers; agentd sends no analytics")
	fl.BoolVar(&f.startupSignOut, "startup-sign-out", false, "sign out first: remove the stored API key (<home>/auth.json)")
	fl.StringVar(&f.startupClientInfo, "startup-client-info", "", "accepted: ClientInfo JSON (checked, then unused)")
	fl.StringVar(&f.cloudSkillsSnapshot, "cloud-skills-snapshot", "", "accepted and ignored: agentd has no cloud skills")
	fl.StringVar(&f.codeModeHost, "code-mode-host", "", "accepted and ignored: agentd has no code mode")
	fl.StringVar(&f.wsAuth.Mode, "ws-auth", "", "authentication of ws:// clients: capability-token or signed-bearer-token")
	fl.StringVar(&f.wsAuth.TokenFile, "ws-token-file", "", "file holding the capability token")
	fl.StringVar(&f.wsAuth.TokenSHA256, "ws-token-sha256", "", "hex SHA-256 digest of the capability token")
	fl.StringVar(&f.wsAuth.SharedSecretFile, "ws-shared-secret-file", "", "file holding the HS256 secret of signed bearer tokens (at least 32 bytes)")
	fl.StringVar(&f.wsAuth.Issuer, "ws-issuer", "", "required iss of signed bearer tokens")
	fl.StringVar(&f.wsAuth.Audience, "ws-audience", "", "required aud of signed bearer tokens")
	fl.Uint64Var(&f.wsAuth.MaxClockSkewSeconds, "ws-max-clock-skew-seconds", 30, "leeway on the exp and nbf of signed bearer tokens")
	fl.BoolVar(&f.allowUnauthenticated, "allow-unauthenticated", false, "let a ws:// listener on a non-loopback address start without --ws-auth")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus /metrics, /healthz and /readyz on HOST:PORT")
	fl.BoolVar(&f.debugPprof, "debug-pprof", false, "also serve Go's profiles (heap, goroutine, CPU, …) under /debug/pprof/ on the --metrics-listen address")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate (and chain) of wss:// listeners; reloaded on SIGHUP")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert; reloaded on SIGHUP")
	fl.IntVar(&f.maxConnections, "max-connections", defaultMaxConnections, "most WebSocket connections at once, TCP and Unix sockets together; past it a client gets HTTP 503")
	fl.StringArrayVar(&f.fsRoots, "fs-root", nil, "confine fs/* and command/exec's cwd to this directory tree (absolute; repeatable; replaces [fs] roots)")
	if name == "app-server" {
		cmd.AddCommand(newProxyCmd(g), newGenerateJSONSchemaCmd(), newGenerateTSCmd())
	}
	return cmd
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q for %q", args[0], cmd.CommandPath())}
	}
	return nil
}

// listenURLs resolves --listen and --stdio into the URLs to serve:
// stdio when nothing else is asked for; "off" adds nothing.
func (f *serveFlags) listenURLs(listenGiven bool) ([]string, error) {
	var urls []string
	if listenGiven {
		urls = append(urls, f.listen...)
	}
	if f.stdio || !listenGiven {
		urls = append(urls, "stdio://")
	}
	seen := map[string]bool{"off": true}
	urls = slices.DeleteFunc(urls, func(u string) bool {
		dup := seen[u]
		seen[u] = true
		return dup
	})
	if len(urls) == 0 {
		return nil, errors.New("no transport configured; use --listen")
	}
	return urls, nil
}

func serve(g *globalFlags, f *serveFlags, listenGiven bool) error {
	// First of all, as the configuration may read them: the secret
	// variables a re-executed daemon was handed (see secrets.go).
	restored, reexecuted, err := restoreSecrets()
	if err != nil {
		return err
	}
	opts, err := g.configOptions()
	if err != nil {
		return err
	}
	opts.FsRoots = f.fsRoots
	if f.startupClientInfo != "" {
		var ci protocol.ClientInfo
		if err := json.Unmarshal([]byte(f.startupClientInfo), &ci); err != nil {
			return usageError{fmt.Errorf("--startup-client-info: %v", err)}
		}
	}
	if f.startupSignOut {
		if err := auth.Open(opts.Home).Remove(); err != nil {
			return err
		}
	}
	if f.printStartupConfig {
		return printStartupConfig(opts)
	}
	// Sockets passed by systemd replace the default stdio, unless
	// --listen or --stdio asks for something.
	activated := !listenGiven && !f.stdio && os.Getenv("LISTEN_FDS") != ""
	var listen []string
	if !activated {
		if listen, err = f.listenURLs(listenGiven); err != nil {
			return err
		}
	}
	if f.debugPprof && f.metricsListen == "" {
		return usageError{errors.New("--debug-pprof needs --metrics-listen (the profiles are served on its address)")}
	}
	if f.maxConnections < 1 {
		return usageError{fmt.Errorf("invalid value %d for --max-connections: must be at least 1", f.maxConnections)}
	}
	switch f.wsAuth.Mode {
	case "", wsauth.ModeCapabilityToken, wsauth.ModeSignedBearerToken:
	default:
		return usageError{fmt.Errorf("invalid value %q for --ws-auth: one of %s, %s", f.wsAuth.Mode, wsauth.ModeCapabilityToken, wsauth.ModeSignedBearerToken)}
	}
	auth, err := wsauth.New(f.wsAuth)
	if err != nil {
		return err
	}
	cert, err := f.certificate()
	if err != nil {
		return err
	}
	log, err := newLogger(g.logLevel, g.logFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := os.MkdirAll(opts.Home, 0o700); err != nil {
		return fmt.Errorf("creating home directory: %w", err)
	}
	cfg, err := config.Load(opts)
	if err != nil {
		return err
	}
	// Before anything starts or takes systemd's sockets (which would mark
	// them close-on-exec): this may re-execute the process.
	if reexecuted {
		log.Info("re-executed without the secret variables in the environment block", zap.Strings("names", restored))
	} else if err := hideSecrets(cfg.SecretVariables(), log); errors.Is(err, errNoReexec) {
		log.Warn("the secret variables stay in the environment block (/proc/<pid>/environ): re-executing failed", zap.Error(err))
	} else if err != nil {
		return err
	}
	// From here on SIGHUP reloads (once the daemon serves) rather than
	// kills.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var adopted []net.Listener
	var adoptedNames []string
	if activated {
		if adopted, adoptedNames = activatedSockets(log); len(adopted) == 0 {
			log.Warn("LISTEN_FDS is set but no socket was passed to this process; serving stdio")
			listen = []string{"stdio://"}
		}
	}
	for _, w := range cfg.Warnings {
		log.Warn("config warning: "+w.Summary, zap.String("details", w.Details))
	}
	if f.cloudSkillsSnapshot != "" {
		log.Warn("ignoring --cloud-skills-snapshot: agentd has no cloud skills", zap.String("path", f.cloudSkillsSnapshot))
	}
	if f.codeModeHost != "" {
		log.Warn("ignoring --code-mode-host: agentd has no code mode", zap.String("url", f.codeModeHost))
	}
	if os.Geteuid() == 0 {
		log.Warn("RUNNING AS ROOT: the model's commands and the clients' fs/* and command/exec requests act with root's rights; run agentd as a dedicated user (docs/operations.md)")
	}
	log.Info("starting agentd", zap.String("version", server.Version), zap.String("home", opts.Home),
		zap.String("provider", cfg.Provider.ID), zap.String("model", cfg.Model))
	if len(cfg.FsRoots) > 0 {
		log.Info("fs/* and command/exec are confined to the fs roots", zap.Strings("roots", cfg.FsRoots))
	}

	var m *metrics.Metrics
	var metricsLn net.Listener
	if f.metricsListen != "" {
		if metricsLn, err = net.Listen("tcp", f.metricsListen); err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		defer metricsLn.Close()
		m = metrics.New()
		if f.debugPprof {
			m.EnableProfiling()
		}
	}
	live := config.NewLive(cfg, opts)
	srv := server.NewLive(live, log, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lo := rpc.ListenOptions{AllowUnauthenticated: f.allowUnauthenticated, Adopted: adopted, Names: adoptedNames, TLS: cert, MaxConnections: f.maxConnections}
	if auth := wsauth.WithTokens(auth, configTokens(cfg)); auth != nil {
		lo.WSAuth = auth
		log.Info("websocket clients must authenticate", zap.String("mode", auth.Mode()), zap.Int("configTokens", len(cfg.WSTokens)))
	}
	if err := srv.Listen(ctx, listen, lo); err != nil {
		return err
	}
	if cert != nil {
		logCertificate(log, "serving TLS with the certificate", cert)
	}
	if m != nil {
		m.SetEngine(server.EngineStats(srv))
		log.Info("serving metrics on http://"+metricsLn.Addr().String()+"/metrics", zap.String("addr", metricsLn.Addr().String()))
		rollouts := server.RolloutHealth(srv)
		ready := func() error {
			if err := homeWritable(opts.Home); err != nil {
				return err
			}
			return rollouts()
		}
		go func() {
			if err := m.Serve(ctx, metricsLn, ready); err != nil {
				log.Error("the metrics listener failed", zap.Error(err))
			}
		}()
	}
	notifier := newServiceNotifier(srv, log)
	defer notifier.stopping()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		log.Info("received "+sig.String()+"; shutting down gracefully (send it again to exit now)",
			zap.Duration("timeout", cfg.Server.ShutdownTimeout))
		cancel()
		sig = <-sigs
		log.Warn("received " + sig.String() + " again; exiting now")
		srv.CloseListeners()
		_ = log.Sync()
		os.Exit(0)
	}()
	go reloadOnHangup(ctx, hup, live, cert, notifier, log)
	notifier.ready(ctx)
	return srv.Serve(ctx)
}

// printStartupConfig loads the configuration and prints what the
// reference prints for --print-startup-config: the version and the
// startup requirements, or the configuration's error as a JSON-RPC error
// (and exits 1).
func printStartupConfig(opts config.Options) error {
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	if _, err := config.Load(opts); err != nil {
		data := map[string]any{"reason": "configLoad", "detail": err.Error()}
		var uf *config.UnknownFieldError
		if errors.As(err, &uf) {
			data["filePath"] = uf.File
			if uf.Line > 0 {
				data["line"], data["column"] = uf.Line, uf.Column
			}
		}
		_ = out.Encode(map[string]any{"error": map[string]any{
			"code": protocol.CodeInvalidRequest, "message": "failed to load configuration: " + err.Error(), "data": data,
		}})
		fmt.Fprintln(os.Stderr, "agentd: startup configuration unavailable")
		return exitCode(1)
	}
	return out.Encode(map[string]any{"appServerVersion": server.Version, "configRequirements": server.ConfigRequirements()})
}

// homeWritable reports whether agentd can write in its home (for /readyz,
// with server.RolloutHealth): a thread that cannot be recorded is not
// served well.
func homeWritable(home string) error {
	f, err := os.CreateTemp(home, ".readyz-*")
	if err != nil {
		return fmt.Errorf("the home is not writable: %w", err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// configTokens are config.toml's [app_server.tokens.<name>], for wsauth.
func configTokens(cfg *config.Config) []wsauth.Token {
	out := make([]wsauth.Token, len(cfg.WSTokens))
	for i, t := range cfg.WSTokens {
		out[i] = wsauth.Token{Name: t.Name, Digest: t.SHA256, Scope: t.Scope}
	}
	return out
}
