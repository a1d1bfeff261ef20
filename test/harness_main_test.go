package test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain builds the agentd binary (and the test MCP server) once for
// every test of the package.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentd-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, err := BuildAgentd(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	SetBinary(bin)
	if mcpServerBinary, err = BuildMCPServer(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
