package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// shellContent is the output the model reads of a command run to its
// end: the aggregated output, after a line saying so if it timed out.
func (r *Result) shellContent() string {
	if r.TimedOut {
		return fmt.Sprintf("command timed out after %d milliseconds\n%s", r.Duration.Milliseconds(), r.Aggregated)
	}
	return r.Aggregated
}

// wallSeconds is the run time rounded to a tenth of a second.
func (r *Result) wallSeconds() float64 { return roundTenth(r.Duration) }

func roundTenth(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

// WallSeconds formats a run time as the reference's text outputs do
// (shell_command, apply_patch): rounded to a tenth of a second, without a
// trailing ".0" ("0", "1.5", "12").
func WallSeconds(d time.Duration) string {
	return strconv.FormatFloat(roundTenth(d), 'f', -1, 64)
}

// StructuredText formats a finished command for the shell function and
// local_shell, in the reference's shape:
//
//	{"output":"…","metadata":{"exit_code":0,"duration_seconds":0.1}}
//
// An output cut to DefaultMaxOutputTokens starts with "Total output
// lines: N" and a blank line.
func (r *Result) StructuredText() string {
	content := r.shellContent()
	out := TruncateForModel(content, DefaultMaxOutputTokens)
	if out != content {
		out = fmt.Sprintf("Total output lines: %d\n\n%s", lineCount(content), out)
	}
	secs := strconv.FormatFloat(r.wallSeconds(), 'f', -1, 64)
	if !strings.Contains(secs, ".") {
		secs += ".0"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(structuredOutput{Output: out, Metadata: structuredMeta{ExitCode: r.ExitCode, DurationSeconds: json.Number(secs)}})
	return strings.TrimSuffix(b.String(), "\n")
}

type structuredOutput struct {
	Output   string         `json:"output"`
	Metadata structuredMeta `json:"metadata"`
}

type structuredMeta struct {
	ExitCode        int         `json:"exit_code"`
	DurationSeconds json.Number `json:"duration_seconds"`
}

// FreeformText formats a finished command for shell_command, in the
// reference's shape:
//
//	Exit code: 0
//	Wall time: 0.1 seconds
//	Total output lines: 12000          (only when the output was cut)
//	Output:
//	…
func (r *Result) FreeformText() string {
	content := r.shellContent()
	out := TruncateForModel(content, DefaultMaxOutputTokens)
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code: %d\n", r.ExitCode)
	fmt.Fprintf(&b, "Wall time: %s seconds\n", WallSeconds(r.Duration))
	if out != content {
		fmt.Fprintf(&b, "Total output lines: %d\n", lineCount(content))
	}
	b.WriteString("Output:\n")
	b.WriteString(out)
	return b.String()
}

// lineCount counts lines as the reference does (a last line without a
// newline counts).
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
