package review

import (
	"os"
	"testing"
)

// TestMain gives git a HOME of its own: the machine's ~/.gitconfig must
// not change what the tests see.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "agentd-test-home")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Unsetenv("XDG_CONFIG_HOME")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
