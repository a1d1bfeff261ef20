package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentd-dev/agentd/server"
	"github.com/agentd-dev/agentd/server/config"
)

// globalFlags are accepted by every command, before or after its name.
type globalFlags struct {
	home      string
	overrides []string
	enable    []string
	disable   []string
	strict    bool
	logLevel  string
	logFormat string
}

// usageError is a mistake in the command line (exit code 2, as the
// reference's argument parser exits).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.home, "home", "", "home directory (default $AGENTD_HOME, else $CODEX_HOME, else ~/.agentd)")
	pf.StringArrayVarP(&g.overrides, "config", "c", nil, "override a config.toml key: key=value (TOML value, dotted key); repeatable")
	pf.StringArrayVar(&g.enable, "enable", nil, "enable a feature (repeatable); the same as -c features.<name>=true")
	pf.StringArrayVar(&g.disable, "disable", nil, "disable a feature (repeatable); the same as -c features.<name>=false")
	pf.BoolVar(&g.strict, "strict-config", false, "fail when config.toml has a key agentd does not know, naming it")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "console", "log format on stderr: console or json")

	// --version and -V, as the reference's `codex --version`; the text is
	// agentd's version line.
	root.Version = server.Version
	root.SetVersionTemplate(versionLine())
	root.Flags().BoolP("version", "V", false, "print agentd's version")

	root.AddCommand(newAppServerCmd(g, "serve"), newAppServerCmd(g, "app-server"), newExecCmd(g), newSchemaCmd(), newVersionCmd())
	return root
}

// configOptions resolves the home and turns the global flags into what
// config.Load reads. --enable and --disable come after -c, as features.
func (g *globalFlags) configOptions() (config.Options, error) {
	home, err := config.ResolveHome(g.home, os.Getenv)
	if err != nil {
		return config.Options{}, err
	}
	overrides := append([]string(nil), g.overrides...)
	for _, set := range []struct {
		names []string
		value bool
	}{{g.enable, true}, {g.disable, false}} {
		for _, name := range set.names {
			if !config.KnownFeature(name) {
				//lint:ignore ST1005 the reference's text
				return config.Options{}, fmt.Errorf("Unknown feature flag: %s", name)
			}
			overrides = append(overrides, fmt.Sprintf("features.%s=%v", name, set.value))
		}
	}
	return config.Options{Home: home, Overrides: overrides, Strict: g.strict}, nil
}
