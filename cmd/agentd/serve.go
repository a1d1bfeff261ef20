package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentd-dev/agentd/server"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

func newServeCmd(g *globalFlags, name string) *cobra.Command {
	var listen []string
	cmd := &cobra.Command{
		Use:   name,
		Short: "Serve the app-server protocol",
		Long: `Serve the app-server protocol on every --listen URL at once:
  stdio://         newline-delimited JSON on stdin/stdout (the default)
  ws://IP:PORT     WebSocket; port 0 picks a free port (the bound address is logged)
  unix://[PATH]    WebSocket over a Unix socket (mode 0600); without PATH,
                   <home>/app-server-control/app-server-control.sock
SIGTERM or SIGINT shuts down gracefully; a second signal exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve(g, listen)
		},
	}
	if name == "app-server" {
		cmd.Short = "Serve the app-server protocol (the reference's name for serve)"
	}
	cmd.Flags().StringArrayVar(&listen, "listen", []string{"stdio://"}, "listen URL: stdio://, ws://IP:PORT or unix://[PATH]; repeatable")
	return cmd
}

func serve(g *globalFlags, listen []string) error {
	log, err := newLogger(g.logLevel, g.logFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	home, err := config.ResolveHome(g.home, os.Getenv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("creating home directory: %w", err)
	}
	cfg, err := config.Load(config.Options{Home: home, Overrides: g.overrides})
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		log.Warn("config warning: "+w.Summary, zap.String("details", w.Details))
	}
	log.Info("starting agentd", zap.String("version", server.Version), zap.String("home", home),
		zap.String("provider", cfg.Provider.ID), zap.String("model", cfg.Model))

	srv := server.New(cfg, log)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Listen(ctx, listen); err != nil {
		return err
	}

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
	return srv.Serve(ctx)
}
