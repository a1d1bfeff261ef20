package policy

import (
	"fmt"
	"net"
	"os"
	"testing"
)

// TestMain lets the test binary serve as the sandbox helper (as agentd's
// main does) and as a small network probe run inside the sandbox.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case SandboxHelperArg:
			os.Exit(SandboxMain(os.Args[2:]))
		case "__dial":
			// __dial tcp|udp ADDR: exit 0 when a socket could be
			// connected, 3 otherwise.
			c, err := net.Dial(os.Args[2], os.Args[3])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			if _, err := c.Write([]byte("x")); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			c.Close()
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}
