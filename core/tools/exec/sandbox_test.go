//go:build linux

package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/policy"
)

func TestStartSandboxed(t *testing.T) {
	p := policy.SandboxPolicy{Mode: policy.SandboxWorkspaceWrite, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true}
	caps := policy.Detect()
	t.Run("landlock", func(t *testing.T) {
		if caps.MethodFor(p) != policy.MethodLandlock {
			t.Skipf("the Landlock sandbox does not work on this host (%s)", caps)
		}
		l, err := policy.NewLauncher(p)
		if err != nil {
			t.Fatal(err)
		}
		testSandboxed(t, l)
	})
	t.Run("bubblewrap", func(t *testing.T) {
		if !caps.BwrapWorks {
			t.Skipf("bubblewrap is not installed or does not work here (%s)", caps)
		}
		testSandboxed(t, &policy.Launcher{Method: policy.MethodBwrap, Policy: p, Bwrap: caps.Bwrap})
	})
}

func testSandboxed(t *testing.T, l *policy.Launcher) {
	work, outside := t.TempDir(), t.TempDir()
	m := newTestManager(t, Options{})
	target := filepath.Join(outside, "x")
	r, err := start(t, m, context.Background(), Request{
		Argv: sh("echo inside > in.txt && echo escaped > " + target), Cwd: work, Sandbox: l, Timeout: waitFor,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == 0 || !policy.LikelySandboxDenial(r.ExitCode, r.Aggregated) {
		t.Fatalf("write outside allowed or not recognised: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(work, "in.txt")); err != nil || string(b) != "inside\n" {
		t.Fatalf("write inside: %q %v", b, err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("outside file: %v", err)
	}
	// The session keeps the sandbox: a TTY command too.
	r, err = start(t, m, context.Background(), Request{Argv: sh("touch " + target + " || echo denied"), Cwd: work, Sandbox: l, TTY: true, Timeout: waitFor})
	if err != nil || !strings.HasSuffix(r.Aggregated, "\r\ndenied\r\n") {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("outside file after the TTY command: %v", err)
	}
}
