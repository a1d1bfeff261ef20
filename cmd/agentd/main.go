// Command agentd is a daemon that speaks the Codex app-server protocol v2
// over stdio, WebSocket and Unix sockets, and runs its own agent core.
//
//	agentd app-server [--listen URL]...   (also: agentd serve)
//	agentd app-server proxy [--sock PATH]
//	agentd app-server generate-json-schema --out DIR [--experimental]
//	agentd app-server generate-ts --out DIR [--experimental]
//	agentd exec [PROMPT|-]   (and agentd exec resume ID|--last)
//	agentd schema --out DIR [--experimental]
//	agentd version
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentd-dev/agentd/core/policy"
)

func main() {
	// The sandbox helper: agentd re-executes itself to confine a command
	// (Landlock, seccomp) without ever confining the daemon.
	if len(os.Args) > 1 && os.Args[1] == policy.SandboxHelperArg {
		os.Exit(policy.SandboxMain(os.Args[2:]))
	}
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	var ec exitCode
	if errors.As(err, &ec) {
		os.Exit(int(ec))
	}
	fmt.Fprintf(os.Stderr, "agentd: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintln(os.Stderr, "Run 'agentd --help' for usage.")
		os.Exit(2)
	}
	os.Exit(1)
}

// exitCode ends the process with that code; the command has already said
// why.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }
