package test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// notifySocket is a fake systemd notification socket: it collects the
// datagrams the daemon sends.
type notifySocket struct {
	path string
	conn *net.UnixConn
	msgs chan string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(shortTempDir(t), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	n := &notifySocket{path: path, conn: conn, msgs: make(chan string, 1024)}
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				close(n.msgs)
				return
			}
			n.msgs <- string(buf[:k])
		}
	}()
	return n
}

// next returns the next datagram that contains want.
func (n *notifySocket) next(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(WaitTimeout)
	for {
		select {
		case m, ok := <-n.msgs:
			if !ok {
				t.Fatalf("notify socket closed before %q", want)
			}
			if strings.Contains(m, want) {
				return m
			}
		case <-timeout:
			t.Fatalf("no notification with %q", want)
		}
	}
}

// Under Type=notify: READY=1 with a status line once the daemon serves,
// WATCHDOG=1 at half of WATCHDOG_USEC (each after a probe request was
// answered), STATUS= as clients come, STOPPING=1 on SIGTERM. Commands
// never see NOTIFY_SOCKET.
func TestSystemdNotify(t *testing.T) {
	n := newNotifySocket(t)
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, Env: []string{"NOTIFY_SOCKET=" + n.path, "WATCHDOG_USEC=200000"}})
	ready := n.next(t, "READY=1")
	if !strings.Contains(ready, "STATUS=0 connections, 0 threads loaded") {
		t.Fatalf("ready message %q", ready)
	}
	n.next(t, "WATCHDOG=1")
	n.next(t, "WATCHDOG=1")
	c := d.DialWS(WSOptions{})
	c.Initialize("e2e", nil)
	n.next(t, "STATUS=1 connections, 0 threads loaded")
	res := unmarshal(t, WantResult(t, c.Call("command/exec", map[string]any{"command": []string{"env"}})))
	if out := str(res, "stdout"); strings.Contains(out, "NOTIFY_SOCKET") || strings.Contains(out, "WATCHDOG_USEC") {
		t.Fatalf("a command saw the service manager's variables:\n%s", out)
	}
	d.Signal(syscall.SIGTERM)
	n.next(t, "STOPPING=1")
	d.Wait()
}

// Socket activation: without --listen, the sockets systemd passes (TCP
// and Unix, named by LISTEN_FDNAMES) are served as WebSocket listeners,
// instead of stdio.
func TestSocketActivation(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(shortTempDir(t), "ctl.sock")
	unix, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	tcpFile, err := tcp.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	unixFile, err := unix.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{Activate: []*os.File{tcpFile, unixFile}, ActivateNames: []string{"web", "ctl"}})
	_ = tcpFile.Close()
	_ = unixFile.Close()
	for _, name := range []string{"web", "ctl"} {
		if !d.HasLog(func(l LogLine) bool {
			return l.Msg == "serving a socket passed by the service manager" && l.Str("name") == name
		}) {
			t.Fatalf("passed socket %s not logged:\n%s", name, d.Stderr())
		}
	}
	if d.HasLog(LogMsg("listening on stdio://")) {
		t.Fatal("stdio served although sockets were passed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+tcp.Addr().String(), nil)
	if err != nil {
		t.Fatalf("dial the passed TCP socket: %v", err)
	}
	_ = conn.CloseNow()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", sock)
	}}}
	u := dialWS(t, "unix", "ws://localhost/", hc, nil)
	u.Initialize("activated", nil)
	d.Signal(syscall.SIGTERM)
	d.Wait()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the passed socket's file was removed: %v", err)
	}
}

// nextAny returns the next datagram.
func (n *notifySocket) nextAny(t *testing.T) string {
	t.Helper()
	select {
	case m, ok := <-n.msgs:
		if !ok {
			t.Fatal("notify socket closed")
		}
		return m
	case <-time.After(WaitTimeout):
		t.Fatal("no notification")
	}
	return ""
}

var missedProbesRE = regexp.MustCompile(`STATUS=the engine did not answer (\d+) watchdog probe`)

// missedProbes is the count of unanswered probes a datagram's status
// line reports (0 when it reports none).
func missedProbes(m string) int {
	sm := missedProbesRE.FindStringSubmatch(m)
	if sm == nil {
		return 0
	}
	k, _ := strconv.Atoi(sm[1])
	return k
}

// The watchdog is pinged only while the engine answers its probe: with
// every connection's dispatch held (test/stall, a deadlocked engine), the
// status line counts the unanswered probes and no WATCHDOG=1 is sent;
// once the hold ends, the pings resume with the status back to normal. A
// plain timer would have pinged on.
func TestSystemdWatchdogStopsWhileTheEngineIsStuck(t *testing.T) {
	n := newNotifySocket(t)
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, TestHooks: true,
		Env: []string{"NOTIFY_SOCKET=" + n.path, "WATCHDOG_USEC=300000"}})
	n.next(t, "READY=1")
	n.next(t, "WATCHDOG=1")
	c := d.DialWS(WSOptions{})
	c.Initialize("staller", nil)
	c.Request("test/stall", map[string]any{})
	c.ReadUntil(isMethod("test/stalled"))
	// The datagrams come in the order the daemon sent them. A ping on its
	// way when the hold began may come before the first missed probe;
	// after one, no ping may come but with the status back to normal
	// (the engine answered again), which cannot happen while held.
	stuck := 0
	for stuck < 3 {
		m := n.nextAny(t)
		k := missedProbes(m)
		recovered := strings.Contains(m, "STATUS=") && k == 0
		if strings.Contains(m, "WATCHDOG=1") && (k > 0 || (stuck > 0 && !recovered)) {
			t.Fatalf("pinged the watchdog while the engine did not answer: %q (after %d missed probes)", m, stuck)
		}
		switch {
		case k > 0:
			stuck = k
		case recovered:
			stuck = 0
		}
	}
	c.Close()
	m := n.next(t, "WATCHDOG=1")
	if missedProbes(m) != 0 || !strings.Contains(m, "STATUS=") {
		t.Fatalf("the first ping after the hold: %q, want the status back to normal with it", m)
	}
	d.Signal(syscall.SIGTERM)
	d.Wait()
}
