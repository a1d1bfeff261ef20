package main

import (
	"github.com/spf13/cobra"
)

// globalFlags are accepted by every command.
type globalFlags struct {
	home      string
	overrides []string
	logLevel  string
	logFormat string
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "agentd",
		Short: "A daemon speaking the Codex app-server protocol, with its own agent core",
		Long: `agentd serves the Codex app-server protocol (v2, JSON-RPC without "jsonrpc") over
stdio, WebSocket and Unix sockets, so Codex clients can use it unchanged.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.home, "home", "", "home directory (default $AGENTD_HOME, else ~/.agentd)")
	pf.StringArrayVarP(&g.overrides, "config", "c", nil, "override a config.toml key: key=value (TOML value, dotted key); repeatable")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "console", "log format on stderr: console or json")

	root.AddCommand(newServeCmd(g, "serve"), newServeCmd(g, "app-server"), newSchemaCmd(), newVersionCmd())
	return root
}
