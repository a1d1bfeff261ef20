package test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/server"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The in-process delta benchmarks run the daemon's whole outbound path in
// the test process, so that Go counts its allocations: the mock model's
// SSE is parsed by the core, each delta event is projected by the thread
// layer, encoded, queued on the connection and written to a real OS pipe
// (stdio) or a loopback WebSocket. One op is one turn of inprocDeltas
// deltas on a new thread of one long-lived server. deltas/s is the turn's
// rate; allocs/delta and B/delta divide the process's allocations during
// the turn (the mock model and the client included, so they are an upper
// bound on the server's) by the deltas streamed.

const inprocDeltas = 20000

// inprocServer returns a server whose model is m, with home in a
// temporary directory.
func inprocServer(b *testing.B, m *mockmodel.Server) (*rpc.Server, string) {
	home := b.TempDir()
	if err := os.WriteFile(filepath.Join(home, config.FileName), []byte(benchConfig(m.URL())), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Load(config.Options{Home: home, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	return server.New(cfg, zap.NewNop()), home
}

// inprocStdio connects a benchClient to s over OS pipes, framed as the
// stdio transport frames them.
func inprocStdio(b *testing.B, s *rpc.Server) *benchClient {
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	st := transport.NewNDJSON(inR, outW, func() error { return outW.Close() }, 0,
		transport.Info{Transport: "stdio", WaitWhenFull: true, DrainOnEOF: true, Scope: scope.Admin})
	go s.ServeStream(st)
	b.Cleanup(func() {
		_ = inW.Close()
		_ = outR.Close()
	})
	c := newBenchClient(b, "stdio", false)
	c.write = func(p []byte) error {
		_, err := inW.Write(append(p, '\n'))
		return err
	}
	go c.readLines(outR)
	return c
}

// inprocWS connects a benchClient to s over a loopback WebSocket.
func inprocWS(b *testing.B, s *rpc.Server, home string) *benchClient {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	ep, err := transport.ParseListenURL("ws://127.0.0.1:0", home)
	if err != nil {
		b.Fatal(err)
	}
	l, err := transport.Listen(ctx, ep, transport.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	go func() { _ = l.Serve(s.ServeStream) }()
	return dialBenchWS(b, l.URL(), "ws")
}

func benchInProcess(b *testing.B, dial func(*rpc.Server, string) *benchClient) {
	text := benchText(inprocDeltas)
	m := mockmodel.New(b)
	s, home := inprocServer(b, m)
	c := dial(s, home)
	c.initialize()
	cwd := b.TempDir()
	var wall time.Duration
	var allocs, bytes uint64
	var ms0, ms1 runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		m.Enqueue(mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", text, inprocDeltas)))
		threadID := c.startThread(cwd)
		c.text.Reset()
		runtime.ReadMemStats(&ms0)
		b.StartTimer()
		start := time.Now()
		c.request("turn/start", map[string]any{"threadId": threadID, "input": textInput("go")})
		status, final := c.turnCompleted()
		wall += time.Since(start)
		b.StopTimer()
		runtime.ReadMemStats(&ms1)
		allocs += ms1.Mallocs - ms0.Mallocs
		bytes += ms1.TotalAlloc - ms0.TotalAlloc
		if status != "completed" || final != text {
			b.Fatalf("turn %s, final text of %d bytes", status, len(final))
		}
		c.checkText(text)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N) * inprocDeltas
	b.ReportMetric(n/wall.Seconds(), "deltas/s")
	b.ReportMetric(float64(allocs)/n, "allocs/delta")
	b.ReportMetric(float64(bytes)/n, "B/delta")
}

// BenchmarkDeltaInProcessStdio: the outbound path of a delta to one stdio
// client (see the top of the file).
func BenchmarkDeltaInProcessStdio(b *testing.B) {
	benchInProcess(b, func(s *rpc.Server, _ string) *benchClient { return inprocStdio(b, s) })
}

// BenchmarkDeltaInProcessWS: the same to one WebSocket client.
func BenchmarkDeltaInProcessWS(b *testing.B) {
	benchInProcess(b, func(s *rpc.Server, home string) *benchClient { return inprocWS(b, s, home) })
}
