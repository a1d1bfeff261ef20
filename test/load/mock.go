package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The mock model runs as its own process (this program with the argument
// "mock"), so that the daemon talks to it over real sockets and its work
// is not counted as the daemon's. It is test/mockmodel, answering each
// request from the directive in the turn's prompt:
//
//	agentd-load short                    one short message
//	agentd-load fanout n=D rate=R        D stamped deltas, R a second
//	agentd-load turn n=D cmd=1           D/2 deltas and an exec_command call,
//	                                     then (after the command) D-D/2 deltas;
//	                                     with cmd=0, D deltas and no command
//	agentd-load long items=M n=D rate=R  M messages of D/M deltas each, R a
//	                                     second (unpaced without rate)
//
// The directive is the last user message that starts with directivePrefix,
// so the same prompts drive agentd and the reference, whatever context
// either adds to the model's input.
const directivePrefix = "agentd-load "

// directive is a parsed prompt.
type directive struct {
	kind string
	args map[string]int
}

// prompt writes the directive of kind with its arguments.
func prompt(kind string, kv ...any) string {
	var b strings.Builder
	b.WriteString(directivePrefix + kind)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	return b.String()
}

func parseDirective(text string) (directive, error) {
	f := strings.Fields(strings.TrimPrefix(text, directivePrefix))
	if len(f) == 0 {
		return directive{}, fmt.Errorf("empty directive %q", text)
	}
	d := directive{kind: f[0], args: map[string]int{}}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return directive{}, fmt.Errorf("directive %q: bad argument %q", clipText(text), kv)
		}
		d.args[k] = n
	}
	return d, nil
}

func (d directive) arg(k string, def int) int {
	if v, ok := d.args[k]; ok {
		return v
	}
	return def
}

// loadTurn finds the request's directive and whether the turn's command
// has already run (a function_call_output after the prompt).
func loadTurn(r mockmodel.Request) (d directive, afterTool bool, err error) {
	at := -1
	var text string
	for i, it := range r.Input() {
		if it["type"] == "message" && it["role"] == "user" {
			for _, part := range contentTexts(it) {
				if strings.HasPrefix(part, directivePrefix) {
					at, text, afterTool = i, part, false
				}
			}
		}
		if at >= 0 && i > at && it["type"] == "function_call_output" {
			afterTool = true
		}
	}
	if at < 0 {
		return directive{}, false, fmt.Errorf("no %q prompt in the request", strings.TrimSpace(directivePrefix))
	}
	d, err = parseDirective(text)
	return d, afterTool, err
}

func contentTexts(it map[string]any) []string {
	parts, _ := it["content"].([]any)
	var out []string
	for _, p := range parts {
		if m, ok := p.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// responder answers every request from its directive. Ids are unique for
// the life of the mock, so no two items of any thread share one.
type responder struct {
	next atomic.Int64
}

func (rs *responder) respond(r mockmodel.Request) mockmodel.Response {
	d, afterTool, err := loadTurn(r)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mock: %v\n", err)
		return mockmodel.Status(400, fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error"}}`, err.Error()))
	}
	n := rs.next.Add(1)
	id := func(kind string, i int) string { return fmt.Sprintf("%s_%d_%d", kind, n, i) }
	resp := "resp_" + strconv.FormatInt(n, 10)
	switch d.kind {
	case "short":
		return mockmodel.Reply(resp, mockmodel.Text(id("msg", 0), "Done, nothing else to do."))
	case "fanout":
		rate := max(d.arg("rate", 100), 1)
		return mockmodel.Reply(resp, mockmodel.StampedText(id("msg", 0), max(d.arg("n", 100), 1))).Pace(time.Second / time.Duration(rate))
	case "turn":
		total := max(d.arg("n", 200), 2)
		if d.arg("cmd", 1) == 0 {
			return mockmodel.Reply(resp, words(id("msg", 0), total/2), words(id("msg", 1), total-total/2))
		}
		if afterTool {
			return mockmodel.Reply(resp, words(id("msg", 1), total-total/2))
		}
		// A plain shell: a login shell's profile scripts (a third of a
		// second on the machine this was written on) would be the figure.
		return mockmodel.Reply(resp, words(id("msg", 0), total/2),
			mockmodel.FunctionCall(id("call", 0), "exec_command", `{"cmd":"echo load-ok","login":false}`))
	case "long":
		items, total := max(d.arg("items", 10), 1), max(d.arg("n", 1000), 1)
		parts := make([]mockmodel.Events, items)
		for i := range items {
			parts[i] = words(id("msg", i), max(total/items, 1))
		}
		r := mockmodel.Reply(resp, parts...)
		if rate := d.arg("rate", 0); rate > 0 {
			r = r.Pace(time.Second / time.Duration(rate))
		}
		return r
	}
	fmt.Fprintf(os.Stderr, "mock: unknown directive %q\n", d.kind)
	return mockmodel.Status(400, `{"error":{"message":"unknown load directive","type":"invalid_request_error"}}`)
}

// words is a message of n deltas, a word each.
func words(itemID string, n int) mockmodel.Events {
	return mockmodel.TextN(itemID, strings.Repeat("word ", n), n)
}

// runMock serves the mock model on a loopback port until stdin closes
// (the harness ended) or a signal arrives. Its first line on stdout is the
// base URL to configure.
func runMock() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "mock: %v\n", err)
		return 1
	}
	var failures atomic.Int64
	rs := &responder{}
	s := mockmodel.Serve(l, func(format string, args ...any) {
		failures.Add(1)
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}, mockmodel.DropRequests(), mockmodel.Respond(rs.respond))
	fmt.Println(s.URL())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(eof)
	}()
	select {
	case <-stop:
	case <-eof:
	}
	s.Close()
	if failures.Load() > 0 {
		return 1
	}
	return 0
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
