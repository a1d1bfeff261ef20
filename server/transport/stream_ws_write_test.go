package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// recordingConn is a net.Conn that keeps each Write it is given.
type recordingConn struct {
	net.Conn // nil: only Write is used
	mu       sync.Mutex
	writes   [][]byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func (c *recordingConn) written() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.writes)
}

func (c *recordingConn) taken() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// parseFrames splits b into server frames (unmasked, final, text),
// failing on anything else, and returns their payloads.
func parseFrames(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for len(b) > 0 {
		if len(b) < 2 || b[0] != 0x81 || b[1]&0x80 != 0 {
			t.Fatalf("not an unmasked final text frame: % x", b[:min(len(b), 10)])
		}
		n, h := int(b[1]), 2
		switch n {
		case 126:
			n, h = int(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			n, h = int(binary.BigEndian.Uint64(b[2:])), 10
		}
		if len(b) < h+n {
			t.Fatalf("frame of %d bytes cut at %d", n, len(b)-h)
		}
		out = append(out, string(b[h:h+n]))
		b = b[h+n:]
	}
	return out
}

func TestWSWriterSendsABatchInOneWrite(t *testing.T) {
	rc := &recordingConn{}
	w := &wsWriter{conn: rc}
	msgs := []string{`{"a":1}`, "", strings.Repeat("x", 125), strings.Repeat("y", 126), strings.Repeat("z", 1000)}
	for _, m := range msgs {
		if err := w.frame([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if got := rc.taken(); len(got) != 0 {
		t.Fatalf("%d writes before Flush", len(got))
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	got := rc.taken()
	if len(got) != 1 {
		t.Fatalf("%d writes for one batch, want 1", len(got))
	}
	if p := parseFrames(t, got[0]); fmt.Sprint(p) != fmt.Sprint(msgs) {
		t.Fatalf("frames %q, want %q", p, msgs)
	}
	// An empty batch writes nothing.
	if err := w.flush(); err != nil || len(rc.taken()) != 0 {
		t.Fatalf("empty flush: %v", err)
	}
}

func TestWSWriterLargeMessagesAndLongBatches(t *testing.T) {
	rc := &recordingConn{}
	w := &wsWriter{conn: rc}
	small, large := "s", strings.Repeat("L", wsDirectMin+70000)
	// A large message goes out at once, after what was framed before it.
	if err := w.frame([]byte(small)); err != nil {
		t.Fatal(err)
	}
	if err := w.frame([]byte(large)); err != nil {
		t.Fatal(err)
	}
	if p := parseFrames(t, bytes.Join(rc.taken(), nil)); len(p) != 2 || p[0] != small || p[1] != large {
		t.Fatalf("large message: %d frames", len(p))
	}
	// A batch that grows past wsBatchMax is sent without waiting.
	mid := strings.Repeat("m", wsDirectMin-1)
	var sent []string
	for rc.written() == 0 {
		if err := w.frame([]byte(mid)); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, mid)
		if len(sent) > wsBatchMax/len(mid)+1 {
			t.Fatal("the batch grew past its bound unsent")
		}
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if p := parseFrames(t, bytes.Join(rc.taken(), nil)); len(p) != len(sent) {
		t.Fatalf("%d frames, want %d", len(p), len(sent))
	}
}

func TestWSWriterControlFramesAndClose(t *testing.T) {
	rc := &recordingConn{}
	w := &wsWriter{conn: rc}
	if err := w.frame([]byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	// A control frame (here a pong) goes out at once, after the batch.
	pong := []byte{0x8a, 0}
	if _, err := w.Write(pong); err != nil {
		t.Fatal(err)
	}
	got := bytes.Join(rc.taken(), nil)
	if !bytes.HasSuffix(got, pong) || fmt.Sprint(parseFrames(t, got[:len(got)-2])) != `[{"n":1}]` {
		t.Fatalf("wrote % x", got)
	}
	// After a close frame, no message is framed.
	if _, err := w.Write([]byte{0x88, 2, 0x03, 0xe8}); err != nil {
		t.Fatal(err)
	}
	if err := w.frame([]byte(`{"n":2}`)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("frame after close: %v", err)
	}
}

// listenLoopbackWS listens for WebSocket connections on a loopback port
// until the test ends.
func listenLoopbackWS(t *testing.T) Listener {
	t.Helper()
	ep, _ := ParseListenURL("ws://127.0.0.1:0", "")
	l, err := Listen(context.Background(), ep, Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestWSServerBatchesReachAClient writes messages of every header size
// as one batch on a real connection, then closes: a WebSocket client
// reads them all, answers a ping meanwhile, and sees a normal close.
func TestWSServerBatchesReachAClient(t *testing.T) {
	sizes := []int{0, 1, 125, 126, 65535, 65536, wsDirectMin - 1, wsDirectMin, 1 << 20}
	payload := func(i, n int) []byte {
		return bytes.Repeat([]byte{byte('a' + i)}, n)
	}
	l := listenLoopbackWS(t)
	served := make(chan error, 1)
	go func() {
		_ = l.Serve(func(st Stream) {
			served <- func() error {
				if _, err := st.Read(context.Background()); err != nil {
					return err
				}
				for i, n := range sizes {
					if err := st.Write(context.Background(), payload(i, n)); err != nil {
						return err
					}
				}
				if err := st.Flush(); err != nil {
					return err
				}
				// The client pings, then says it read everything.
				if _, err := st.Read(context.Background()); err != nil {
					return err
				}
				if err := st.Close(); err != nil {
					return err
				}
				if err := st.Write(context.Background(), []byte("late")); err == nil {
					return errors.New("a write after Close succeeded")
				}
				return nil
			}()
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, l.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 24)
	if err := c.Write(ctx, websocket.MessageText, []byte("go")); err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		typ, b, err := c.Read(ctx)
		if err != nil || typ != websocket.MessageText || !bytes.Equal(b, payload(i, n)) {
			t.Fatalf("message %d (%d bytes): %v, %d bytes, %v", i, n, typ, len(b), err)
		}
	}
	// A ping is answered by the server's reader (coder/websocket) through
	// the same writer; the client reads meanwhile to see the pong.
	readErr := make(chan error, 1)
	go func() {
		_, _, err := c.Read(ctx)
		readErr <- err
	}()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("done")); err != nil {
		t.Fatal(err)
	}
	if err := <-readErr; websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("read after the messages: %v, want a normal close", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// A WebSocket connection's socket keeps at most wsNotSentLowat bytes it
// has not sent: a slow client's backlog waits in the daemon's queue, where
// its deltas can merge, not in a send buffer the kernel grew for it.
func TestWSSocketKeepsLittleUnsent(t *testing.T) {
	l := listenLoopbackWS(t)
	lowat := make(chan int, 1)
	go func() {
		_ = l.Serve(func(st Stream) {
			v := -1
			if ws, ok := st.(*wsStream); ok && ws.w != nil {
				if rc, err := ws.w.conn.(*net.TCPConn).SyscallConn(); err == nil {
					_ = rc.Control(func(fd uintptr) {
						v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
					})
				}
			}
			lowat <- v
			_, _ = st.Read(context.Background())
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, l.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if v := <-lowat; v != wsNotSentLowat {
		t.Fatalf("TCP_NOTSENT_LOWAT of the server's socket: %d, want %d", v, wsNotSentLowat)
	}
}
