package threads

import (
	"fmt"
	"runtime"

	"github.com/agentd-dev/agentd/server/rpc"
)

// UserAgent is what initialize answers as userAgent, and the User-Agent
// of the model requests of the threads the client loads, as in the
// reference: "<originator>/<version> (<os>; <arch>) (<client>; <client
// version>)".
func UserAgent(ci rpc.ClientInfo, version string) string {
	return fmt.Sprintf("%s/%s (%s; %s) (%s; %s)", ci.Originator, version, runtime.GOOS, archName(), ci.Name, ci.Version)
}

func archName() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return runtime.GOARCH
}
