package test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/test/proc"
)

// sdUnits are the shipped system units installed into a real manager.
type sdUnits struct {
	m       *sdManager
	bin     string // the agentd binary the units run
	token   string
	port    int
	sock    string // the socket unit's Unix socket
	work    string // ReadWritePaths=, the workspace
	log     string // agentd's stderr
	uid     int    // User=
	service string
}

// installSDUnits installs docs/systemd/agentd.service and agentd.socket
// into the manager, changed only where a test must: the paths (binary,
// token, workspace, Unix socket), the TCP port, and User=/Group= (nobody:
// the agentd user does not exist here). A drop-in, which changes no
// hardening, sends agentd's log to a file (there is no journal), enables
// the test hooks (test/stall) and shortens the watchdog to 4 s.
func installSDUnits(t *testing.T, m *sdManager) *sdUnits {
	t.Helper()
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to run the service as: %v", err)
	}
	group, err := user.LookupGroupId(nobody.Gid)
	if err != nil {
		t.Skipf("no group for nobody: %v", err)
	}
	u := &sdUnits{m: m, bin: filepath.Join(m.base, "agentd"), work: filepath.Join(m.base, "work"),
		sock: filepath.Join(m.base, "run", "agentd.sock"), log: filepath.Join(m.base, "agentd.log"), service: "agentd.service"}
	u.uid, _ = strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	copyExecutable(t, Binary(), u.bin)
	u.token = randomHex(t)
	tokenFile := filepath.Join(m.base, "ws-token")
	if err := os.WriteFile(tokenFile, []byte(u.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(u.work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tokenFile, u.work} {
		if err := os.Chown(p, u.uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	u.port = freePort(t)

	writeUnit(t, m.units, "agentd.service", readUnit(t, "agentd.service",
		"User=agentd", "User="+nobody.Username,
		"Group=agentd", "Group="+group.Name,
		"EnvironmentFile=-/etc/agentd/env", "EnvironmentFile=-"+filepath.Join(m.base, "env"),
		"/usr/local/bin/agentd", u.bin,
		"--ws-token-file /etc/agentd/ws-token", "--ws-token-file "+tokenFile,
		"ReadWritePaths=/srv/agentd-work", "ReadWritePaths="+u.work))
	writeUnit(t, m.units, "agentd.socket", readUnit(t, "agentd.socket",
		"ListenStream=127.0.0.1:4500", fmt.Sprintf("ListenStream=127.0.0.1:%d", u.port),
		"ListenStream=/run/agentd/agentd.sock", "ListenStream="+u.sock,
		"SocketUser=agentd", "SocketUser="+nobody.Username,
		"SocketGroup=agentd", "SocketGroup="+group.Name))
	dropIn := filepath.Join(m.units, "agentd.service.d")
	if err := os.Mkdir(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	writeUnit(t, dropIn, "test.conf", fmt.Sprintf("[Service]\nStandardError=append:%s\nEnvironment=AGENTD_TEST_HOOKS=1\nWatchdogSec=4s\n", u.log))
	m.mustSystemctl("daemon-reload")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(u.log)
			t.Logf("agentd log:\n%s", b)
		}
	})

	// AGENTD_HOME is the unit's StateDirectory (%S/agentd): ask the
	// manager where that is, and put the configuration there.
	home := u.agentdHome()
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, home, "")
	if err := os.Chown(home, u.uid, gid); err != nil {
		t.Fatal(err)
	}
	return u
}

// agentdHome returns AGENTD_HOME from the service's environment. It must
// lie in the manager's tree (the unit's StateDirectory is there): the
// test writes config.toml into it, and must never write into a real
// installation's home.
func (u *sdUnits) agentdHome() string {
	u.m.t.Helper()
	for _, kv := range strings.Fields(u.m.prop(u.service, "Environment")) {
		if v, ok := strings.CutPrefix(kv, "AGENTD_HOME="); ok {
			if !strings.HasPrefix(v, u.m.base+"/") {
				u.m.t.Fatalf("agentd.service's AGENTD_HOME %s is not its StateDirectory (%%S/agentd)", v)
			}
			return v
		}
	}
	u.m.t.Fatal("agentd.service sets no AGENTD_HOME")
	return ""
}

// writeConfig writes config.toml: the offline demo model, commands
// sandboxed (workspace-write) and never asked about.
func writeConfig(t *testing.T, home, extra string) {
	t.Helper()
	cfg := "model_provider = \"demo\"\nsandbox_mode = \"workspace-write\"\napproval_policy = \"never\"\n" + extra
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dialWSToken connects over the socket unit's TCP socket with the token.
func (u *sdUnits) dialWSToken(name string) *Client {
	u.m.t.Helper()
	return dialWS(u.m.t, name, fmt.Sprintf("ws://127.0.0.1:%d", u.port), nil, http.Header{"Authorization": {"Bearer " + u.token}})
}

// dialUnix connects over the socket unit's Unix socket.
func (u *sdUnits) dialUnix(name string) *Client {
	u.m.t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", u.sock)
	}}}
	return dialWS(u.m.t, name, "ws://localhost/", hc, nil)
}

// mainPID returns the service's main process.
func (u *sdUnits) mainPID() int {
	u.m.t.Helper()
	pid, err := strconv.Atoi(u.m.prop(u.service, "MainPID"))
	if err != nil || pid == 0 {
		u.m.t.Fatalf("agentd.service has no main process (%q)", u.m.prop(u.service, "MainPID"))
	}
	return pid
}

// runCommand runs one turn whose command the demo model runs (through
// exec_command, in agentd's sandbox) and returns the command's item.
func runCommand(t *testing.T, c *Client, threadID, command string) map[string]any {
	t.Helper()
	msgs := runTurn(t, c, threadID, "run: "+command)
	for _, msg := range msgs {
		if msg.Method != "item/completed" {
			continue
		}
		if item, _ := path(unmarshal(t, msg.Params), "item").(map[string]any); str(item, "type") == "commandExecution" {
			return item
		}
	}
	t.Fatalf("no command ran: %v", methods(msgs))
	return nil
}

// A real systemd manager runs the shipped units (sandboxing directives
// applied, not ignored): socket activation starts agentd on the first
// connection and READY=1 makes it active; a command the model runs in
// agentd's sandbox (Landlock or bubblewrap) works under the hardening,
// writes its workspace and nothing else (agentd's home is refused by the
// sandbox, the rest of the system by ProtectSystem=strict); the watchdog
// is pinged, and a hung engine is killed by it and restarted; `systemctl
// reload` reloads config.toml in place; `systemctl stop` ends agentd
// cleanly and leaves no process behind, not even one the command
// detached with setsid.
func TestSystemdManagerRunsTheUnits(t *testing.T) {
	if policy.Detect().MethodFor(policy.WorkspaceWrite()) == policy.MethodNone {
		t.Skipf("this host cannot sandbox commands (%s): nothing to check under the manager", policy.Detect())
	}
	m := startSDManager(t)
	u := installSDUnits(t, m)
	c := u.checkActivation(t)
	u.checkHardened(t)
	u.checkSandboxedCommand(t, c)
	u.checkReload(t, c)
	u.checkWatchdog(t, c)
	u.checkStop(t)
}

// checkActivation starts the socket unit: agentd starts on the first
// connection, becomes active at READY=1 and serves both sockets. It
// returns the first connection.
func (u *sdUnits) checkActivation(t *testing.T) *Client {
	t.Helper()
	m := u.m
	m.mustSystemctl("start", "agentd.socket")
	if s := m.prop(u.service, "ActiveState"); s != "inactive" {
		t.Fatalf("agentd.service is %s before any connection", s)
	}
	c := u.dialWSToken("tcp")
	c.Initialize("systemd-e2e", nil)
	// The start job the connection began ends at READY=1.
	m.mustSystemctl("start", u.service)
	if s := m.prop(u.service, "ActiveState"); s != "active" {
		t.Fatalf("agentd.service is %s after its start job", s)
	}
	waitFileContains(t, u.log, "serving a socket passed by the service manager")
	u.dialUnix("unix").Initialize("systemd-e2e-unix", nil)
	return c
}

// checkSandboxedCommand runs a command in agentd's sandbox under the
// hardening: it writes its workspace, the sandbox refuses it agentd's
// home (which systemd leaves writable) and systemd the rest.
func (u *sdUnits) checkSandboxedCommand(t *testing.T, c *Client) {
	t.Helper()
	home := u.agentdHome()
	threadID := startThread(t, c, map[string]any{"cwd": u.work})
	item := runCommand(t, c, threadID, fmt.Sprintf(
		"echo sandboxed > in-workspace.txt && cat in-workspace.txt; echo x > %s/escape.txt; echo x > %s/escape.txt; grep NoNewPrivs /proc/self/status",
		home, u.m.base))
	out := str(item, "aggregatedOutput")
	if code, _ := path(item, "exitCode").(float64); code != 0 || !strings.Contains(out, "sandboxed\n") {
		t.Fatalf("the sandboxed command failed under the hardening: exit %v\n%s", path(item, "exitCode"), out)
	}
	for _, want := range []string{home + "/escape.txt: Permission denied", u.m.base + "/escape.txt: Read-only file system", "NoNewPrivs:\t1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("command output lacks %q:\n%s", want, out)
		}
	}
	u.checkWorkspaceFile(t, "in-workspace.txt", "sandboxed\n")
	for _, p := range []string{filepath.Join(home, "escape.txt"), filepath.Join(u.m.base, "escape.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("the command wrote %s", p)
		}
	}
	if !hasRollout(home) {
		t.Fatalf("no rollout under %s: the home is not writable under ProtectSystem=strict", home)
	}
}

// checkReload: systemctl reload reads config.toml again, in the same
// process.
func (u *sdUnits) checkReload(t *testing.T, c *Client) {
	t.Helper()
	pid := u.mainPID()
	writeConfig(t, u.agentdHome(), "model = \"demo-reloaded\"\n")
	u.m.mustSystemctl("reload", u.service)
	waitFileContains(t, u.log, "reloaded the configuration")
	cfg := unmarshal(t, WantResult(t, c.Call("config/read", map[string]any{})))
	if got := str(cfg, "config", "model"); got != "demo-reloaded" {
		t.Fatalf("config/read model %q after systemctl reload, want demo-reloaded", got)
	}
	u.m.waitProp(u.service, "ActiveState", func(v string) bool { return v == "active" })
	if u.mainPID() != pid {
		t.Fatal("systemctl reload restarted agentd")
	}
}

// checkWatchdog: the manager gets the pings; with the engine hung (c's
// test/stall) they stop, the manager kills agentd and, as
// Restart=on-failure says, starts it again.
func (u *sdUnits) checkWatchdog(t *testing.T, c *Client) {
	t.Helper()
	m := u.m
	first := m.prop(u.service, "WatchdogTimestampMonotonic")
	m.waitProp(u.service, "WatchdogTimestampMonotonic", func(v string) bool { return v != first && v != "0" })
	pid := u.mainPID()
	c.Request("test/stall", map[string]any{})
	c.ReadUntil(isMethod("test/stalled"))
	m.waitProp(u.service, "NRestarts", func(v string) bool { return v == "1" })
	waitFileContains(t, m.console, "agentd.service: Watchdog timeout")
	m.mustSystemctl("start", u.service)
	if u.mainPID() == pid {
		t.Fatal("agentd was not restarted after the watchdog timeout")
	}
}

// checkStop: systemctl stop ends agentd with status 0 and kills what a
// command detached from it (setsid: out of its process group, which
// agentd kills itself).
func (u *sdUnits) checkStop(t *testing.T) {
	t.Helper()
	m := u.m
	c := u.dialWSToken("after-restart")
	c.Initialize("systemd-e2e", nil)
	threadID := startThread(t, c, map[string]any{"cwd": u.work})
	item := runCommand(t, c, threadID, "setsid sleep 343 >/dev/null 2>&1 </dev/null & echo pid=$!")
	orphan := detachedPID(t, str(item, "aggregatedOutput"))
	m.mustSystemctl("stop", u.service)
	if s, r, code := m.prop(u.service, "ActiveState"), m.prop(u.service, "Result"), m.prop(u.service, "ExecMainStatus"); s != "inactive" || r != "success" || code != "0" {
		t.Fatalf("after systemctl stop: state %s, result %s, exit status %s; want inactive, success, 0", s, r, code)
	}
	if proc.Alive(orphan) {
		t.Fatalf("process %d the command detached outlived agentd.service", orphan)
	}
	m.mustSystemctl("stop", "agentd.socket")
}

// checkHardened reads, from /proc, that the manager applied the unit's
// sandboxing to agentd (a manager that cannot ignores some silently).
func (u *sdUnits) checkHardened(t *testing.T) {
	t.Helper()
	pid := strconv.Itoa(u.mainPID())
	status := readFileString(t, "/proc/"+pid+"/status")
	for _, want := range []string{fmt.Sprintf("Uid:\t%d\t", u.uid), "NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000"} {
		if !strings.Contains(status, want) {
			t.Fatalf("agentd's status lacks %q (the unit's User=, NoNewPrivileges=, seccomp filters, no capabilities):\n%s", want, status)
		}
	}
	mounts := map[string]string{} // mount point → options (the last mount wins)
	for _, line := range strings.Split(readFileString(t, "/proc/"+pid+"/mountinfo"), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 {
			mounts[f[4]] = f[5]
		}
	}
	checks := []struct{ point, want, why string }{
		{"/", "ro", "ProtectSystem=strict"},
		{u.work, "rw", "ReadWritePaths="},
		{u.agentdHome(), "rw", "StateDirectory="},
		{"/tmp", "rw", "PrivateTmp="},
		{"/dev", "ro", "PrivateDevices="},
	}
	for _, c := range checks {
		opts, ok := mounts[c.point]
		if !ok || !strings.Contains(","+opts+",", ","+c.want+",") {
			t.Fatalf("agentd's %s is not mounted %s (options %q): %s not applied", c.point, c.want, opts, c.why)
		}
	}
}

// checkWorkspaceFile checks a file the command wrote: its content, and
// that it belongs to the unit's user.
func (u *sdUnits) checkWorkspaceFile(t *testing.T, name, want string) {
	t.Helper()
	p := filepath.Join(u.work, name)
	if got := readFileString(t, p); got != want {
		t.Fatalf("%s holds %q, want %q", p, got, want)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != u.uid {
		t.Fatalf("%s is not owned by the unit's user %d", p, u.uid)
	}
}

// hasRollout reports whether home holds a thread's rollout.
func hasRollout(home string) bool {
	found := false
	_ = filepath.WalkDir(filepath.Join(home, "sessions"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".jsonl") {
			found = true
		}
		return nil
	})
	return found
}

// detachedPID reads "pid=N" from a command's output and waits until N is
// the sleep it started.
func detachedPID(t *testing.T, out string) int {
	t.Helper()
	i := strings.Index(out, "pid=")
	if i < 0 {
		t.Fatalf("no pid in %q", out)
	}
	pid, err := strconv.Atoi(strings.Fields(out[i+4:])[0])
	if err != nil {
		t.Fatalf("no pid in %q", out)
	}
	// The shell may print the pid before its child has become sleep.
	deadline := time.Now().Add(WaitTimeout)
	for {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.HasPrefix(string(cmdline), "sleep\x00343") && proc.Alive(pid) {
			return pid
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("process %d is not the detached sleep (%q, %v)", pid, cmdline, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// freePort returns a TCP port on loopback that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
