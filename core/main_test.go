package core

import (
	"os"
	"testing"

	"github.com/agentd-dev/agentd/core/policy"
)

// TestMain lets the test binary serve as the sandbox helper, as agentd's
// main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == policy.SandboxHelperArg {
		os.Exit(policy.SandboxMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
