package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// probe returns the status and body of GET url.
func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue reads one sample of the metrics text (0 when absent).
func metricValue(t *testing.T, body, sample string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// isWarning matches a warning notification whose message contains text.
func isWarning(text string) func(Message) bool {
	return func(m Message) bool {
		return m.Method == "warning" && strings.Contains(string(m.Params), text)
	}
}

// The home's disk fills up in the middle of a session (the rollout writer's
// fault hook fails every write with ENOSPC). The thread's subscriber is
// told that saving the transcript fails and will be retried, /readyz says
// not ready, and the failed writes are counted; once the disk is free the
// writer retries by itself, the subscriber is told it works again,
// /readyz is ready, and after a restart nothing of the session is lost.
func TestFullDiskReportedAndRecovered(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "answer before"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "answer while full"), mockmodel.Completed("resp_2", usage())),
	)
	home := shortTempDir(t)
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, ""), TestHooks: true, Args: []string{"--metrics-listen", "127.0.0.1:0"}})
	base := "http://" + d.WaitLog(func(l LogLine) bool { return strings.HasPrefix(l.Msg, "serving metrics on ") }).Str("addr")
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "before")
	if code, body := probe(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %s", code, body)
	}

	WantResult(t, c.Call("test/rolloutWrites", map[string]any{"fail": true}))
	w := readOrFind(c, runTurn(t, c, id, "while full"), isWarning("Failed to save the conversation transcript"))
	p := unmarshal(t, w.Params)
	if str(p, "threadId") != id || !strings.Contains(str(p, "message"), "will continue retrying") || !strings.Contains(str(p, "message"), "no space left on device") {
		t.Fatalf("warning %s", w.Raw)
	}
	code, body := probe(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "rollouts of 1 thread") {
		t.Fatalf("/readyz while full: %d %s", code, body)
	}
	if n := metricValue(t, scrape(t, base+"/metrics"), "agentd_rollout_write_failures_total"); n < 1 {
		t.Fatalf("agentd_rollout_write_failures_total = %v", n)
	}

	WantResult(t, c.Call("test/rolloutWrites", map[string]any{"fail": false}))
	w = c.ReadUntil(isWarning("works again"))
	if str(unmarshal(t, w.Params), "threadId") != id {
		t.Fatalf("recovery warning %s", w.Raw)
	}
	if code, body := probe(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after recovery: %d %s", code, body)
	}
	c.Close()
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	d2 := Start(t, Options{Home: home})
	c2 := d2.Stdio()
	c2.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c2.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	turns, _ := path(res, "thread", "turns").([]any)
	if len(turns) != 2 || str(turns[1], "status") != "completed" ||
		str(turns[1], "items", 0, "content", 0, "text") != "while full" || str(turns[1], "items", 1, "text") != "answer while full" {
		t.Fatalf("turns after the disk was freed and a restart: %v", turns)
	}
}

// A kill while the disk is full keeps what was written before it filled:
// the interrupted turn's user message, which reached the file as the turn
// began, is there after a restart, though the agent message completed
// after the disk filled could not be saved.
func TestKillWhileDiskFullKeepsUserMessage(t *testing.T) {
	m := mockmodel.New(t, mockmodel.AllowUnused())
	begun, rest := mockmodel.NewGate(), mockmodel.NewGate()
	partial := len(mockmodel.SSE(mockmodel.Created("resp_2"), mockmodel.Text("msg_2", "said while full")).Events())
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "done one"), mockmodel.Completed("resp_1", usage())),
		mockmodel.SSE(mockmodel.Created("resp_2"), mockmodel.Text("msg_2", "said while full"), mockmodel.Text("msg_3", "never said"),
			mockmodel.Completed("resp_2", usage())).GateAfter(1, begun).GateAfter(partial, rest),
	)
	home := shortTempDir(t)
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, ""), TestHooks: true})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "one")
	rollout := str(unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id}))), "thread", "path")
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("two")})
	<-begun.Reached()
	waitFileContains(t, rollout, `"two"`)
	WantResult(t, c.Call("test/rolloutWrites", map[string]any{"fail": true}))
	begun.Open()
	<-rest.Reached()
	c.ReadUntil(isWarning("Failed to save the conversation transcript"))
	_ = d.Cmd.Process.Signal(syscall.SIGKILL)
	d.Wait()
	rest.Open()

	d2 := Start(t, Options{Home: home})
	c2 := d2.Stdio()
	c2.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c2.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	turns, _ := path(res, "thread", "turns").([]any)
	if len(turns) != 2 || str(turns[1], "status") != "interrupted" || str(turns[1], "items", 0, "content", 0, "text") != "two" {
		t.Fatalf("turns after a kill while full: %v", turns)
	}
}

// readOrFind returns the first of msgs (already read) that matches, else
// reads on until one does.
func readOrFind(c *Client, msgs []Message, pred func(Message) bool) Message {
	for _, m := range msgs {
		if pred(m) {
			return m
		}
	}
	return c.ReadUntil(pred)
}

// waitFileContains waits until the file at p contains s: another
// process's write, which nothing signals.
func waitFileContains(t *testing.T, p, s string) {
	t.Helper()
	for deadline := time.Now().Add(WaitTimeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			return
		}
	}
	t.Fatalf("%s never contained %s", p, s)
}

// A thread whose transcript nears the size past which it cannot be read
// back ([server] rollout_max_file_bytes) tells its clients, and tells them
// again once it is past it: the thread could not be resumed after that.
func TestTranscriptSizeWarnings(t *testing.T) {
	m := mockmodel.New(t)
	for i := range 6 {
		m.Enqueue(mockmodel.Reply(fmt.Sprintf("resp_%d", i), mockmodel.Text(fmt.Sprintf("msg_%d", i), strings.Repeat("answer ", 1000)), mockmodel.Completed(fmt.Sprintf("resp_%d", i), usage())))
	}
	d := Start(t, Options{ConfigTOML: mockConfig(m, ""), Config: []string{"server.rollout_max_file_bytes=32768"}})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	var warnings []string
	for range 6 {
		for _, msg := range runTurn(t, c, id, "go on") {
			if msg.Method == "warning" {
				p := unmarshal(t, msg.Params)
				if str(p, "threadId") != id {
					t.Fatalf("warning for another thread: %s", msg.Raw)
				}
				warnings = append(warnings, str(p, "message"))
			}
		}
	}
	near := regexp.MustCompile(`^This thread's transcript is (1[6-9]|2[0-9]|3[0-2])(\.[0-9])? KiB\. One over 32 KiB \(\[server\] rollout_max_file_bytes\) cannot be read back: past it, the thread could not be resumed once it is unloaded or agentd restarts\. Consider going on in a new thread\.$`)
	past := "This thread's transcript is over 32 KiB ([server] rollout_max_file_bytes) and cannot be read back: the thread cannot be resumed once it is unloaded or agentd restarts. Go on in a new thread."
	if len(warnings) != 2 || !near.MatchString(warnings[0]) || warnings[1] != past {
		t.Fatalf("warnings %q", warnings)
	}
}
