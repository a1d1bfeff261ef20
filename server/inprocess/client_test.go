package inprocess

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentd-dev/agentd/core/coretest"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/schema/refschema"
	"github.com/agentd-dev/agentd/server/config"
)

// waitTimeout bounds every wait for something that should happen.
const waitTimeout = 10 * time.Second

// TestMain serves the sandbox helper: sandboxed commands re-execute the
// test binary. The commands get a HOME of their own, so that a login
// shell does not read the machine's dotfiles.
func TestMain(m *testing.M) {
	RunSandboxHelper()
	os.Exit(coretest.RunWithTempHome(m))
}

func start(t *testing.T) (*Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	t.Cleanup(cancel)
	// The built-in offline demo model, selected explicitly (the default
	// provider is openai).
	cfg, err := config.Load(config.Options{Home: t.TempDir(), Overrides: []string{`model_provider="demo"`}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, cfg, zaptest.NewLogger(t), Options{ClientInfo: ClientInfo{Name: "inprocess-test", Version: "1.0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

// nextEvent returns the next event matching pred, checking every event
// against the reference schema on the way.
func nextEvent(t *testing.T, c *Client, pred func(Event) bool) Event {
	t.Helper()
	v := refschema.Validator(t)
	timeout := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatalf("events ended: %v", c.Err())
			}
			var err error
			if ev.Request != nil {
				err = v.ValidateServerRequest(ev.Method, ev.Raw)
			} else if v.Has("ServerNotification", ev.Method) {
				err = v.ValidateNotification(ev.Method, ev.Raw)
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", ev.Method, err, ev.Raw)
			}
			if pred(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("timed out waiting for an event")
		}
	}
}

func method(m string) func(Event) bool { return func(ev Event) bool { return ev.Method == m } }

func startThread(t *testing.T, c *Client, ctx context.Context, cwd string) string {
	t.Helper()
	var ts protocol.ThreadStartResponse
	if err := c.Request(ctx, "thread/start", map[string]any{"cwd": cwd}, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Thread.ID
}

func textInput(s string) []map[string]any {
	return []map[string]any{{"type": "text", "text": s, "text_elements": []any{}}}
}

// A whole turn against the built-in demo model, over the in-process
// connection.
func TestFullTurn(t *testing.T) {
	c, ctx := start(t)
	if got := c.Initialize(); !strings.HasPrefix(got.UserAgent, "inprocess-test/") || got.CodexHome == "" {
		t.Fatalf("initialize: %+v", got)
	}
	thread := startThread(t, c, ctx, t.TempDir())
	var tr protocol.TurnStartResponse
	if err := c.Request(ctx, "turn/start", map[string]any{"threadId": thread, "input": textInput("hello there")}, &tr); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var message string
	done := nextEvent(t, c, func(ev Event) bool {
		switch ev.Method {
		case "item/agentMessage/delta":
			var d struct{ Delta string }
			_ = json.Unmarshal(ev.Params, &d)
			text.WriteString(d.Delta)
		case "item/completed":
			var ic struct {
				Item struct{ Type, Text string }
			}
			_ = json.Unmarshal(ev.Params, &ic)
			if ic.Item.Type == "agentMessage" {
				message = ic.Item.Text
			}
		}
		return ev.Method == "turn/completed"
	})
	var tc struct {
		Turn struct{ ID, Status string }
	}
	if err := json.Unmarshal(done.Params, &tc); err != nil {
		t.Fatal(err)
	}
	if tc.Turn.ID != tr.Turn.ID || tc.Turn.Status != "completed" {
		t.Fatalf("turn/completed %s", done.Raw)
	}
	if message == "" || message != text.String() || !strings.Contains(message, "hello there") {
		t.Fatalf("message %q, deltas %q", message, text.String())
	}
}

// A server request (a command approval) reaches the client as an event
// and its answer reaches the turn.
func TestServerRequest(t *testing.T) {
	c, ctx := start(t)
	dir := t.TempDir()
	thread := startThread(t, c, ctx, dir)
	target := filepath.Join(dir, "made-by-turn")
	if err := c.Request(ctx, "turn/start", map[string]any{
		"threadId": thread, "input": textInput("run: touch " + target),
		"approvalPolicy": "untrusted", "sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
	}, nil); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, c, method("item/commandExecution/requestApproval"))
	if ev.Request == nil {
		t.Fatalf("approval without a request id: %s", ev.Raw)
	}
	if err := ev.Request.Respond(ctx, map[string]any{"decision": "accept"}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, c, method("serverRequest/resolved"))
	nextEvent(t, c, method("turn/completed"))
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
}

// Errors come back as *protocol.Error; utility methods work too.
func TestRequests(t *testing.T) {
	c, ctx := start(t)
	err := c.Request(ctx, "command/exec", map[string]any{"command": []string{}}, nil)
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeInvalidRequest || perr.Message != "command must not be empty" {
		t.Fatalf("got %v", err)
	}
	err = c.Request(ctx, "no/such", nil, nil)
	if !errors.As(err, &perr) || !strings.Contains(perr.Message, "unknown variant `no/such`") {
		t.Fatalf("unknown method: %v", err)
	}
	var r struct {
		ExitCode int
		Stdout   string
	}
	if err := c.Request(ctx, "command/exec", map[string]any{
		"command": []string{"echo", "in-process"}, "sandboxPolicy": map[string]any{"type": "dangerFullAccess"},
	}, &r); err != nil || r.ExitCode != 0 || r.Stdout != "in-process\n" {
		t.Fatalf("command/exec: %+v %v", r, err)
	}
	// A request whose context ends returns at once; the connection
	// stays usable.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Request(short, "command/exec", map[string]any{"command": []string{"true"}}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	if err := c.Request(ctx, "config/read", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// After Close, requests fail and the event channel is closed.
func TestClose(t *testing.T) {
	c, ctx := start(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Request(ctx, "config/read", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	select {
	case _, ok := <-c.Events():
		if ok {
			// Events queued before the close may still come; the
			// channel must close after them.
			for range c.Events() {
			}
		}
	case <-time.After(waitTimeout):
		t.Fatal("events channel not closed")
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}
