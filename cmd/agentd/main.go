// Command agentd is a daemon that speaks the Codex app-server protocol v2
// over stdio, WebSocket and Unix sockets, and runs its own agent core.
//
//	agentd serve [--listen URL]...       (also: agentd app-server)
//	agentd schema --out DIR [--experimental]
//	agentd version
package main

import (
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/core/policy"
)

func main() {
	// The sandbox helper: agentd re-executes itself to confine a command
	// (Landlock, seccomp) without ever confining the daemon.
	if len(os.Args) > 1 && os.Args[1] == policy.SandboxHelperArg {
		os.Exit(policy.SandboxMain(os.Args[2:]))
	}
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "agentd: %v\n", err)
		os.Exit(1)
	}
}
