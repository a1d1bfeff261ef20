package threads

import (
	"os"
	"testing"

	"github.com/agentd-dev/agentd/core/coretest"
)

// TestMain gives the commands the tests run (the demo model's "run: …") a
// HOME of their own: a login shell must not read the machine's dotfiles.
func TestMain(m *testing.M) {
	os.Exit(coretest.RunWithTempHome(m))
}
