package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchDelta is an agent message delta as the threads layer sends it.
type benchDelta struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
}

// BenchmarkFanout measures the broadcast path per subscriber: one delta
// notification sent to S subscribers, each a real WebSocket connection on
// loopback whose client counts the frames it reads (parsed by hand, so
// that the client costs little and the figure is mostly the server's).
//
//   - paced: one delta at a time; an op ends when every subscriber has
//     read it. ns/op is how long the last subscriber waits for a delta
//     when the server keeps up (the fan-out's spread); ns/delivery is
//     that per subscriber.
//   - burst: deltas back to back, as fast as Broadcast returns; the op
//     count is the deltas, and the run ends when every subscriber has
//     read every delta. ns/delivery is the server's cost per message
//     per subscriber when it has a backlog to batch.
func BenchmarkFanout(b *testing.B) {
	for _, subs := range []int{100, 1000} {
		b.Run(fmt.Sprintf("subs=%d/paced", subs), func(b *testing.B) { benchFanout(b, subs, true) })
		b.Run(fmt.Sprintf("subs=%d/burst", subs), func(b *testing.B) { benchFanout(b, subs, false) })
	}
}

func benchFanout(b *testing.B, subs int, paced bool) {
	s := benchServer(b, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Listen(ctx, []string{"ws://127.0.0.1:0"}, ListenOptions{}); err != nil {
		b.Fatal(err)
	}
	addr := strings.TrimPrefix(s.listeners[0].l.URL(), "ws://")
	go func() { _ = s.Serve(ctx) }()

	var got atomic.Int64  // deltas read, by all subscribers
	var want atomic.Int64 // when got reaches it, reached is signalled
	reached := make(chan struct{}, 1)
	var wg sync.WaitGroup
	conns := make([]net.Conn, 0, subs)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		wg.Wait()
	}()
	for i := 0; i < subs; i++ {
		c, br, err := rawWSDial(addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		if err := rawWSWrite(c, []byte(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}`)); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for {
				var err error
				if buf, err = rawWSNext(br, buf); err != nil {
					return
				}
				// A merged delta carries several stamps.
				if !bytes.HasPrefix(buf, []byte(`{"method":"item/agentMessage/delta"`)) {
					continue
				}
				n := int64(bytes.Count(buf, []byte(benchStamp)))
				if v := got.Add(n); v >= want.Load() && v-n < want.Load() {
					reached <- struct{}{}
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for len(s.Conns()) < subs {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d subscribers initialized", len(s.Conns()), subs)
		}
		time.Sleep(time.Millisecond)
	}
	p := &benchDelta{ThreadID: "01a2298a-ff51-7b13-b9bc-6df6bfc473c6", TurnID: "01a2298b-0088-7592-8d33-9f653f5de000",
		ItemID: "msg_resp_1", Delta: benchStamp}
	// Warm up every connection (goroutine stacks, socket buffers) before
	// timing.
	const warm = 10
	want.Store(int64(subs) * warm)
	for i := 0; i < warm; i++ {
		s.Broadcast("item/agentMessage/delta", p)
	}
	<-reached
	got.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	if paced {
		for i := 0; i < b.N; i++ {
			want.Store(int64(subs) * int64(i+1))
			s.Broadcast("item/agentMessage/delta", p)
			<-reached
		}
	} else {
		want.Store(int64(subs) * int64(b.N))
		for i := 0; i < b.N; i++ {
			s.Broadcast("item/agentMessage/delta", p)
		}
		<-reached
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	deliveries := float64(b.N) * float64(subs)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/deliveries, "ns/delivery")
	// CPU time is steadier than wall time on a shared machine; it
	// includes the clients' reading.
	b.ReportMetric(float64(cpu.Nanoseconds())/deliveries, "cpu-ns/delivery")
	if n := s.coalescedTotal(); n > 0 {
		b.ReportMetric(float64(n)/float64(b.N)/float64(subs), "merged/delivery")
	}
}

// coalescedTotal sums the deltas merged on every connection.
func (s *Server) coalescedTotal() uint64 {
	var n uint64
	for _, c := range s.Conns() {
		n += c.out.coalescedCount()
	}
	return n
}

// rawWSDial opens a WebSocket connection by hand (no client library):
// the upgrade request, then frames read from the returned reader.
func rawWSDial(addr string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	req := "GET / HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(c, 64<<10)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 101 ") {
		c.Close()
		return nil, nil, fmt.Errorf("upgrade: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		if line == "\r\n" {
			return c, br, nil
		}
	}
}

// rawWSWrite sends msg as one masked text frame (clients must mask).
func rawWSWrite(c net.Conn, msg []byte) error {
	var hdr []byte
	switch n := len(msg); {
	case n < 126:
		hdr = []byte{0x81, 0x80 | byte(n)}
	case n < 1<<16:
		hdr = []byte{0x81, 0x80 | 126, byte(n >> 8), byte(n)}
	default:
		hdr = append([]byte{0x81, 0x80 | 127}, binary.BigEndian.AppendUint64(nil, uint64(n))...)
	}
	key := [4]byte{1, 2, 3, 4}
	frame := append(hdr, key[:]...)
	for i, c := range msg {
		frame = append(frame, c^key[i%4])
	}
	_, err := c.Write(frame)
	return err
}

// benchStamp is the text of each delta the benchmark sends.
const benchStamp = "t=1795993305301000000;"

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawWSNext reads one frame's payload into buf (reused). It allocates
// nothing once buf is large enough, so that allocs/op are the server's.
func rawWSNext(br *bufio.Reader, buf []byte) ([]byte, error) {
	h, err := br.Peek(2)
	if err != nil {
		return nil, err
	}
	n, hl := int(h[1]&0x7f), 2
	switch n {
	case 126:
		hl = 4
	case 127:
		hl = 10
	}
	if h, err = br.Peek(hl); err != nil {
		return nil, err
	}
	switch hl {
	case 4:
		n = int(binary.BigEndian.Uint16(h[2:]))
	case 10:
		n = int(binary.BigEndian.Uint64(h[2:]))
	}
	if _, err := br.Discard(hl); err != nil {
		return nil, err
	}
	buf = slices.Grow(buf[:0], n)[:n]
	_, err = io.ReadFull(br, buf)
	return buf, err
}
