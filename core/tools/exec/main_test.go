package exec

import (
	"os"
	"testing"

	"github.com/agentd-dev/agentd/core/coretest"
	"github.com/agentd-dev/agentd/core/policy"
)

// TestMain lets the test binary serve as the sandbox helper, as agentd's
// main does. The commands the tests run get a HOME of their own: a login
// shell must not read the machine's dotfiles (slow, or hung on a stale
// lock, they made the tests fail).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == policy.SandboxHelperArg {
		os.Exit(policy.SandboxMain(os.Args[2:]))
	}
	os.Exit(coretest.RunWithTempHome(m))
}
