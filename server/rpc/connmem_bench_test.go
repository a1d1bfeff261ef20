package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// BenchmarkIdleWSConnection measures what an idle, initialized WebSocket
// connection costs the server: the live heap, the goroutine stacks and the
// goroutines each one holds once its handshake, its initialize and one
// request as thread/resume makes it (ordered by thread, its response
// first, a hook for the connection's end) are done (issue 17: 10,000 of
// them in 256 MiB of RSS). What the thread layer keeps for a subscriber is
// not included. Each op opens
// idleConns connections, measures, and closes them. The clients are raw
// sockets that send hand-made frames and run no goroutine, so that what is
// measured is the server's (the heap figure includes the client socket's
// few hundred bytes). It measures once the connections' writers and
// dispatchers have stopped (the idle timer); the stack figure includes the
// slots their stacks left free in the runtime's stack spans, which new
// goroutines reuse, so it is above the readers' 4 KiB.
func BenchmarkIdleWSConnection(b *testing.B) {
	const idleConns = 500
	// Logging as the daemon does by default: JSON lines at info level.
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.InfoLevel))
	s := New(Options{Limits: testLimits, Home: b.TempDir(), Logger: log})
	Handle(s, "x/subscribe", func(_ context.Context, r *Request, _ *json.RawMessage) (any, error) {
		r.ResponseFirst()
		r.Conn().OnClose(func() {})
		return map[string]string{"thread": "t"}, nil
	})
	Order(s, ByThread, "x/subscribe")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Listen(ctx, []string{"ws://127.0.0.1:0"}, ListenOptions{}); err != nil {
		b.Fatal(err)
	}
	addr := s.listeners[0].l.URL()[len("ws://"):]
	go func() { _ = s.Serve(ctx) }()

	var heap, stack, goroutines float64
	for b.Loop() {
		before, g0 := settledMem(b, -1)
		conns := make([]net.Conn, idleConns)
		for i := range conns {
			conns[i] = dialInitialized(b, addr, i)
		}
		// Each connection's writer and dispatcher stop after a tick or two
		// of the idle timer; the idle timer itself is one more goroutine.
		after, g1 := settledMem(b, g0+idleConns+1)
		heap += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		stack += float64(after.StackInuse) - float64(before.StackInuse)
		goroutines += float64(g1 - g0)
		for _, c := range conns {
			c.Close()
		}
		for len(s.Conns()) > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	n := float64(b.N * idleConns)
	b.ReportMetric(heap/n, "heap-B/conn")
	b.ReportMetric(stack/n, "stack-B/conn")
	b.ReportMetric(goroutines/n, "goroutines/conn")
	b.ReportMetric(0, "ns/op")
}

// settledMem returns the memory statistics after a collection, once the
// number of goroutines has stopped changing and, when want is not
// negative, is at most want (the connections' writers and dispatchers
// have stopped).
func settledMem(b *testing.B, want int) (runtime.MemStats, int) {
	b.Helper()
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * idleWorkerRetire); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n && (want < 0 || m <= want) {
			break
		}
		n = m
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms, n
}

// dialInitialized opens a WebSocket connection by hand, sends initialize
// and reads its answer.
func dialInitialized(b *testing.B, addr string, i int) net.Conn {
	b.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	req := "GET / HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReaderSize(c, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		b.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, msg := range []string{
		fmt.Sprintf(`{"id":%d,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}`, i),
		`{"id":"s","method":"x/subscribe","params":{"threadId":"t"}}`,
	} {
		if _, err := c.Write(clientFrame(msg)); err != nil {
			b.Fatal(err)
		}
		readFrame(b, br)
	}
	return c
}

// readFrame reads and drops one server frame of less than 64 KiB.
func readFrame(b *testing.B, br *bufio.Reader) {
	b.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		b.Fatal(err)
	}
	n := int(h[1] & 0x7f)
	if n == 126 {
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			b.Fatal(err)
		}
		n = int(binary.BigEndian.Uint16(l[:]))
	}
	if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
		b.Fatal(err)
	}
}

// clientFrame is a masked text frame of less than 64 KiB.
func clientFrame(payload string) []byte {
	f := []byte{0x81}
	if len(payload) < 126 {
		f = append(f, 0x80|byte(len(payload)))
	} else {
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(len(payload)))
	}
	key := [4]byte{7, 1, 9, 3}
	f = append(f, key[:]...)
	for i := 0; i < len(payload); i++ {
		f = append(f, payload[i]^key[i%4])
	}
	return f
}
