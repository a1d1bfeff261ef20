//go:build linux

package policy

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// requireMethod skips when this host cannot run m.
func requireMethod(t *testing.T, m SandboxMethod, network bool) Capabilities {
	t.Helper()
	caps := Detect()
	switch m {
	case MethodLandlock:
		if caps.LandlockABI < 1 {
			t.Skipf("Landlock is not available in this kernel (%s)", caps)
		}
		if !network && !caps.Seccomp {
			t.Skipf("seccomp filters are unavailable, the Landlock method cannot block the network (%s)", caps)
		}
	case MethodBwrap:
		if !caps.BwrapWorks {
			t.Skipf("bubblewrap is not installed or cannot create namespaces here (%s)", caps)
		}
	}
	return caps
}

func launcher(t *testing.T, m SandboxMethod, p SandboxPolicy) *Launcher {
	caps := requireMethod(t, m, p.NetworkAccess)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Launcher{Method: m, Policy: p, Helper: exe, Bwrap: caps.Bwrap}
}

// run executes argv under l in cwd and returns its exit code and output.
func run(t *testing.T, l *Launcher, cwd string, argv ...string) (int, string) {
	t.Helper()
	wrapped, err := l.Wrap(argv, cwd)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wrapped[0], wrapped[1:]...)
	cmd.Dir = cwd
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%q did not finish", argv)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// noTmp is workspace-write without the temp dirs, so that two test temp
// dirs can be one inside the roots and one outside.
func noTmp() SandboxPolicy {
	return SandboxPolicy{Mode: SandboxWorkspaceWrite, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true}
}

func testFilesystem(t *testing.T, m SandboxMethod) {
	work, outside := t.TempDir(), t.TempDir()
	l := launcher(t, m, noTmp())

	if code, out := run(t, l, work, "sh", "-c", "echo in > inside.txt && mkdir d && mv inside.txt d/ && cat d/inside.txt"); code != 0 || out != "in\n" {
		t.Fatalf("write inside the workspace: exit %d, %q", code, out)
	}
	target := filepath.Join(outside, "escape.txt")
	code, out := run(t, l, work, "sh", "-c", "echo out > "+target)
	if code == 0 {
		t.Fatalf("write outside the roots succeeded: %q", out)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file outside the roots exists: %v", err)
	}
	if !LikelySandboxDenial(code, out) {
		t.Errorf("denial not recognised: exit %d, %q", code, out)
	}
	// Children inherit the confinement.
	if code, _ := run(t, l, work, "sh", "-c", "sh -c 'touch "+target+"'"); code == 0 {
		t.Fatal("a grandchild escaped the sandbox")
	}
	// Reading outside works; /dev/null takes writes.
	if err := os.WriteFile(filepath.Join(outside, "r.txt"), []byte("readable"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := run(t, l, work, "sh", "-c", "cat "+filepath.Join(outside, "r.txt")+" && echo x > /dev/null && echo x >&2"); code != 0 || out != "readablex\n" {
		t.Fatalf("read outside / write /dev/null: exit %d, %q", code, out)
	}

	ro := launcher(t, m, ReadOnly())
	if code, _ := run(t, ro, work, "sh", "-c", "echo x > ro.txt"); code == 0 {
		t.Fatal("read-only sandbox allowed a write in the cwd")
	}
}

func testNetwork(t *testing.T, m SandboxMethod) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	exe, _ := os.Executable()
	work := t.TempDir()

	off := launcher(t, m, noTmp())
	if code, out := run(t, off, work, exe, "__dial", "tcp", ln.Addr().String()); code == 0 {
		t.Fatalf("TCP connect to loopback succeeded with network off: %q", out)
	}
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	run(t, off, work, exe, "__dial", "udp", udp.LocalAddr().String())
	if got := receiveDatagram(udp, 250*time.Millisecond); got {
		t.Fatal("a UDP datagram left the sandbox with network off")
	}
	// Unix sockets stay usable: many tools talk to local helpers.
	sock := filepath.Join(work, "s.sock")
	if code, out := run(t, off, work, "sh", "-c", "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind(\""+sock+"\")' 2>&1 || test ! -x \"$(command -v python3)\""); code != 0 {
		t.Fatalf("AF_UNIX socket refused: %q", out)
	}

	on := noTmp()
	on.NetworkAccess = true
	if code, out := run(t, launcher(t, m, on), work, exe, "__dial", "tcp", ln.Addr().String()); code != 0 {
		t.Fatalf("TCP connect failed with network on: exit %d, %q", code, out)
	}
	if code, out := run(t, launcher(t, m, on), work, exe, "__dial", "udp", udp.LocalAddr().String()); code != 0 || !receiveDatagram(udp, 10*time.Second) {
		t.Fatalf("UDP datagram lost with network on: exit %d, %q", code, out)
	}
}

// receiveDatagram reports whether a datagram arrives on c within wait.
func receiveDatagram(c net.PacketConn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 16)
	_, _, err := c.ReadFrom(buf)
	return err == nil
}

func TestLandlockFilesystem(t *testing.T) { testFilesystem(t, MethodLandlock) }
func TestLandlockNetwork(t *testing.T)    { testNetwork(t, MethodLandlock) }
func TestBwrapFilesystem(t *testing.T)    { testFilesystem(t, MethodBwrap) }
func TestBwrapNetwork(t *testing.T)       { testNetwork(t, MethodBwrap) }

func TestBwrapKeepsGitReadOnly(t *testing.T) {
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := launcher(t, MethodBwrap, noTmp())
	if code, _ := run(t, l, work, "sh", "-c", "echo x > .git/hooks-pre-commit"); code == 0 {
		t.Fatal("bubblewrap let a command write into .git")
	}
	if code, out := run(t, l, work, "sh", "-c", "echo x > ok.txt"); code != 0 {
		t.Fatalf("write beside .git failed: %q", out)
	}
}

func TestHelperRefusesBadInvocations(t *testing.T) {
	requireMethod(t, MethodLandlock, true)
	exe, _ := os.Executable()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{SandboxHelperArg, "--write"}, 2, "--write needs"},
		{[]string{SandboxHelperArg, "--bogus", "--", "true"}, 2, "unknown argument"},
		{[]string{SandboxHelperArg, "--net"}, 2, "missing --"},
		{[]string{SandboxHelperArg, "--"}, 2, "no command"},
		{[]string{SandboxHelperArg, "--", "no-such-command-agentd"}, HelperNotFound, "command not found"},
	} {
		cmd := exec.Command(exe, c.args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.Contains(string(out), c.msg) {
			t.Errorf("%q: err %v, output %q; want exit %d with %q", c.args, err, out, c.code, c.msg)
		}
	}
}

func TestWrapArgv(t *testing.T) {
	p := SandboxPolicy{Mode: SandboxWorkspaceWrite, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true, WritableRoots: []string{"/data"}}
	l := &Launcher{Method: MethodLandlock, Policy: p, Helper: "/usr/bin/agentd"}
	got, err := l.Wrap([]string{"bash", "-lc", "ls"}, "/work")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin/agentd", SandboxHelperArg, "--write", "/work", "--write", "/data", "--", "bash", "-lc", "ls"}
	if !slices.Equal(got, want) {
		t.Errorf("Wrap = %q, want %q", got, want)
	}
	if _, err := l.Wrap(nil, "/work"); err == nil {
		t.Error("empty command accepted")
	}
	if _, err := l.Wrap([]string{"ls"}, "rel"); err == nil {
		t.Error("relative cwd accepted")
	}
	if _, err := (&Launcher{Method: MethodNone}).Wrap([]string{"ls"}, "/"); !errors.Is(err, ErrSandboxUnavailable) {
		t.Errorf("MethodNone: %v", err)
	}
	spec, err := parseHelperArgs(got[2:])
	if err != nil || !slices.Equal(spec.writable, []string{"/work", "/data"}) || spec.network || !slices.Equal(spec.argv, []string{"bash", "-lc", "ls"}) {
		t.Errorf("round trip: %+v, %v", spec, err)
	}
}

func TestCapabilitiesDecisions(t *testing.T) {
	ws := WorkspaceWrite()
	none := Capabilities{}
	if none.Supports(ws) || !none.Supports(FullAccess()) || none.Warning() == "" {
		t.Errorf("no capabilities: supports=%t warning=%q", none.Supports(ws), none.Warning())
	}
	ll := Capabilities{LandlockABI: 3, Seccomp: true}
	if ll.MethodFor(ws) != MethodLandlock || ll.Warning() != "" {
		t.Errorf("landlock host: %s %q", ll.MethodFor(ws), ll.Warning())
	}
	noSeccomp := Capabilities{LandlockABI: 5}
	if noSeccomp.MethodFor(ws) != MethodNone {
		t.Error("Landlock without seccomp cannot block the network")
	}
	net := ws
	net.NetworkAccess = true
	if noSeccomp.MethodFor(net) != MethodLandlock {
		t.Error("Landlock without seccomp still confines files")
	}
	bw := Capabilities{Bwrap: "/usr/bin/bwrap", BwrapWorks: true}
	if bw.MethodFor(ReadOnly()) != MethodBwrap {
		t.Error("bubblewrap not chosen")
	}
	t.Logf("this host: %s; warning: %q", Detect(), Detect().Warning())
}

func TestNewLauncher(t *testing.T) {
	if _, err := NewLauncher(FullAccess()); err == nil {
		t.Error("a launcher for full access")
	}
	requireMethod(t, MethodLandlock, false)
	l, err := NewLauncher(WorkspaceWrite())
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if l.Method != MethodLandlock || l.Helper != exe {
		t.Errorf("launcher %+v", l)
	}
}
