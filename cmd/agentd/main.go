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
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "agentd: %v\n", err)
		os.Exit(1)
	}
}
