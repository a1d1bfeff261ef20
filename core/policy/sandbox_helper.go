package policy

import (
	"errors"
	"fmt"
	"os"
)

// Exit codes of the sandbox helper when it cannot run the command.
const (
	// HelperSetupFailed: the sandbox could not be applied; the command
	// did not run.
	HelperSetupFailed = 126
	// HelperNotFound: the command does not exist.
	HelperNotFound = 127
)

// helperSpec is the parsed command line of the sandbox helper.
type helperSpec struct {
	writable []string
	network  bool
	argv     []string
}

// parseHelperArgs reads "[--write DIR]… [--net] -- command…".
func parseHelperArgs(args []string) (helperSpec, error) {
	var s helperSpec
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--write":
			if i+1 >= len(args) {
				return s, errors.New("--write needs a directory")
			}
			s.writable = append(s.writable, args[i+1])
			i++
		case "--net":
			s.network = true
		case "--":
			s.argv = args[i+1:]
			if len(s.argv) == 0 {
				return s, errors.New("no command after --")
			}
			return s, nil
		default:
			return s, fmt.Errorf("unknown argument %q", args[i])
		}
	}
	return s, errors.New("missing -- before the command")
}

func helperFail(code int, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "agentd sandbox: "+format+"\n", args...)
	return code
}
