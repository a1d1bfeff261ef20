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

// denialTailLines is how much of the end of the output is searched for a
// denial: a command's failure is reported where it failed, at the end,
// while a login shell's profile (run inside the sandbox too) may complain
// at the start about files it cannot write, on every command.
const denialTailLines = 10

// LikelySandboxDenial guesses whether a sandboxed command failed because
// of the sandbox: it exited non-zero and the end of its output carries an
// error the sandbox produces. The guess errs towards yes; the cost of a
// wrong yes is one extra approval question.
func LikelySandboxDenial(exitCode int, output string) bool {
	if exitCode == 0 {
		return false
	}
	lines := strings.Split(strings.TrimRight(output, "\n"), "\n")
	if len(lines) > denialTailLines {
		lines = lines[len(lines)-denialTailLines:]
	}
	lower := strings.ToLower(strings.Join(lines, "\n"))
	for _, m := range denialMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}
