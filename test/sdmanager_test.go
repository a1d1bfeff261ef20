package test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sdManager is a real systemd service manager for end-to-end tests: root's
// `systemd --user`, which applies the same sandboxing directives as the
// system manager (it has the privileges), started without a booted
// systemd and without touching anything outside its own tree:
//
//   - its own cgroup. A manager takes its cgroup for its root and moves
//     every process found there into its init.scope: started in the root
//     cgroup of a container, it would move all the container's
//     processes. It therefore starts in a new child cgroup, in every
//     hierarchy systemd uses, which it cannot see out of.
//   - its own mount namespace, where /run/systemd is a fresh tmpfs with
//     the "system" directory (the "booted with systemd" mark a user
//     manager insists on) and the inaccessible nodes the system manager
//     would have created (ProtectSystem= and friends mount them), and
//     where /dev/console, its log target, is a pseudo-terminal whose
//     output the test keeps (a manager logs nowhere but to a terminal).
//   - its tree under /var/lib, not /tmp or /run: the units' PrivateTmp=
//     hides /tmp and /var/tmp, and systemd mounts an empty tmpfs on /run
//     in a unit's namespace where /run is not a mount point of its own.
//   - a timeout: if the test binary dies, the manager is still stopped
//     (it stops its units first).
type sdManager struct {
	t       *testing.T
	base    string   // the tree, removed at the end
	home    string   // the manager's HOME
	units   string   // its unit directory
	env     []string // for systemctl
	console string   // its log
	cgroup  string   // its cgroup, relative to the hierarchies' roots
	cmd     *exec.Cmd
	exited  chan struct{}
}

// sdCgroupPrefix begins the names of the manager's tree and cgroup.
const sdCgroupPrefix = "agentd-e2e-"

// systemdBinary is where distributions put the manager.
func systemdBinary() string {
	for _, p := range []string{"/lib/systemd/systemd", "/usr/lib/systemd/systemd"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// startSDManager starts a manager, or skips the test saying why none can
// run here.
func startSDManager(t *testing.T) *sdManager {
	t.Helper()
	systemd := checkSDHost(t)
	m := newSDTree(t)
	console := consolePTY(t, m.console)
	inaccessible := makeInaccessibleNodes(t, m.base)
	procs := m.makeCgroup(filepath.Base(m.base))
	script := filepath.Join(m.base, "manager.sh")
	writeScript(t, script, fmt.Sprintf(`set -e
mount -t tmpfs -o mode=0755 tmpfs /run/systemd
mkdir /run/systemd/system /run/systemd/inaccessible
mount --bind %[1]s /run/systemd/inaccessible
mount --bind %[2]s /dev/console
exec %[3]s --user --unit=agentd-e2e.target --log-target=console --log-level=info
`, inaccessible, console, systemd))
	self, pid1 := readFileString(t, "/proc/self/cgroup"), readFileString(t, "/proc/1/cgroup")
	// The shell moves itself into the cgroup, then becomes the timeout
	// whose child is the manager.
	m.launch(exec.Command("/bin/sh", append([]string{"-c",
		`for f in "$@"; do echo $$ > "$f"; done; exec timeout -k 10 300 unshare --mount --propagation private /bin/sh ` + script, "sh"}, procs...)...))
	if err := m.waitUp(); err != nil {
		t.Skipf("no systemd manager could be started here (%v): the units were not run under a real manager\n%s", err, m.logs())
	}
	// The guard against the mistake this harness exists to avoid: the
	// manager must be in its own cgroup, and must not have moved anyone.
	if cg := m.managerProp("ControlGroup"); cg != m.cgroup {
		t.Fatalf("the manager runs in cgroup %q, not in its own %q", cg, m.cgroup)
	}
	if now := readFileString(t, "/proc/self/cgroup"); now != self {
		t.Fatalf("starting the manager moved the test process from\n%s\nto\n%s", self, now)
	}
	if now := readFileString(t, "/proc/1/cgroup"); now != pid1 {
		t.Fatalf("starting the manager moved process 1 from\n%s\nto\n%s", pid1, now)
	}
	// PID 1's notification socket is writable by every user, so that
	// services with User= can report; a user manager's is not, and here
	// its services run as another user.
	if err := os.Chmod(filepath.Join(m.base, "xdg", "systemd", "notify"), 0o777); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkSDHost skips the test unless a manager can be started here, and
// returns the manager's binary.
func checkSDHost(t *testing.T) string {
	t.Helper()
	// Opt-in: the manager gets a cgroup and a mount namespace of its own,
	// which a shared CI machine need not be subjected to on every run.
	if os.Getenv("AGENTD_SYSTEMD_E2E") != "1" {
		t.Skip("set AGENTD_SYSTEMD_E2E=1 (make systemd-e2e) to run the units under a real systemd manager")
	}
	if os.Geteuid() != 0 {
		t.Skip("a real systemd manager needs root here (its own cgroup and mount namespace); the units were not run under one")
	}
	systemd := systemdBinary()
	if systemd == "" {
		t.Skip("systemd is not installed: the units were not run under a real manager")
	}
	for _, tool := range []string{"systemctl", "unshare", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the units were not run under a real manager", tool)
		}
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		// A booted systemd owns the cgroup tree and the buses: a second
		// manager is not started beside it.
		t.Skip("this host runs systemd: the test starts its own manager only where none runs (containers, CI); install the units as docs/operations.md says")
	}
	if fi, err := os.Stat("/run/systemd"); err != nil || !fi.IsDir() {
		t.Skip("/run/systemd does not exist: no place to mount the manager's private /run/systemd")
	}
	return systemd
}

// newSDTree makes the manager's tree: its home with the unit directory
// (and the empty target it starts instead of default.target, so that it
// starts nothing but what the test asks for) and its runtime directory.
func newSDTree(t *testing.T) *sdManager {
	t.Helper()
	base, err := os.MkdirTemp("/var/lib", sdCgroupPrefix)
	if err != nil {
		t.Skipf("no tree for the manager outside /tmp and /run: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &sdManager{t: t, base: base, home: filepath.Join(base, "home"), console: filepath.Join(base, "manager.log"), exited: make(chan struct{})}
	m.units = filepath.Join(m.home, ".config", "systemd", "user")
	xdg := filepath.Join(base, "xdg")
	for _, d := range []string{m.units, xdg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeUnit(t, m.units, "agentd-e2e.target", "[Unit]\nDescription=agentd end-to-end test\n")
	m.env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=" + m.home, "XDG_RUNTIME_DIR=" + xdg}
	return m
}

// launch starts cmd, which becomes the manager, with the manager's
// environment (nothing of the test's leaks into the units) and stops it
// at the end of the test.
func (m *sdManager) launch(cmd *exec.Cmd) {
	m.t.Helper()
	cmd.Env = m.env
	out, err := os.Create(filepath.Join(m.base, "manager.out"))
	if err != nil {
		m.t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.cmd = cmd
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
	m.t.Cleanup(m.stop)
}

// consolePTY opens a pseudo-terminal, copies what is written to its
// terminal side into file until the test ends, and returns the terminal
// side's path (systemd logs to a console only if it is a terminal).
func consolePTY(t *testing.T, file string) string {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal for the manager's log: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts := fmt.Sprintf("/dev/pts/%d", n)
	// Our own handle on the terminal side: without one, reading the
	// master side fails until the manager opens it.
	slave, err := os.OpenFile(pts, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal for the manager's log: %v", err)
	}
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, master)
		close(done)
	}()
	t.Cleanup(func() {
		_ = slave.Close()
		_ = master.Close()
		<-done
		_ = out.Close()
	})
	return pts
}

// makeInaccessibleNodes makes, in dir/inaccessible, the mode-0 nodes
// systemd mounts over paths it hides (the system manager makes them in
// /run/systemd/inaccessible at boot).
func makeInaccessibleNodes(t *testing.T, dir string) string {
	t.Helper()
	d := filepath.Join(dir, "inaccessible")
	must := func(err error) {
		if err != nil {
			t.Fatalf("inaccessible nodes: %v", err)
		}
	}
	must(os.Mkdir(d, 0o755))
	must(os.Mkdir(filepath.Join(d, "dir"), 0))
	must(os.WriteFile(filepath.Join(d, "reg"), nil, 0))
	must(unix.Mkfifo(filepath.Join(d, "fifo"), 0))
	must(unix.Mknod(filepath.Join(d, "chr"), unix.S_IFCHR, 0))
	must(unix.Mknod(filepath.Join(d, "blk"), unix.S_IFBLK, 0))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(d, "sock"), Net: "unix"})
	must(err)
	ln.SetUnlinkOnClose(false)
	must(ln.Close())
	for _, n := range []string{"reg", "fifo", "chr", "blk", "sock"} {
		must(os.Chmod(filepath.Join(d, n), 0))
	}
	return d
}

// cgroupMount is one mounted cgroup hierarchy.
type cgroupMount struct {
	dir    string // the mount point
	own    string // this process's cgroup in it ("" if none listed)
	leader bool   // systemd places itself by this one (unified or name=systemd)
}

// cgroupMounts lists the mounted cgroup hierarchies (from mountinfo) with
// this process's cgroup in each (from /proc/self/cgroup).
func cgroupMounts(t *testing.T) []cgroupMount {
	t.Helper()
	own := map[string]string{} // "" for the unified hierarchy, else the controllers
	for _, line := range strings.Split(strings.TrimSpace(readFileString(t, "/proc/self/cgroup")), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			own[parts[1]] = parts[2]
		}
	}
	var out []cgroupMount
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(readFileString(t, "/proc/self/mountinfo")))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+3 >= len(fields) || seen[fields[4]] {
			continue
		}
		seen[fields[4]] = true
		switch fields[sep+1] {
		case "cgroup2":
			out = append(out, cgroupMount{dir: fields[4], own: own[""], leader: true})
		case "cgroup":
			var ctrl []string
			for _, o := range strings.Split(fields[sep+3], ",") {
				if o == "rw" || o == "ro" || strings.HasPrefix(o, "clone_children") || o == "noprefix" || strings.HasPrefix(o, "release_agent=") || o == "xattr" {
					continue
				}
				ctrl = append(ctrl, o)
			}
			key := strings.Join(ctrl, ",")
			out = append(out, cgroupMount{dir: fields[4], own: own[key], leader: key == "name=systemd"})
		}
	}
	return out
}

// makeCgroup creates the manager's cgroup, a child of this process's, in
// each hierarchy systemd places itself by, and returns their cgroup.procs
// files. The cgroups are removed at the end, with anything left in them
// killed first (only the manager and its services can be there).
func (m *sdManager) makeCgroup(name string) []string {
	m.t.Helper()
	m.t.Cleanup(func() { removeCgroupTrees(m.t, m.cgroup) })
	var procs []string
	for _, cm := range cgroupMounts(m.t) {
		if !cm.leader || cm.own == "" {
			continue
		}
		rel := filepath.Join(cm.own, name)
		if m.cgroup == "" {
			m.cgroup = rel
		} else if m.cgroup != rel {
			m.t.Skipf("this process sits in different cgroups in systemd's hierarchies (%s, %s): not starting a manager", m.cgroup, rel)
		}
		dir := filepath.Join(cm.dir, rel)
		if err := os.Mkdir(dir, 0o755); err != nil {
			m.t.Skipf("cannot make a cgroup of its own for the manager: %v", err)
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	if len(procs) == 0 {
		m.t.Skip("no cgroup hierarchy systemd can use is mounted: no manager started")
	}
	return procs
}

// removeCgroupTrees removes rel and everything under it in every mounted
// hierarchy (systemd makes the same tree in the controllers' hierarchies),
// deepest first, killing what still runs there.
func removeCgroupTrees(t *testing.T, rel string) {
	if !strings.HasPrefix(filepath.Base(rel), sdCgroupPrefix) {
		// Never walk (and kill in) a cgroup the test did not make.
		return
	}
	for _, cm := range cgroupMounts(t) {
		root := filepath.Join(cm.dir, rel)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := emptyCgroup(d); err != nil {
				t.Errorf("cgroup %s: %v", d, err)
			}
		}
	}
}

// emptyCgroup kills the processes in the cgroup dir, waits until they
// have left it, and removes it.
func emptyCgroup(dir string) error {
	deadline := time.Now().Add(WaitTimeout)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return err
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			return os.Remove(dir)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v do not leave it", pids)
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond) // the kernel frees the cgroup asynchronously
	}
}

// waitUp waits until the manager answers on its private socket.
func (m *sdManager) waitUp() error {
	deadline := time.Now().Add(WaitTimeout)
	for {
		select {
		case <-m.exited:
			return errors.New("the manager exited")
		default:
		}
		if _, err := m.systemctl("show", "--property=Version"); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the manager did not answer")
		}
		time.Sleep(50 * time.Millisecond) // nothing to wait on: the socket appears when it appears
	}
}

// stop stops the manager (which stops its units) and waits for it.
func (m *sdManager) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM) // timeout passes it on
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	if m.t.Failed() {
		m.t.Logf("%s", m.logs())
	}
}

// logs returns the manager's log and output.
func (m *sdManager) logs() string {
	console, _ := os.ReadFile(m.console)
	out, _ := os.ReadFile(filepath.Join(m.base, "manager.out"))
	return fmt.Sprintf("manager log:\n%s\nmanager output:\n%s", console, out)
}

// systemctl runs systemctl --user against the manager.
func (m *sdManager) systemctl(args ...string) (string, error) {
	cmd := exec.Command("systemctl", append([]string{"--user", "--no-pager"}, args...)...)
	cmd.Env = m.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// mustSystemctl runs systemctl and fails the test when it fails.
func (m *sdManager) mustSystemctl(args ...string) string {
	m.t.Helper()
	out, err := m.systemctl(args...)
	if err != nil {
		m.t.Fatalf("systemctl --user %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// prop returns a unit's property.
func (m *sdManager) prop(unit, name string) string {
	m.t.Helper()
	return m.mustSystemctl("show", "--value", "--property="+name, unit)
}

// managerProp returns a property of the manager itself.
func (m *sdManager) managerProp(name string) string {
	m.t.Helper()
	return m.mustSystemctl("show", "--value", "--property="+name)
}

// waitProp polls a unit's property until ok accepts it (systemctl has no
// way to wait for a property) and returns it.
func (m *sdManager) waitProp(unit, name string, ok func(string) bool) string {
	m.t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for {
		v := m.prop(unit, name)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s %s is still %q", unit, name, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readFileString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeScript(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}
