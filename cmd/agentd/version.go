package main

import (
	"fmt"
	"runtime"

	"github.com/agentd-dev/agentd/server"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print agentd's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprint(cmd.OutOrStdout(), versionLine())
		},
	}
}

// versionLine is what `agentd version` and `agentd --version` print.
func versionLine() string {
	return fmt.Sprintf("agentd %s (%s, %s/%s)\n", server.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
