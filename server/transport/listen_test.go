package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap/zaptest"
)

func TestParseListenURL(t *testing.T) {
	home := "/h"
	cases := []struct {
		in   string
		kind Kind
		addr string
		err  string
	}{
		{"stdio://", KindStdio, "", ""},
		{"ws://127.0.0.1:0", KindWS, "127.0.0.1:0", ""},
		{"ws://[::1]:4500", KindWS, "[::1]:4500", ""},
		{"unix://", KindUnix, "/h/app-server-control/app-server-control.sock", ""},
		{"unix:///run/a.sock", KindUnix, "/run/a.sock", ""},
		{"ws://127.0.0.1", "", "", "missing port"},
		{"ws://:80", "", "", "missing host"},
		{"tcp://1.2.3.4:5", "", "", "unsupported"},
		{"stdio", "", "", "invalid listen URL"},
		{"stdio://x", "", "", "no address"},
	}
	for _, tc := range cases {
		ep, err := ParseListenURL(tc.in, home)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || ep.Kind != tc.kind || ep.Addr != tc.addr {
			t.Errorf("%s: %+v %v", tc.in, ep, err)
		}
	}
}

// startWS binds ws://127.0.0.1:0 and serves echo connections: every text
// message is written back.
func startWS(t *testing.T, maxBytes int) (Listener, string) {
	t.Helper()
	ep, _ := ParseListenURL("ws://127.0.0.1:0", "")
	l, err := Listen(context.Background(), ep, Options{MaxMessageBytes: maxBytes, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Serve(echo) }()
	t.Cleanup(func() { _ = l.Close() })
	return l, strings.TrimPrefix(l.URL(), "ws://")
}

func echo(st Stream) {
	defer st.Close()
	for {
		b, err := st.Read(context.Background())
		if err != nil {
			return
		}
		if err := st.Write(context.Background(), b); err != nil {
			return
		}
		// A stream may buffer what is written until Flush.
		if err := st.Flush(); err != nil {
			return
		}
	}
}

func httpGet(t *testing.T, addr, path string, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestWSHealthOriginAndHost(t *testing.T) {
	_, addr := startWS(t, 0)
	_, port, _ := net.SplitHostPort(addr)
	cases := []struct {
		path   string
		header map[string]string
		want   int
	}{
		{"/readyz", nil, 200},
		{"/healthz", nil, 200},
		{"/healthz", map[string]string{"Origin": "http://evil"}, 403},
		{"/readyz", map[string]string{"Host": "localhost:" + port}, 200},
		{"/readyz", map[string]string{"Host": "attacker.example:" + port}, 403},
		{"/readyz", map[string]string{"Host": "10.1.2.3:" + port}, 403},
	}
	for _, tc := range cases {
		if got := httpGet(t, addr, tc.path, tc.header); got != tc.want {
			t.Errorf("%s %v: %d, want %d", tc.path, tc.header, got, tc.want)
		}
	}
	// The upgrade itself is refused with an Origin header.
	_, resp, err := websocket.Dial(context.Background(), "ws://"+addr, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://127.0.0.1"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("upgrade with Origin: %v %v", err, resp)
	}
	_, resp, err = websocket.Dial(context.Background(), "ws://"+addr, &websocket.DialOptions{Host: "rebound.example"})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("upgrade with foreign Host: %v %v", err, resp)
	}
}

func TestWSFramesAndLimit(t *testing.T) {
	_, addr := startWS(t, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get(MaxMessageHeader) != "64" {
		t.Errorf("header %q", resp.Header.Get(MaxMessageHeader))
	}
	// Binary frames are ignored; text frames are messages.
	if err := c.Write(ctx, websocket.MessageBinary, []byte("bin")); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	typ, b, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageText || string(b) != `{"a":1}` {
		t.Fatalf("%v %q %v", typ, b, err)
	}
	// Over the limit: the server closes with 1009.
	if err := c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("x", 65))); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("err %v, want close 1009", err)
	}
}

func dialUnix(path string) (*websocket.Conn, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	c, _, err := websocket.Dial(context.Background(), "ws://localhost/", &websocket.DialOptions{HTTPClient: hc})
	return c, err
}

func TestUnixSocketModeStaleLiveAndRemoval(t *testing.T) {
	dir, err := os.MkdirTemp("", "ut")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")

	// A stale socket file (nobody listening) is replaced.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}

	ep, _ := ParseListenURL("unix://"+path, "")
	l, err := Listen(context.Background(), ep, Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	go func() { _ = l.Serve(echo) }()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}

	// WebSocket over the socket works.
	c, err := dialUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = c.Write(ctx, websocket.MessageText, []byte(`{"u":1}`))
	if _, b, err := c.Read(ctx); err != nil || string(b) != `{"u":1}` {
		t.Fatalf("%q %v", b, err)
	}
	c.CloseNow()

	// A live socket is not stolen.
	if _, err := Listen(context.Background(), ep, Options{}); err == nil || !strings.Contains(err.Error(), "address in use") {
		t.Fatalf("second listener: %v", err)
	}

	// Raw JSONL on the socket is not our protocol: the HTTP server
	// answers 400 and closes.
	raw, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write([]byte("{\"id\":1,\"method\":\"initialize\"}\n"))
	line, _ := bufio.NewReader(raw).ReadString('\n')
	if !strings.Contains(line, "400") {
		t.Errorf("raw JSONL got %q", line)
	}
	raw.Close()

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left after close: %v", err)
	}
}

func TestUnixDefaultPathAndNonSocket(t *testing.T) {
	home := t.TempDir()
	ep, _ := ParseListenURL("unix://", home)
	if len(ep.Addr) > maxUnixPath {
		t.Skipf("temp dir too deep for a socket path: %s", ep.Addr)
	}
	l, err := Listen(context.Background(), ep, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Dir(ep.Addr))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v %v", fi.Mode(), err)
	}
	l.Close()

	file := filepath.Join(home, "plain")
	_ = os.WriteFile(file, nil, 0o600)
	ep, _ = ParseListenURL("unix://"+file, home)
	if _, err := Listen(context.Background(), ep, Options{}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("err %v", err)
	}
	ep, _ = ParseListenURL("unix:///"+strings.Repeat("d", 120), home)
	if _, err := Listen(context.Background(), ep, Options{}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err %v", err)
	}
}

func TestPipeDeliversThenEOF(t *testing.T) {
	a, b := Pipe(4)
	ctx := context.Background()
	_ = a.Write(ctx, []byte("1"))
	_ = a.Write(ctx, []byte("2"))
	a.Close()
	for _, want := range []string{"1", "2"} {
		if m, err := b.Read(ctx); err != nil || string(m) != want {
			t.Fatalf("%q %v", m, err)
		}
	}
	if _, err := b.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("err %v", err)
	}
	if err := b.Write(ctx, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// CloseFor tells a WebSocket peer why it is closed: status 1008 and the
// reason, cut to what a close frame holds.
func TestWSCloseForSendsReason(t *testing.T) {
	for _, reason := range []string{"outbound queue full: client not reading fast enough", strings.Repeat("é", 100)} {
		ep, _ := ParseListenURL("ws://127.0.0.1:0", "")
		l, err := Listen(context.Background(), ep, Options{Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = l.Serve(func(st Stream) {
				if _, err := st.Read(context.Background()); err == nil {
					_ = CloseFor(st, reason)
				}
			})
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, _, err := websocket.Dial(ctx, l.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		_, _, err = c.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation {
			t.Fatalf("err %v, want close 1008", err)
		}
		want := reason
		if len(want) > maxCloseReason {
			want = strings.ToValidUTF8(want[:maxCloseReason], "")
		}
		if ce.Reason != want || len(ce.Reason) > maxCloseReason {
			t.Fatalf("reason %q, want %q", ce.Reason, want)
		}
		cancel()
		_ = l.Close()
	}
}

// A client may send its first frames right behind its upgrade request,
// in the same packet: the HTTP server has read them with the request, and
// they must reach the WebSocket reader first, whole and in order, however
// they compare with the connection's small buffers (wsReadBuffer): the
// server's buffer holds the first ones, the kernel the rest.
func TestWSFramesSentWithTheUpgradeRequest(t *testing.T) {
	_, addr := startWS(t, 0)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var msgs []string
	for i, size := range []int{10, 300, 2000, 5, 3000, 1, 6000} {
		msgs = append(msgs, fmt.Sprintf("%d:%s", i, strings.Repeat(string(rune('a'+i)), size)))
	}
	var out bytes.Buffer
	out.WriteString("GET / HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	for _, m := range msgs {
		out.Write(maskedTextFrame(m))
	}
	if _, err := conn.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: HTTP %d", resp.StatusCode)
	}
	for i, want := range msgs {
		got, err := readServerFrame(br)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if got != want {
			t.Fatalf("message %d: got %d bytes %.20q…, want %d bytes %.20q…", i, len(got), got, len(want), want)
		}
	}
}

// maskedTextFrame is one text frame as a client sends it (masked).
func maskedTextFrame(payload string) []byte {
	b := []byte{0x81}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	key := []byte{1, 2, 3, 4}
	b = append(b, key...)
	for i := 0; i < len(payload); i++ {
		b = append(b, payload[i]^key[i%4])
	}
	return b
}

// readServerFrame reads one unmasked, unfragmented text frame.
func readServerFrame(r *bufio.Reader) (string, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", err
	}
	if h[0] != 0x81 || h[1]&0x80 != 0 {
		return "", fmt.Errorf("unexpected frame header % x", h)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return "", err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return "", err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return string(p), err
}
