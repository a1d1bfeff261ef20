package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
	"github.com/coder/websocket"
)

// benchItem is a typical authoritative notification: item/started for an
// agent message, with the reference's field set.
type benchItem struct {
	Item struct {
		Type           string  `json:"type"`
		Moderation     *string `json:"moderation"`
		ID             string  `json:"id"`
		Text           string  `json:"text"`
		Phase          *string `json:"phase"`
		MemoryCitation *string `json:"memoryCitation"`
		Delivery       *string `json:"delivery"`
		Questions      *string `json:"questions"`
		StartedAtMs    int64   `json:"startedAtMs"`
		CompletedAtMs  *int64  `json:"completedAtMs"`
	} `json:"item"`
	ThreadID    string `json:"threadId"`
	TurnID      string `json:"turnId"`
	StartedAtMs int64  `json:"startedAtMs"`
}

func newBenchItem() *benchItem {
	p := &benchItem{ThreadID: "01a2298a-ff51-7b13-b9bc-6df6bfc473c6", TurnID: "01a2298b-0088-7592-8d33-9f653f5de000", StartedAtMs: 1795993305301}
	p.Item.Type, p.Item.ID, p.Item.StartedAtMs = "agentMessage", "msg_resp_1", 1795993305301
	return p
}

func benchServer(b *testing.B, queue int) *Server {
	lim := testLimits
	lim.OutboundQueueSize = queue
	return New(Options{Limits: lim, Home: b.TempDir()})
}

// lineCounter counts newline-terminated messages read from r and closes
// reached once it has seen want of them.
func lineCounter(r *os.File, want int) (reached chan struct{}) {
	reached = make(chan struct{})
	go func() {
		br := bufio.NewReaderSize(r, 1<<20)
		n := 0
		buf := make([]byte, 1<<20)
		for {
			k, err := br.Read(buf)
			n += bytes.Count(buf[:k], []byte{'\n'})
			if n >= want {
				close(reached)
				_, _ = br.WriteTo(devNull{})
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return reached
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkNotifyStdio measures notifications written to one stdio client
// (an OS pipe, read by a goroutine), and the allocations per notification.
func BenchmarkNotifyStdio(b *testing.B) {
	s := benchServer(b, testLimits.OutboundQueueSize)
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	st := transport.NewNDJSON(inR, outW, func() error { return outW.Close() }, 0,
		transport.Info{Transport: "stdio", WaitWhenFull: true, DrainOnEOF: true, Scope: scope.Admin})
	go s.ServeStream(st)
	reached := lineCounter(outR, b.N+1)
	_, _ = inW.Write([]byte(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}` + "\n"))
	var conn *Conn
	for conn == nil {
		if cs := s.Conns(); len(cs) > 0 {
			conn = cs[0]
		}
		time.Sleep(time.Millisecond)
	}
	p := newBenchItem()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		conn.Notify("item/started", p)
	}
	<-reached
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
	_ = inW.Close()
	_ = outR.Close()
}

// BenchmarkBroadcastWS50 measures one fan-out to 50 WebSocket clients on
// loopback: each broadcast is written to every client. notifications/s is
// per client; allocs/op counts the whole fan-out of one notification.
func BenchmarkBroadcastWS50(b *testing.B) {
	const clients = 50
	s := benchServer(b, b.N+64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Listen(ctx, []string{"ws://127.0.0.1:0"}, ListenOptions{}); err != nil {
		b.Fatal(err)
	}
	url := s.listeners[0].l.URL()
	go func() { _ = s.Serve(ctx) }()

	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		c.SetReadLimit(1 << 24)
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}`))
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.CloseNow()
			// Read without keeping messages, so that the client side
			// allocates little and the figure is the server's.
			head := make([]byte, 24)
			for n := 0; n < b.N; {
				_, r, err := c.Reader(ctx)
				if err != nil {
					b.Errorf("client read: %v", err)
					return
				}
				k, _ := io.ReadFull(r, head)
				_, _ = io.Copy(io.Discard, r)
				if bytes.Equal(head[:k], []byte(`{"method":"item/started"`)) {
					n++
				}
			}
		}()
	}
	for len(s.Conns()) < clients {
		time.Sleep(time.Millisecond)
	}
	p := newBenchItem()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Broadcast("item/started", p)
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
}

// BenchmarkEncodeNotification measures encoding alone.
func BenchmarkEncodeNotification(b *testing.B) {
	p := newBenchItem()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := newNotification("item/started", p, 1795993305301); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestRoundTrip measures one request and its answer over an
// in-memory connection, with the bookkeeping every request pays (its
// context, tracking, the ordering and cancellation lookups).
func BenchmarkRequestRoundTrip(b *testing.B) {
	s := benchServer(b, 1024)
	Handle(s, "x/echo", func(_ context.Context, _ *Request, p *json.RawMessage) (any, error) { return p, nil })
	srvEnd, cliEnd := transport.Pipe(64)
	go s.ServeStream(srvEnd)
	defer cliEnd.Close()
	ctx := context.Background()
	call := func(msg string) {
		if err := cliEnd.Write(ctx, []byte(msg)); err != nil {
			b.Fatal(err)
		}
		if _, err := cliEnd.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	call(`{"id":0,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call(`{"id":1,"method":"x/echo","params":{"a":1}}`)
	}
}
