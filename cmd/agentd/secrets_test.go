package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/server/config"
)

// The re-executed side: the values come from a real pipe into Go's
// environment, the descriptor is closed, and the hand-over variable is
// gone.
func TestRestoreSecrets(t *testing.T) {
	p, err := newSecretsPipe(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.write([]byte(`{"E2E_RESTORED_KEY":"made-up-value","E2E_OTHER":""}`)); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.SecretsFDVariable, strconv.Itoa(p.fd))
	t.Setenv("E2E_RESTORED_KEY", "")
	t.Setenv("E2E_OTHER", "x")
	names, reexecuted, err := restoreSecrets()
	if err != nil || !reexecuted || strings.Join(names, ",") != "E2E_OTHER,E2E_RESTORED_KEY" {
		t.Fatalf("restoreSecrets: %v %v %v", names, reexecuted, err)
	}
	if os.Getenv("E2E_RESTORED_KEY") != "made-up-value" || os.Getenv("E2E_OTHER") != "" {
		t.Fatalf("values not restored: %q %q", os.Getenv("E2E_RESTORED_KEY"), os.Getenv("E2E_OTHER"))
	}
	if _, ok := os.LookupEnv(config.SecretsFDVariable); ok {
		t.Fatal("the hand-over variable is still set")
	}
	if _, err := os.Stat("/proc/self/fd/" + strconv.Itoa(p.fd)); err == nil {
		t.Fatal("the pipe's descriptor is still open")
	}
}

// A hand-over variable that names no pipe with the values is a clear
// startup error, not a daemon without its keys.
func TestRestoreSecretsBadDescriptor(t *testing.T) {
	for value, want := range map[string]string{
		"seven": `AGENTD_SECRETS_FD: "seven" is not a descriptor number`,
		"1":     `AGENTD_SECRETS_FD: "1" is not a descriptor number`,
	} {
		t.Setenv(config.SecretsFDVariable, value)
		if _, _, err := restoreSecrets(); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", value, err, want)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "not-json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd())) // restoreSecrets closes its own
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.SecretsFDVariable, strconv.Itoa(fd))
	if _, _, err := restoreSecrets(); err == nil || !strings.Contains(err.Error(), "does not hold the secret variables") {
		t.Errorf("an empty file: %v", err)
	}
}

// Values too large for the pipe are refused before any exec.
func TestHideSecretsTooLarge(t *testing.T) {
	t.Setenv("E2E_HUGE_KEY", strings.Repeat("k", maxSecretsBytes))
	err := hideSecrets([]string{"E2E_HUGE_KEY"}, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "more than the 1048576 the daemon hands over") {
		t.Fatalf("got %v", err)
	}
}

// Nothing to move: no exec, no error.
func TestHideSecretsNothingToDo(t *testing.T) {
	if err := hideSecrets([]string{"E2E_NOT_SET_ANYWHERE"}, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
}

// Without /proc/self/exe the exec fails: the daemon is told so (to warn
// and carry on), with its environment and descriptors as they were.
func TestHideSecretsExecFails(t *testing.T) {
	defer func(old string) { selfExe = old }(selfExe)
	selfExe = filepath.Join(t.TempDir(), "missing-exe")
	t.Setenv("E2E_STAYING_KEY", "made-up-value")
	before := openFDs(t)
	err := hideSecrets([]string{"E2E_STAYING_KEY"}, zap.NewNop())
	if !errors.Is(err, errNoReexec) || !strings.Contains(err.Error(), "missing-exe") {
		t.Fatalf("got %v", err)
	}
	if os.Getenv("E2E_STAYING_KEY") != "made-up-value" || os.Getenv(config.SecretsFDVariable) != "" {
		t.Fatal("the environment changed")
	}
	if after := openFDs(t); after != before {
		t.Fatalf("%d descriptors open before, %d after: the pipe leaked", before, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
