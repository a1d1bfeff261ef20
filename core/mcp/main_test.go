package mcp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// testServer is the test MCP server (test/mcpserver), built once.
var testServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentd-mcp")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServer = filepath.Join(dir, "mcpserver")
	cmd := exec.Command("go", "build", "-o", testServer, "github.com/agentd-dev/agentd/test/mcpserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test MCP server: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
