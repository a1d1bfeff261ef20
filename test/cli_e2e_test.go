package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	out, err := exec.Command(Binary(), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "agentd 0.") {
		t.Fatalf("%q %v", out, err)
	}
}

// agentd schema writes the stable and experimental bundles; only the
// experimental one has experimental methods.
func TestSchemaCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{{"schema", "--out", dir}, {"schema", "--experimental", "--out", dir}} {
		if out, err := exec.Command(Binary(), args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	for name, wantExp := range map[string]bool{"stable.schemas.json": false, "experimental.schemas.json": true} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !json.Valid(b) {
			t.Fatalf("%s: %v", name, err)
		}
		if got := strings.Contains(string(b), `"collaborationMode/list"`); got != wantExp {
			t.Errorf("%s: has the experimental method collaborationMode/list = %v", name, got)
		}
	}
	if out, err := exec.Command(Binary(), "schema").CombinedOutput(); err == nil || !strings.Contains(string(out), "--out") {
		t.Fatalf("schema without --out: %v %s", err, out)
	}
}

// agentd app-server is serve under the reference's name, so a client that
// spawns `codex app-server` can spawn agentd instead.
func TestAppServerAlias(t *testing.T) {
	d := Start(t, Options{Command: "app-server"})
	c := d.Stdio()
	c.Initialize("alias", nil)
	d.CloseStdin()
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
