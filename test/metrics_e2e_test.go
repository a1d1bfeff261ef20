package test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// scrape returns the body of GET url and fails on any other status than
// 200.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// --metrics-listen serves Prometheus metrics and the health probes; after
// a real turn (a command, then text) the counters say what happened.
func TestMetricsAfterATurn(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "true"), mockmodel.Completed("resp_1", mockmodel.Usage{Input: 10, Output: 5})),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", mockmodel.Usage{Input: 30, Output: 7})),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"`), Args: []string{"--metrics-listen", "127.0.0.1:0"}})
	base := "http://" + d.WaitLog(func(l LogLine) bool { return strings.HasPrefix(l.Msg, "serving metrics on ") }).Str("addr")
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "go")
	if m := c.Call("no/such/method", map[string]any{}); m.Error == nil {
		t.Fatal("an unknown method answered")
	}
	if m := c.Call("another/made/up", map[string]any{}); m.Error == nil {
		t.Fatal("an unknown method answered")
	}

	if scrape(t, base+"/healthz") != "ok\n" || scrape(t, base+"/readyz") != "ok\n" {
		t.Fatal("health probes")
	}
	body := scrape(t, base+"/metrics")
	for _, want := range []string{
		`agentd_connections{transport="stdio"} 1`,
		`agentd_requests_total{method="thread/start",outcome="ok"} 1`,
		`agentd_requests_total{method="turn/start",outcome="ok"} 1`,
		`agentd_requests_total{method="unknown",outcome="rejected"} 2`,
		`agentd_turns_total{status="completed"} 1`,
		`agentd_model_requests_total{outcome="ok"} 2`,
		`agentd_model_request_duration_seconds_count 2`,
		`agentd_model_tokens_total{kind="input"} 40`,
		`agentd_model_tokens_total{kind="output"} 12`,
		`agentd_tool_calls_total{status="completed",tool="command"} 1`,
		`agentd_tool_call_duration_seconds_count{tool="command"} 1`,
		`agentd_server_requests_pending 0`,
		`agentd_slow_client_disconnects_total 0`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want) {
			t.Fatalf("no %q in the metrics:\n%s", want, body)
		}
	}
	if strings.Contains(body, "no/such/method") {
		t.Fatal("an unknown method became a label")
	}
}

// --debug-pprof serves Go's profiles on the metrics address; without it
// they are not served, and without --metrics-listen it is a usage error.
func TestDebugPprof(t *testing.T) {
	d := Start(t, Options{Args: []string{"--metrics-listen", "127.0.0.1:0", "--debug-pprof"}})
	base := "http://" + d.WaitLog(func(l LogLine) bool { return strings.HasPrefix(l.Msg, "serving metrics on ") }).Str("addr")
	if body := scrape(t, base+"/debug/pprof/heap?debug=1"); !strings.Contains(body, "heap profile:") {
		t.Fatalf("not a heap profile:\n%.300s", body)
	}
	if body := scrape(t, base+"/debug/pprof/goroutine?debug=1"); !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("not a goroutine profile:\n%.300s", body)
	}

	plain := Start(t, Options{Args: []string{"--metrics-listen", "127.0.0.1:0"}})
	base = "http://" + plain.WaitLog(func(l LogLine) bool { return strings.HasPrefix(l.Msg, "serving metrics on ") }).Str("addr")
	resp, err := http.Get(base + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("profiles served without --debug-pprof: %d", resp.StatusCode)
	}

	bad := Start(t, Options{Args: []string{"--debug-pprof"}, NoWait: true})
	if code := bad.Wait(); code != 2 {
		t.Fatalf("exit code %d, want 2 (usage)", code)
	}
	if !strings.Contains(bad.Stderr(), "--debug-pprof needs --metrics-listen") {
		t.Fatalf("stderr does not say why:\n%s", bad.Stderr())
	}
}
