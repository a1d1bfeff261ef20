package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/test/proc"
)

// target is a server binary under load: agentd, or the reference.
type target struct {
	name string // "agentd" or "reference"
	bin  string
	ref  bool
	// root holds the target's homes and workspaces. The reference's is
	// outside /tmp (it warns about helper binaries under /tmp).
	root string
	// mockURL is the mock model's base URL.
	mockURL string
	// heapDir, when set, receives heap profiles (saveHeap): agentd runs
	// with --debug-pprof on a metrics address of its own.
	heapDir string
}

// daemon is one running server process.
type daemon struct {
	t       *target
	cmd     *exec.Cmd
	pid     int
	home    string
	cwd     string // the threads' working directory
	url     string // ws://127.0.0.1:PORT
	logPath string
	// metrics is the daemon's --metrics-listen address, when it has one.
	metrics string
	started time.Time
	exited  chan struct{}
	waitErr error
}

// newHome makes an empty home with the load config.toml: the mock model
// as provider, no approvals, no sandbox (commands run in the workspace, a
// directory of the run's own).
func (t *target) newHome(name string) (home, cwd string, err error) {
	home, err = os.MkdirTemp(t.root, name+"-")
	if err != nil {
		return "", "", err
	}
	cwd, err = t.configure(home)
	return home, cwd, err
}

// configure writes the target's config into home (the mock's URL) and
// makes its workspace, whose path it returns.
func (t *target) configure(home string) (cwd string, err error) {
	cwd = filepath.Join(home, "workspace")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		return "", err
	}
	cfg := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = %q
wire_api = "responses"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0
`, t.mockURL)
	return cwd, os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600)
}

// start runs the target on home (made by newHome) with a WebSocket
// listener on a free loopback port. It returns once the process runs; use
// dialReady to wait for the listener.
func (t *target) start(home string) (*daemon, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("ws://127.0.0.1:%d", port)
	var args []string
	if t.ref {
		args = []string{"app-server", "--listen", url}
	} else {
		// --max-connections: its default (1,024) is below the
		// connections scenario's sizes.
		args = []string{"serve", "--home", home, "--listen", url, "--log-level", "warn", "--max-connections", "1000000"}
	}
	var metrics string
	if t.heapDir != "" && !t.ref {
		mport, err := freePort()
		if err != nil {
			return nil, err
		}
		metrics = fmt.Sprintf("127.0.0.1:%d", mport)
		args = append(args, "--metrics-listen", metrics, "--debug-pprof")
	}
	cmd := exec.Command(t.bin, args...)
	cmd.Dir = filepath.Join(home, "workspace")
	cmd.Env = append(cleanEnv(), "CODEX_HOME="+home)
	logPath := filepath.Join(home, t.name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	// The daemon dies with the harness, whatever happens to the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d := &daemon{t: t, cmd: cmd, home: home, cwd: cmd.Dir, url: url, logPath: logPath, metrics: metrics, exited: make(chan struct{})}
	d.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %v", t.bin, err)
	}
	d.pid = cmd.Process.Pid
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// cleanEnv is the harness's environment without what would change the
// daemon's configuration behind the harness's back.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "OPENAI_API_KEY" || k == "CODEX_HOME" || strings.HasPrefix(k, "AGENTD_") || k == "RUST_LOG" ||
			k == "NOTIFY_SOCKET" || strings.HasPrefix(k, "LISTEN_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// dialReady connects to the daemon as soon as its listener accepts,
// polling every millisecond, and initializes the connection. It returns
// the client and the time from the process start to the initialize
// result.
func (d *daemon) dialReady(ctx context.Context, name string, opts clientOpts) (*client, time.Duration, error) {
	for {
		select {
		case <-d.exited:
			return nil, 0, d.exitError()
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("%s did not accept a connection: %v (log: %s)", d.t.name, ctx.Err(), d.logPath)
		default:
		}
		c, err := dial(ctx, d.url, name, opts)
		if err != nil {
			// Not listening yet: the next try soon, since the wait
			// counts in the start's figure.
			time.Sleep(200 * time.Microsecond)
			continue
		}
		if err := c.initialize(ctx); err != nil {
			c.close()
			return nil, 0, err
		}
		return c, time.Since(d.started), nil
	}
}

// saveHeap writes the daemon's heap profile (after a collection) to
// <heapDir>/<name>.pb.gz, its text form with the runtime's MemStats (stack
// and heap sizes) to <name>.txt, and the goroutines to
// <name>-goroutines.txt, and /proc/<pid>/status and smaps to
// <name>-status.txt and <name>-smaps.txt, when the harness was asked for
// profiles; read the
// first with `go tool pprof -sample_index=inuse_space bin/agentd FILE`.
func (d *daemon) saveHeap(ctx context.Context, name string) error {
	if d.metrics == "" {
		return nil
	}
	for _, p := range []struct{ query, file string }{
		{"heap?gc=1", name + ".pb.gz"},
		{"heap?debug=1", name + ".txt"},
		{"goroutine?debug=1", name + "-goroutines.txt"},
	} {
		if err := d.savePprof(ctx, p.query, filepath.Join(d.t.heapDir, p.file)); err != nil {
			return err
		}
	}
	// RssAnon against RssFile: the binary's pages that running code
	// brings in count in VmRSS too.
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.pid))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.t.heapDir, name+"-status.txt"), st, 0o644); err != nil {
		return err
	}
	sm, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", d.pid))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d.t.heapDir, name+"-smaps.txt"), sm, 0o644)
}

func (d *daemon) savePprof(ctx context.Context, query, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metrics+"/debug/pprof/"+query, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %v", query, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", query, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (d *daemon) exitError() error {
	return fmt.Errorf("%s exited: %v (log: %s)", d.t.name, d.waitErr, d.logPath)
}

// alive fails once the process has exited.
func (d *daemon) alive() error {
	select {
	case <-d.exited:
		return d.exitError()
	default:
		return nil
	}
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

// logHint returns the lines of the daemon's log that explain a closed
// connection or a crash, "" when there are none (or d is nil).
func (d *daemon) logHint() string {
	if d == nil {
		return ""
	}
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return ""
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, "not reading fast enough"):
			out = append(out, "a connection closed: client is not reading fast enough: outbound queue full")
		case strings.Contains(line, "panic"):
			out = append(out, strings.TrimSpace(line))
		}
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("(%d such lines)", len(out)))
	}
	return strings.Join(out, " | ")
}

// peakRSS is the daemon's peak resident memory so far (VmHWM), in bytes.
func (d *daemon) peakRSS() (int64, error) { return proc.StatusBytes(d.pid, "VmHWM") }

// settledRSS is the daemon's RSS once it has been idle for a moment: the
// smaller of two readings a second apart (freed memory is returned to the
// system lazily; a second is what the Go runtime's scavenger needs to start).
func (d *daemon) settledRSS() (int64, error) {
	m, err := d.minMemory(time.Second, time.Second)
	return m.rss, err
}

// memory is a reading of a daemon's resident memory: all of it (VmRSS),
// and its anonymous part (RssAnon: heap, stacks, the runtime's own; not
// the pages of the binary, nor of other files).
type memory struct{ rss, anon int64 }

func (d *daemon) memory() (memory, error) {
	rss, err := proc.StatusBytes(d.pid, "VmRSS")
	if err != nil {
		return memory{}, err
	}
	anon, err := proc.StatusBytes(d.pid, "RssAnon")
	return memory{rss: rss, anon: anon}, err
}

// minMemory is the smallest of the daemon's readings every step over
// span, for each of its two figures.
func (d *daemon) minMemory(span, step time.Duration) (memory, error) {
	low, err := d.memory()
	for t := step; err == nil && t <= span; t += step {
		time.Sleep(step)
		var m memory
		if m, err = d.memory(); err == nil {
			low = memory{rss: min(low.rss, m.rss), anon: min(low.anon, m.anon)}
		}
	}
	return low, err
}

// cpu is the CPU time (user + system) the daemon used so far, from
// /proc/<pid>/stat, in clock ticks of 10 ms.
func (d *daemon) cpu() (time.Duration, error) { return proc.CPU(d.pid) }

// selfCPU is the CPU time (user + system) this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// openFilesLimit is the daemon's soft RLIMIT_NOFILE, from /proc/<pid>/limits.
func (d *daemon) openFilesLimit() string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/limits", d.pid))
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Max open files"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				return fields[0]
			}
		}
	}
	return "?"
}

// raiseOpenFiles raises this process's RLIMIT_NOFILE so that it can hold
// want descriptors, raising the hard limit too when it is lower (root
// can). The daemons are children: they inherit it. Calling
// syscall.Setrlimit also stops os/exec from restoring the limit the
// process started with in its children (Go does that otherwise). It
// returns the soft limit now in effect.
func raiseOpenFiles(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Max < want {
		hard := lim
		hard.Max, hard.Cur = want, want
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &hard) == nil {
			return want, nil
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}
