package test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"
)

func TestWebSocketProbesOriginAndHost(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}})
	_, port, _ := net.SplitHostPort(d.WSAddr())
	for _, tc := range []struct {
		path   string
		header map[string]string
		want   int
	}{
		{"/readyz", nil, 200},
		{"/healthz", nil, 200},
		{"/healthz", map[string]string{"Origin": "http://evil"}, 403},
		{"/readyz", map[string]string{"Host": "localhost:" + port}, 200},
		{"/readyz", map[string]string{"Host": "evil.example:" + port}, 403},
	} {
		if got := d.HTTPGet(tc.path, tc.header); got != tc.want {
			t.Errorf("GET %s %v: %d, want %d", tc.path, tc.header, got, tc.want)
		}
	}
	ctx := context.Background()
	for _, o := range []*websocket.DialOptions{
		{HTTPHeader: http.Header{"Origin": {"http://127.0.0.1"}}},
		{Host: "rebind.example"},
	} {
		_, resp, err := websocket.Dial(ctx, d.URL("ws"), o)
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Errorf("upgrade %+v: %v %v", o, err, resp)
		}
	}
	// After all that, the listener still serves.
	c := d.DialWS(WSOptions{})
	c.Initialize("after", nil)
	if d.HasLog(LogMsg("non-loopback")) {
		t.Errorf("loopback listener warned as non-loopback")
	}
}

// A listener on all interfaces without authentication starts only with
// --allow-unauthenticated, and is logged as unauthenticated; the Host
// check accepts the address the connection arrived on.
func TestNonLoopbackListenerWarns(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://0.0.0.0:0"}, Args: []string{"--allow-unauthenticated"}})
	d.WaitLog(LogMsg("non-loopback address without authentication"))
	_, port, _ := net.SplitHostPort(d.WSAddr())
	if got := d.HTTPGet("/readyz", map[string]string{"Host": "127.0.0.1:" + port}); got != 200 {
		t.Fatalf("readyz %d", got)
	}
}

// One message per text frame; binary frames are ignored; a frame that is
// not one JSON message is answered with a parse error.
func TestWebSocketFraming(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, TestHooks: true})
	ctx := context.Background()
	conn, resp, err := websocket.Dial(ctx, d.URL("ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if resp.Header.Get("x-codex-websocket-max-unfragmented-message-bytes") != "16777216" {
		t.Errorf("max message header %q", resp.Header.Get("x-codex-websocket-max-unfragmented-message-bytes"))
	}
	write := func(typ websocket.MessageType, s string) {
		if err := conn.Write(ctx, typ, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		typ, b, err := conn.Read(ctx)
		if err != nil || typ != websocket.MessageText {
			t.Fatalf("read %v %v", typ, err)
		}
		if strings.Contains(string(b), "\n") {
			t.Fatalf("newline in frame %q", b)
		}
		return string(b)
	}
	write(websocket.MessageBinary, `{"id":0,"method":"initialize","params":{}}`)
	write(websocket.MessageText, `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"f","version":"1"}}}`)
	if got := read(); !strings.HasPrefix(got, `{"id":1,"result":{"userAgent":"f/`) {
		t.Fatalf("got %s", got)
	}
	write(websocket.MessageText, "{\"id\":2,\"method\":\"test/sleep\",\"params\":{}}\n{\"id\":3,\"method\":\"test/sleep\",\"params\":{}}")
	if got := read(); !strings.HasPrefix(got, `{"error":{"code":-32700,`) || !strings.HasSuffix(got, `"id":null}`) {
		t.Fatalf("got %s", got)
	}
	write(websocket.MessageText, `{"id":4,"method":"test/sleep","params":{}}`)
	if got := read(); got != `{"id":4,"result":{"slept":0}}` {
		t.Fatalf("got %s", got)
	}
}

func TestUnixSocket(t *testing.T) {
	home := shortTempDir(t)
	sock := filepath.Join(home, "ctl.sock")

	// A stale socket file from a dead server is replaced.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	d := Start(t, Options{Home: home, Listen: []string{"unix://" + sock}})
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi.Mode(), err)
	}
	c := d.DialUnix()
	c.Initialize("unix", nil)

	// A live socket is an error for a second server.
	second := Start(t, Options{Home: home, Listen: []string{"unix://" + sock}, NoWait: true})
	if code := second.Wait(); code != 1 || !strings.Contains(second.Stderr(), "address in use") {
		t.Fatalf("second server: exit %d, stderr:\n%s", code, second.Stderr())
	}
	WantError(t, c.Call("initialize", map[string]any{"clientInfo": map[string]any{"name": "again", "version": "1"}}), codeInvalidRequest, "Already initialized")

	d.Signal(syscall.SIGTERM)
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left after shutdown: %v", err)
	}
}

func TestDefaultUnixSocketPath(t *testing.T) {
	d := Start(t, Options{Listen: []string{"unix://"}})
	want := filepath.Join(d.Home, "app-server-control", "app-server-control.sock")
	if d.UnixPath() != want {
		t.Fatalf("socket %s, want %s", d.UnixPath(), want)
	}
	d.DialUnix().Initialize("default", nil)
}

// Several listeners in one process: each connection is independent, and a
// broadcast reaches all of them.
func TestSeveralListenersAtOnce(t *testing.T) {
	home := shortTempDir(t)
	d := Start(t, Options{Home: home, TestHooks: true,
		Listen: []string{"stdio://", "ws://127.0.0.1:0", "unix://" + filepath.Join(home, "s.sock")}})
	stdio, ws, unix := d.Stdio(), d.DialWS(WSOptions{}), d.DialUnix()
	clients := []*Client{stdio, ws, unix}
	for i, c := range clients {
		c.Initialize([]string{"stdio", "ws", "unix"}[i], nil)
	}
	// The same id on every connection is routed to its own connection.
	for _, c := range clients {
		c.Send(map[string]any{"id": 77, "method": "test/sleep", "params": map[string]int{"ms": 10}})
	}
	for _, c := range clients {
		if m := c.Response(json.RawMessage("77")); m.Error != nil {
			t.Fatalf("got %s", m.Raw)
		}
	}
	WantResult(t, unix.Call("test/emit", map[string]any{"method": "x/all", "params": map[string]int{}, "broadcast": true}))
	for _, c := range clients {
		c.ReadUntil(func(m Message) bool { return m.Method == "x/all" })
	}
}
