package test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// upgradeVia sends one WebSocket upgrade request through hc and returns
// the status (101 when admitted; that connection is then closed).
func upgradeVia(t *testing.T, hc *http.Client, wsURL string) int {
	t.Helper()
	resp, err := hc.Do(wsUpgradeRequest(t, wsURL, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func unixHTTPClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", path)
	}}}
}

// --max-connections bounds the WebSocket connections of the TCP and Unix
// listeners together: with 2, a third client on either gets HTTP 503
// before any upgrade, and the refusals are counted in the metrics; once a
// client leaves, a new one is admitted. The per-connection in-flight cap
// (server.max_inflight_per_connection), with no room for requests to wait
// (server.max_queued_request_bytes=0), answers -32001, counted as
// overloaded requests.
func TestConnectionLimit(t *testing.T) {
	d := Start(t, Options{
		Listen:    []string{"ws://127.0.0.1:0", "unix://" + shortTempDir(t) + "/s.sock"},
		TestHooks: true,
		Config:    []string{"server.max_inflight_per_connection=1", "server.max_queued_request_bytes=0"},
		Args:      []string{"--max-connections", "2", "--metrics-listen", "127.0.0.1:0"},
	})
	base := "http://" + d.WaitLog(func(l LogLine) bool { return strings.HasPrefix(l.Msg, "serving metrics on ") }).Str("addr")
	ws := d.DialWS(WSOptions{})
	ws.Initialize("first", nil)
	ux := d.DialUnix()
	ux.Initialize("second", nil)

	if code := upgradeVia(t, http.DefaultClient, d.URL("ws")); code != http.StatusServiceUnavailable {
		t.Fatalf("a third client over TCP: HTTP %d, want 503", code)
	}
	if code := upgradeVia(t, unixHTTPClient(d.UnixPath()), "ws://localhost"); code != http.StatusServiceUnavailable {
		t.Fatalf("a third client over the Unix socket: HTTP %d, want 503", code)
	}
	// Health probes are never refused.
	if code, body := probe(t, "http"+strings.TrimPrefix(d.URL("ws"), "ws")+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz at the limit: %d %s", code, body)
	}

	// One request in flight fills the connection's cap.
	ws.Request("test/sleep", map[string]any{"ms": 60000})
	waitStarted(d, "test/sleep", 1)
	WantError(t, ws.Call("test/sleep", map[string]any{"ms": 0}), codeOverloaded, "Server overloaded; retry later.")

	body := scrape(t, base+"/metrics")
	if n := metricValue(t, body, "agentd_connections_refused_total"); n != 2 {
		t.Fatalf("agentd_connections_refused_total = %v, want 2\n%s", n, body)
	}
	if n := metricValue(t, body, `agentd_requests_total{method="unknown",outcome="overloaded"}`); n != 1 {
		t.Fatalf("overloaded requests = %v, want 1", n)
	}

	// A client leaves; its slot is freed once the daemon has noticed, and
	// nothing signals that to us but the next upgrade's answer.
	ws.Close()
	var third *Client
	for deadline := time.Now().Add(WaitTimeout); third == nil; time.Sleep(10 * time.Millisecond) {
		c, code, err := d.TryDialWS()
		switch {
		case c != nil:
			third = c
		case code != http.StatusServiceUnavailable:
			t.Fatalf("dial after a client left: HTTP %d %v", code, err)
		case time.Now().After(deadline):
			t.Fatal("no client admitted after one left")
		}
	}
	third.Initialize("third", nil)
	if m := third.Call("thread/loaded/list", map[string]any{}); m.Error != nil {
		t.Fatalf("the admitted client: %s", m.Raw)
	}
}

// --max-connections must be positive.
func TestMaxConnectionsFlagChecked(t *testing.T) {
	d := Start(t, Options{Args: []string{"--max-connections", "0"}, NoWait: true})
	if code := d.Wait(); code != 2 {
		t.Fatalf("exit code %d, want 2 (usage)", code)
	}
	if !strings.Contains(d.Stderr(), "--max-connections") {
		t.Fatalf("stderr does not name the flag:\n%s", d.Stderr())
	}
}
