package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/test/proc"
)

// This file is the benchmarks' client: leaner than Client, because in a
// benchmark the test process shares the machine with agentd. Deltas are
// handled on the reader goroutine (text joined, count, arrival times);
// every other message goes to a channel for the benchmark to wait on.

// deltaPrefix starts every item/agentMessage/delta notification (the
// server writes "method" first).
var deltaPrefix = []byte(`{"method":"item/agentMessage/delta",`)

// benchMsg is a message other than a delta, decoded.
type benchMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	raw    []byte
}

// benchClient speaks to agentd over stdio or WebSocket.
type benchClient struct {
	b      *testing.B
	name   string
	write  func([]byte) error
	ctrl   chan benchMsg
	ended  chan struct{}
	endErr error
	nextID int

	// Owned by the reader until a message after the deltas (turn/completed)
	// is received from ctrl.
	text    strings.Builder
	deltas  int     // notifications received
	stamps  bool    // parse "t=<unixnano>;" stamps in deltas
	latency []int64 // ns, one per stamp, when stamps is set
	bad     error   // first malformed delta
}

func newBenchClient(b *testing.B, name string, stamps bool) *benchClient {
	return &benchClient{b: b, name: name, ctrl: make(chan benchMsg, 1024), ended: make(chan struct{}), stamps: stamps}
}

// benchStdio reads the daemon's stdout. The harness's Client must not be
// used on the same daemon.
func benchStdio(b *testing.B, d *Daemon, stamps bool) *benchClient {
	c := newBenchClient(b, "stdio", stamps)
	c.write = func(p []byte) error {
		_, err := d.stdin.Write(append(p, '\n'))
		return err
	}
	go c.readLines(d.stdout)
	return c
}

// readLines handles each newline-terminated message read from r until it
// ends.
func (c *benchClient) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A message longer than the buffer: gather it.
			full := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			c.handle(line[:len(line)-1], time.Now())
		}
		if err != nil {
			c.finish(err)
			return
		}
	}
}

// benchWS dials the daemon's WebSocket listener.
func benchWS(b *testing.B, d *Daemon, name string) *benchClient {
	return dialBenchWS(b, d.URL("ws"), name)
}

// dialBenchWS connects a benchClient to the WebSocket at url.
func dialBenchWS(b *testing.B, url, name string) *benchClient {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		b.Fatalf("dial: %v", err)
	}
	conn.SetReadLimit(1 << 30)
	b.Cleanup(func() { _ = conn.CloseNow() })
	c := newBenchClient(b, name, false)
	c.write = func(p []byte) error { return conn.Write(context.Background(), websocket.MessageText, p) }
	go func() {
		var buf bytes.Buffer
		for {
			_, r, err := conn.Reader(context.Background())
			if err == nil {
				buf.Reset()
				_, err = buf.ReadFrom(r)
			}
			if err != nil {
				c.finish(err)
				return
			}
			c.handle(buf.Bytes(), time.Now())
		}
	}()
	return c
}

func (c *benchClient) finish(err error) {
	if err == nil {
		err = io.EOF
	}
	c.endErr = err
	close(c.ended)
}

// handle runs on the reader goroutine; msg is only valid during the call.
func (c *benchClient) handle(msg []byte, at time.Time) {
	if bytes.HasPrefix(msg, deltaPrefix) {
		delta, err := deltaText(msg)
		if err != nil {
			if c.bad == nil {
				c.bad = fmt.Errorf("bad delta %q: %v", msg, err)
			}
			return
		}
		c.deltas++
		c.text.Write(delta)
		if c.stamps {
			c.parseStamps(string(delta), at)
		}
		return
	}
	m := benchMsg{raw: append([]byte(nil), msg...)}
	if err := json.Unmarshal(m.raw, &m); err != nil {
		c.b.Errorf("%s: invalid JSON %q: %v", c.name, msg, err)
		return
	}
	c.ctrl <- m
}

// deltaKey is the delta member as the server writes it. It cannot occur
// inside a string value, where every quote is escaped.
var deltaKey = []byte(`"delta":"`)

// deltaText returns the decoded "delta" of a delta notification without
// decoding the rest, so that 50 clients reading a million notifications
// leave the CPU to agentd.
func deltaText(msg []byte) ([]byte, error) {
	i := bytes.Index(msg, deltaKey)
	if i < 0 {
		return nil, errors.New("no delta member")
	}
	start := i + len(deltaKey)
	escaped := false
	for j := start; j < len(msg); j++ {
		switch msg[j] {
		case '\\':
			escaped = true
			j++ // skip the escaped character
		case '"':
			if !escaped {
				return msg[start:j], nil
			}
			var s string
			if err := json.Unmarshal(msg[start-1:j+1], &s); err != nil {
				return nil, err
			}
			return []byte(s), nil
		}
	}
	return nil, errors.New("unterminated delta")
}

// parseStamps records the latency of each "t=<unixnano>;" in a delta (one,
// or several when the server coalesced deltas).
func (c *benchClient) parseStamps(delta string, at time.Time) {
	now := at.UnixNano()
	for _, part := range strings.Split(delta, ";") {
		if part == "" {
			continue
		}
		ns, err := strconv.ParseInt(strings.TrimPrefix(part, "t="), 10, 64)
		if err != nil || !strings.HasPrefix(part, "t=") {
			if c.bad == nil {
				c.bad = fmt.Errorf("bad stamp %q in delta %q", part, delta)
			}
			continue
		}
		c.latency = append(c.latency, now-ns)
	}
}

// send writes one message.
func (c *benchClient) send(v any) {
	p, err := json.Marshal(v)
	if err != nil {
		c.b.Fatal(err)
	}
	if err := c.write(p); err != nil {
		c.b.Fatalf("%s: write: %v", c.name, err)
	}
}

// request sends a request and returns its id.
func (c *benchClient) request(method string, params any) string {
	c.nextID++
	id := strconv.Itoa(c.nextID)
	c.send(map[string]any{"id": json.RawMessage(id), "method": method, "params": params})
	return id
}

// until waits (WaitTimeout) for a non-delta message matching pred; the
// ones before it are dropped.
func (c *benchClient) until(pred func(benchMsg) bool) benchMsg {
	return c.untilTimeout(pred, WaitTimeout)
}

// turnTimeout bounds a benchmark turn: a turn of 20,000 deltas to 50
// clients on a loaded 2-core machine takes far longer than WaitTimeout.
const turnTimeout = 5 * time.Minute

func (c *benchClient) untilTimeout(pred func(benchMsg) bool, d time.Duration) benchMsg {
	timeout := time.After(d)
	for {
		select {
		case m := <-c.ctrl:
			if pred(m) {
				return m
			}
		case <-c.ended:
			c.b.Fatalf("%s: connection ended while waiting: %v", c.name, c.endErr)
		case <-timeout:
			c.b.Fatalf("%s: timed out waiting for a message", c.name)
		}
	}
}

// call sends a request and returns its result, failing on an error.
func (c *benchClient) call(method string, params any) json.RawMessage {
	id := c.request(method, params)
	m := c.until(func(m benchMsg) bool { return m.Method == "" && string(m.ID) == id })
	if m.Error != nil || m.Result == nil {
		c.b.Fatalf("%s: %s failed: %s", c.name, method, m.raw)
	}
	return m.Result
}

func (c *benchClient) initialize() {
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "bench-" + c.name, "version": "0.0.1"}})
	c.send(map[string]any{"method": "initialized"})
}

// startThread runs thread/start in cwd and returns the thread id.
func (c *benchClient) startThread(cwd string) string {
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(c.call("thread/start", map[string]any{"cwd": cwd}), &r); err != nil || r.Thread.ID == "" {
		c.b.Fatalf("thread/start: %v", err)
	}
	return r.Thread.ID
}

// turnCompleted waits for turn/completed and returns its turn status and
// the text of its agent message (the summary's last item).
func (c *benchClient) turnCompleted() (status, text string) {
	m := c.untilTimeout(func(m benchMsg) bool { return m.Method == "turn/completed" }, turnTimeout)
	var p struct {
		Turn struct {
			Status string `json:"status"`
			Items  []struct {
				Text string `json:"text"`
			} `json:"items"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		c.b.Fatalf("turn/completed: %v", err)
	}
	if n := len(p.Turn.Items); n > 0 {
		text = p.Turn.Items[n-1].Text
	}
	return p.Turn.Status, text
}

// checkText fails unless the joined deltas are want and none was
// malformed. Call it after turnCompleted.
func (c *benchClient) checkText(want string) {
	if c.bad != nil {
		c.b.Fatalf("%s: %v", c.name, c.bad)
	}
	if got := c.text.String(); got != want {
		c.b.Fatalf("%s: joined deltas (%d bytes in %d notifications) differ from the model's text (%d bytes)", c.name, len(got), c.deltas, len(want))
	}
}

// procPeakRSS returns the peak resident memory (bytes) of process pid so
// far: VmHWM in /proc/<pid>/status. (The rusage of the exited process is
// no use here: Linux folds the parent's peak in, as the child shared the
// test process's memory until it ran exec.)
func procPeakRSS(pid int) (int64, error) { return proc.StatusBytes(pid, "VmHWM") }

// procRSS returns the resident memory (bytes) of process pid now.
func procRSS(pid int) (int64, error) { return proc.StatusBytes(pid, "VmRSS") }

// exitUsage stops the daemon (EOF on stdio, else SIGTERM), waits for it
// to exit and returns the CPU time (user+sys) of its whole life.
func exitUsage(b *testing.B, d *Daemon, stdio bool) time.Duration {
	if stdio {
		d.CloseStdin()
	} else {
		d.Signal(syscall.SIGTERM)
	}
	if code := d.Wait(); code != 0 {
		b.Fatalf("agentd exited with %d", code)
	}
	ru, ok := d.Cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no rusage")
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchConfig is a config.toml pointing agentd at a Responses server at
// url, without retries.
func benchConfig(url string) string {
	return fmt.Sprintf(`model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, url)
}
