package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsServer serves one WebSocket connection on loopback and runs serve on
// it.
func wsServer(t *testing.T, serve func(ctx context.Context, c *websocket.Conn)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		serve(r.Context(), c)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// testDial dials url, not started yet.
func testDial(t *testing.T, url string) *wsConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := wsDial(ctx, url, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// recorder collects what a wsConn hands over.
type recorder struct {
	mu    sync.Mutex
	msgs  []string
	ended chan error
}

func newRecorder() *recorder { return &recorder{ended: make(chan error, 1)} }

func (r *recorder) read(msg []byte) bool {
	r.mu.Lock()
	r.msgs = append(r.msgs, string(msg))
	r.mu.Unlock()
	return true
}

func (r *recorder) end(err error) { r.ended <- err }

func (r *recorder) waitEnd(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.ended:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the connection never ended")
		return nil
	}
}

// The client speaks to a real server: its masked frames are read, the
// server's messages (small, 16-bit and 64-bit lengths, fragmented) reach
// it whole and in order, a ping is answered, and the server's close frame
// ends it with the status and reason.
func TestWSConnAgainstARealServer(t *testing.T) {
	big := strings.Repeat("x", 70_000)
	huge := strings.Repeat("h", 3<<20) // many reads, the frame growing in place
	mid := strings.Repeat("y", 300)
	pinged := make(chan error, 1)
	url := wsServer(t, func(ctx context.Context, c *websocket.Conn) {
		_, msg, err := c.Read(ctx)
		if err != nil || string(msg) != "hello" {
			t.Errorf("server read %q, %v", msg, err)
			return
		}
		// Ping waits for the pong, which needs a reader.
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
		for _, m := range []string{"a", mid, big, huge} {
			if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
				t.Errorf("write: %v", err)
			}
		}
		_ = c.Write(ctx, websocket.MessageBinary, []byte("ignored"))
		w, _ := c.Writer(ctx, websocket.MessageText)
		_, _ = w.Write([]byte("frag-"))
		_, _ = w.Write([]byte(strings.Repeat("z", 5000)))
		_ = w.Close()
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		pinged <- c.Ping(pctx)
		cancel()
		_ = c.Close(websocket.StatusPolicyViolation, "enough")
	})
	w := testDial(t, url)
	r := newRecorder()
	w.start(r.read, r.end)
	if err := w.writeText([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := <-pinged; err != nil {
		t.Errorf("the server's ping got no pong: %v", err)
	}
	err := r.waitEnd(t)
	var closed *errWSClosed
	if !errors.As(err, &closed) || closed.code != int(websocket.StatusPolicyViolation) || closed.reason != "enough" {
		t.Errorf("end: %v, want the server's close frame", err)
	}
	want := []string{"a", mid, big, huge, "frag-" + strings.Repeat("z", 5000)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) != len(want) {
		t.Fatalf("got %d messages, want %d", len(r.msgs), len(want))
	}
	for i := range want {
		if r.msgs[i] != want[i] {
			t.Errorf("message %d: %d bytes %.20q, want %d bytes %.20q", i, len(r.msgs[i]), r.msgs[i], len(want[i]), want[i])
		}
	}
}

// A client that stops reading is read no more (what follows stays in the
// socket), and close then ends it.
func TestWSConnStopsReading(t *testing.T) {
	release := make(chan struct{})
	url := wsServer(t, func(ctx context.Context, c *websocket.Conn) {
		for _, m := range []string{"one", "two", "three"} {
			_ = c.Write(ctx, websocket.MessageText, []byte(m))
		}
		<-release
	})
	defer close(release)
	w := testDial(t, url)
	r := newRecorder()
	first := make(chan struct{})
	w.start(func(msg []byte) bool {
		r.read(msg)
		close(first)
		return false
	}, r.end)
	<-first
	w.close()
	if err := r.waitEnd(t); err == nil || !strings.Contains(err.Error(), "not reading") {
		t.Errorf("end: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) != 1 || r.msgs[0] != "one" {
		t.Errorf("read %q after stopping at the first", r.msgs)
	}
}

func TestParseFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		size int
		err  bool
	}{
		{"empty", nil, 0, false},
		{"header only", []byte{0x81}, 0, false},
		{"short payload", []byte{0x81, 3, 'a'}, 0, false},
		{"whole", []byte{0x81, 1, 'a', 0x81}, 3, false},
		{"16-bit length, short", []byte{0x81, 126, 0}, 0, false},
		{"64-bit length, short", []byte{0x81, 127, 0, 0, 0}, 0, false},
		{"masked", []byte{0x81, 0x81, 0, 0, 0, 0, 'a'}, 0, true},
		{"too large", []byte{0x81, 127, 0xff, 0, 0, 0, 0, 0, 0, 0}, 0, true},
	} {
		_, size, err := parseFrame(tc.b)
		if size != tc.size || (err != nil) != tc.err {
			t.Errorf("%s: size %d, err %v; want %d, error %v", tc.name, size, err, tc.size, tc.err)
		}
	}
}

// The warm-up's own server answers the client's requests: the harness
// starts with a whole exchange behind it.
func TestWarmUp(t *testing.T) {
	if err := warmUp(context.Background()); err != nil {
		t.Fatal(err)
	}
}
