package threads

import (
	"os"
	"testing"
)

// TestMain gives the commands the tests run (the demo model's "run: …") a
// HOME of their own: a login shell must not read the machine's dotfiles.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "agentd-test-home")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
