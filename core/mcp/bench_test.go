package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cost of a call through the Manager (lookup, progress token, timeout,
// result conversion) over the SDK's own round trip to the same server: run
// both and compare (benchstat).
func BenchmarkCallManager(b *testing.B) {
	m := NewManager([]ServerConfig{testConfig("test")}, Options{StopGrace: 500 * time.Millisecond})
	m.Start()
	defer m.Close(context.Background())
	ctx := context.Background()
	m.Tools(ctx)
	args := json.RawMessage(`{"name":"HOME"}`)
	for b.Loop() {
		if _, err := m.Call(ctx, "test", "env", args, CallHooks{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallSDK(b *testing.B) {
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(testServer)}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	params := &mcp.CallToolParams{Name: "env", Arguments: json.RawMessage(`{"name":"HOME"}`)}
	for b.Loop() {
		if _, err := sess.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}

// Starting ten stdio servers until all are ready (what a daemon with ten
// servers waits for before its first turn), then stopping them.
func BenchmarkStartTenServers(b *testing.B) {
	var servers []ServerConfig
	for i := range 10 {
		servers = append(servers, testConfig(fmt.Sprintf("s%d", i)))
	}
	ctx := context.Background()
	for b.Loop() {
		m := NewManager(servers, Options{StopGrace: 500 * time.Millisecond})
		m.Start()
		if n := len(m.Tools(ctx)); n != 10*7 {
			b.Fatalf("%d tools", n)
		}
		m.Close(ctx)
	}
}
