package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unitsDir holds the unit files we ship (docs/systemd).
const unitsDir = "../docs/systemd"

// readUnit returns a shipped unit file with each old→new replacement
// applied. Every old string must occur exactly once: a unit that changes
// shape fails here, instead of being tested half-replaced.
func readUnit(t *testing.T, name string, replace ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(unitsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if n := strings.Count(s, replace[i]); n != 1 {
			t.Fatalf("%s: %q occurs %d times, want once", name, replace[i], n)
		}
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	return s
}

// writeUnit writes content as dir/name.
func writeUnit(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// systemd-analyze verify accepts the shipped units without a single
// warning (it exits 0 on most of them, an unknown key or a bad value
// included, so any output fails the test), with ExecStart pointing at the
// built binary, which verify requires to exist and be executable.
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit files were not verified")
	}
	dir := t.TempDir()
	service := writeUnit(t, dir, "agentd.service", readUnit(t, "agentd.service", "/usr/local/bin/agentd", Binary()))
	socket := writeUnit(t, dir, "agentd.socket", readUnit(t, "agentd.socket"))
	user := writeUnit(t, dir, "agentd-user.service", readUnit(t, "agentd-user.service", "%h/.local/bin/agentd", Binary()))

	runtime := filepath.Join(dir, "runtime")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", "--man=no", service, socket},
		{"--user", "verify", "--man=no", user},
	} {
		cmd := exec.Command(analyze, args...)
		// --user needs a runtime directory; nothing else of ours may leak in.
		cmd.Env = append(filteredEnv(), "XDG_RUNTIME_DIR="+runtime)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil || out.Len() > 0 {
			t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
}
