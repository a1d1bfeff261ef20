package review

import (
	"os"
	"testing"

	"github.com/agentd-dev/agentd/core/coretest"
)

// TestMain gives git a HOME of its own: the machine's ~/.gitconfig must
// not change what the tests see.
func TestMain(m *testing.M) {
	os.Exit(coretest.RunWithTempHome(m))
}
