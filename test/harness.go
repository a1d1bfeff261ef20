// Package test holds agentd's end-to-end tests and their harness: the
// agentd binary, built once per run (TestMain), driven over stdio,
// WebSocket and Unix sockets by clients that keep every message they
// skipped, in order.
package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Timeouts. Waiting is generous so that a loaded 2-core machine does not
// fail tests; "nothing arrives" windows are short.
const (
	// WaitTimeout bounds every wait for something that should happen.
	WaitTimeout = 10 * time.Second
	// QuietWindow is how long AssertNoMessage watches.
	QuietWindow = 250 * time.Millisecond
)

var binary string

// BuildAgentd builds cmd/agentd into dir and returns the binary's path.
// TestMain calls it once; SetBinary records the result.
func BuildAgentd(dir string) (string, error) {
	out := filepath.Join(dir, "agentd")
	cmd := exec.Command("go", "build", "-o", out, "github.com/agentd-dev/agentd/cmd/agentd")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building agentd: %v\n%s", err, stderr.String())
	}
	return out, nil
}

// BuildMCPServer builds the test MCP server (test/mcpserver) into dir and
// returns its path.
func BuildMCPServer(dir string) (string, error) {
	out := filepath.Join(dir, "mcpserver")
	cmd := exec.Command("go", "build", "-o", out, "github.com/agentd-dev/agentd/test/mcpserver")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the test MCP server: %v\n%s", err, stderr.String())
	}
	return out, nil
}

var mcpServerBinary string

// MCPServer returns the test MCP server built by TestMain.
func MCPServer() string { return mcpServerBinary }

// SetBinary records the binary the harness starts.
func SetBinary(path string) { binary = path }

// Binary returns the binary built by TestMain.
func Binary() string { return binary }

// Options say how to start the daemon.
type Options struct {
	// Listen URLs; default stdio://.
	Listen []string
	// Home directory; default a new temporary one.
	Home string
	// Config holds --config key=value overrides.
	Config []string
	// ConfigTOML, when set, is written to <home>/config.toml.
	ConfigTOML string
	// Env adds environment variables ("K=V").
	Env []string
	// TestHooks registers test/sleep, test/emit, test/call and test/stall.
	TestHooks bool
	// Command is the subcommand (default "serve").
	Command string
	// Args are more arguments, after the harness's own.
	Args []string
	// NoWait skips waiting for the listeners to be logged (for tests of
	// startup failures).
	NoWait bool
	// Activate passes these listening sockets as systemd does (fds 3…,
	// LISTEN_FDS, LISTEN_PID of the daemon itself, LISTEN_FDNAMES from
	// ActivateNames), instead of any --listen.
	Activate      []*os.File
	ActivateNames []string
}

// Daemon is a running agentd process.
type Daemon struct {
	t    testing.TB
	Cmd  *exec.Cmd
	Home string

	stdin  io.WriteCloser
	stdout io.ReadCloser
	logs   *logSink

	exited  chan struct{}
	exitErr error
	urls    []string
}

// Start starts agentd with JSON debug logs on stderr and waits until every
// listener is bound. The process is killed at the end of the test if it is
// still running.
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	if binary == "" {
		t.Fatal("agentd binary not built: TestMain must call BuildAgentd and SetBinary")
	}
	if o.Home == "" {
		o.Home = shortTempDir(t)
	}
	if o.ConfigTOML != "" {
		if err := os.WriteFile(filepath.Join(o.Home, "config.toml"), []byte(o.ConfigTOML), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if len(o.Listen) == 0 && len(o.Activate) == 0 {
		o.Listen = []string{"stdio://"}
	}
	if o.Command == "" {
		o.Command = "serve"
	}
	args := []string{o.Command, "--home", o.Home, "--log-format", "json", "--log-level", "debug"}
	for _, l := range o.Listen {
		args = append(args, "--listen", l)
	}
	for _, c := range o.Config {
		args = append(args, "--config", c)
	}
	args = append(args, o.Args...)
	// The daemon and the commands it runs get a HOME of their own: a login
	// shell must not read the machine's dotfiles (a stale pyenv rehash lock
	// there hung every command), and nothing may write into the real home.
	// o.Env may set another HOME: the last value wins.
	env := append(filteredEnv(), "HOME="+shortTempDir(t))
	cmd := exec.Command(binary, args...)
	cmd.Env = append(env, o.Env...)
	if len(o.Activate) > 0 {
		// LISTEN_PID must be the daemon's own pid: a shell learns its
		// pid, then becomes the daemon.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, binary}, args...)...)
		cmd.Env = append(env, o.Env...)
		cmd.Env = append(cmd.Env, fmt.Sprintf("LISTEN_FDS=%d", len(o.Activate)), "LISTEN_FDNAMES="+strings.Join(o.ActivateNames, ":"))
		cmd.ExtraFiles = o.Activate
	}
	if o.TestHooks {
		cmd.Env = append(cmd.Env, "AGENTD_TEST_HOOKS=1")
	}
	d := &Daemon{t: t, Cmd: cmd, Home: o.Home, logs: newLogSink(), exited: make(chan struct{})}
	var err error
	if d.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// Our own pipe, not StdoutPipe: cmd.Wait closes the reading end of
	// that one as soon as the process exits, which races with a client
	// still reading the last answers.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = stdoutW
	d.stdout = stdoutR
	t.Cleanup(func() { _ = stdoutR.Close() })
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	_ = stdoutW.Close() // the child has its copy
	if err != nil {
		t.Fatal(err)
	}
	stderrDone := make(chan struct{})
	go func() {
		d.logs.consume(stderr)
		close(stderrDone)
	}()
	go func() {
		<-stderrDone
		d.exitErr = cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("agentd stderr:\n%s", d.logs.text())
		}
	})
	if o.NoWait {
		return d
	}
	for i := range len(o.Listen) + len(o.Activate) {
		line := d.WaitLog(func(l LogLine) bool {
			return strings.HasPrefix(l.Msg, "listening on ") && !d.known(l.Str("url"))
		})
		d.urls = append(d.urls, line.Str("url"))
		_ = i
	}
	return d
}

func (d *Daemon) known(url string) bool {
	for _, u := range d.urls {
		if u == url {
			return true
		}
	}
	return false
}

// filteredEnv is the environment without variables that would change the
// daemon's configuration behind a test's back.
func filteredEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENAI_API_KEY=") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "AGENTD_") || strings.HasPrefix(kv, "CODEX_HOME=") ||
			strings.HasPrefix(kv, "NOTIFY_SOCKET=") || strings.HasPrefix(kv, "LISTEN_") || strings.HasPrefix(kv, "WATCHDOG_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// shortTempDir makes a temporary directory with a short path (Unix socket
// paths are limited to 107 bytes), removed at the end of the test.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// URL returns the bound URL of the listener whose scheme is scheme ("ws",
// "unix", "stdio").
func (d *Daemon) URL(scheme string) string {
	d.t.Helper()
	for _, u := range d.urls {
		if strings.HasPrefix(u, scheme+"://") {
			return u
		}
	}
	d.t.Fatalf("no %s listener among %v", scheme, d.urls)
	return ""
}

// WSAddr returns host:port of the WebSocket listener.
func (d *Daemon) WSAddr() string { return strings.TrimPrefix(d.URL("ws"), "ws://") }

// UnixPath returns the Unix socket path.
func (d *Daemon) UnixPath() string { return strings.TrimPrefix(d.URL("unix"), "unix://") }

// Signal sends sig to the process.
func (d *Daemon) Signal(sig os.Signal) {
	d.t.Helper()
	if err := d.Cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signal: %v", err)
	}
}

// CloseStdin closes the daemon's stdin (EOF for the stdio transport).
func (d *Daemon) CloseStdin() { _ = d.stdin.Close() }

// Wait waits for the process to exit and returns its exit code.
func (d *Daemon) Wait() int {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(WaitTimeout):
		d.t.Fatalf("agentd did not exit within %v", WaitTimeout)
	}
	var ee *exec.ExitError
	if errors.As(d.exitErr, &ee) {
		return ee.ExitCode()
	}
	if d.exitErr != nil {
		d.t.Fatalf("wait: %v", d.exitErr)
	}
	return 0
}

// Exited reports whether the process has exited.
func (d *Daemon) Exited() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// Stderr returns everything the daemon logged so far.
func (d *Daemon) Stderr() string { return d.logs.text() }

// WaitLog waits for a log line matching pred (earlier lines count).
func (d *Daemon) WaitLog(pred func(LogLine) bool) LogLine {
	d.t.Helper()
	l, ok := d.logs.wait(pred, WaitTimeout, d.exited)
	if !ok {
		d.t.Fatalf("no matching log line within %v; stderr:\n%s", WaitTimeout, d.logs.text())
	}
	return l
}

// HasLog reports whether a log line so far matches pred.
func (d *Daemon) HasLog(pred func(LogLine) bool) bool {
	_, ok := d.logs.wait(pred, 0, nil)
	return ok
}

// LogMsg matches log lines whose message contains s.
func LogMsg(s string) func(LogLine) bool {
	return func(l LogLine) bool { return strings.Contains(l.Msg, s) }
}

// Stdio returns a client over the daemon's stdin and stdout.
func (d *Daemon) Stdio() *Client {
	d.t.Helper()
	c := newClient(d.t, "stdio")
	w := d.stdin
	var mu sync.Mutex
	c.write = func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := w.Write(b)
		return err
	}
	c.close = func() error { return w.Close() }
	go c.readLines(d.stdout)
	return c
}

// HTTPGet makes a GET request to the WebSocket listener and returns the
// status. Header "Host" sets the Host header.
func (d *Daemon) HTTPGet(path string, header map[string]string) int {
	d.t.Helper()
	req, err := http.NewRequest("GET", "http://"+d.WSAddr()+path, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// LogLine is one JSON log line of the daemon.
type LogLine struct {
	Raw    string
	Level  string
	Msg    string
	Fields map[string]any
}

// Str returns a string field.
func (l LogLine) Str(k string) string {
	s, _ := l.Fields[k].(string)
	return s
}

// logSink collects the daemon's stderr, one parsed line at a time.
type logSink struct {
	mu      sync.Mutex
	lines   []LogLine
	changed chan struct{}
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

func (s *logSink) consume(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			l := LogLine{Raw: strings.TrimRight(line, "\n")}
			if json.Unmarshal([]byte(l.Raw), &l.Fields) == nil {
				l.Level, _ = l.Fields["level"].(string)
				l.Msg, _ = l.Fields["msg"].(string)
			} else {
				l.Msg = l.Raw
			}
			s.mu.Lock()
			s.lines = append(s.lines, l)
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (s *logSink) wait(pred func(LogLine) bool, timeout time.Duration, exited <-chan struct{}) (LogLine, bool) {
	deadline := time.After(timeout)
	seen := 0
	final := false
	for {
		s.mu.Lock()
		for ; seen < len(s.lines); seen++ {
			if pred(s.lines[seen]) {
				l := s.lines[seen]
				s.mu.Unlock()
				return l, true
			}
		}
		changed := s.changed
		s.mu.Unlock()
		if timeout == 0 || final {
			return LogLine{}, false
		}
		select {
		case <-changed:
		case <-deadline:
			return LogLine{}, false
		case <-exited:
			// stderr is fully read before exited closes: one last scan.
			final = true
		}
	}
}

func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.lines {
		b.WriteString(l.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// dialerWithReceiveBuffer returns a dialer whose sockets have a fixed
// small receive buffer (no autotuning), so a client that stops reading
// fills up quickly.
func dialerWithReceiveBuffer(bytes int) *net.Dialer {
	return &net.Dialer{Control: func(network, address string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, bytes)
		})
		if err != nil {
			return err
		}
		return serr
	}}
}
