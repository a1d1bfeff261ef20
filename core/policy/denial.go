package policy

import "strings"

// denialMarkers are error texts commands print when the kernel refuses
// them something the sandbox forbids.
var denialMarkers = []string{
	"permission denied",
	"operation not permitted",
	"read-only file system",
	"network is unreachable",
	"agentd sandbox:",
}

// LikelySandboxDenial guesses whether a sandboxed command failed because
// of the sandbox: it exited non-zero and its output carries an error the
// sandbox produces. The guess errs towards yes; the cost of a wrong yes
// is one extra approval question.
func LikelySandboxDenial(exitCode int, output string) bool {
	if exitCode == 0 {
		return false
	}
	lower := strings.ToLower(output)
	for _, m := range denialMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}
