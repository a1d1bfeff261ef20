package exec

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestModelTextShape(t *testing.T) {
	r := &Result{ChunkID: "6d545b", Wall: 2206700 * time.Microsecond, ExitCode: 3,
		Output: "line1\nline2\nline3\nerr\n", OutputBytes: 23}
	want := "Chunk ID: 6d545b\nWall time: 2.2067 seconds\nProcess exited with code 3\nOriginal token count: 6\nOutput:\nline1\nline2\nline3\nerr\n"
	if got := r.ModelText(); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	r = &Result{ChunkID: "abcdef", Wall: time.Second, Running: true, SessionID: 7, Output: "", Notes: []string{"session 1 was terminated"}}
	want = "Chunk ID: abcdef\nWall time: 1.0000 seconds\nProcess running with session ID 7\nOriginal token count: 0\nNote: session 1 was terminated\nOutput:\n"
	if got := r.ModelText(); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	r = &Result{ChunkID: newChunkID(), Output: strings.Repeat("a", 100), OutputBytes: 5000, MaxOutputTokens: 10}
	got := r.ModelText()
	if !regexp.MustCompile(`^Chunk ID: [0-9a-f]{6}\n`).MatchString(got) || !strings.Contains(got, "Original token count: 1250\n") ||
		!strings.Contains(got, "tokens truncated") {
		t.Fatalf("got %q", got)
	}
}

func TestUserShellText(t *testing.T) {
	r := &Result{ExitCode: 0, Duration: 9 * time.Millisecond, Aggregated: "shell-out\ne\n"}
	want := "<user_shell_command>\n<command>\necho shell-out; echo e >&2\n</command>\n<result>\nExit code: 0\nDuration: 0.0090 seconds\nOutput:\nshell-out\ne\n</result>\n</user_shell_command>"
	if got := UserShellText("echo shell-out; echo e >&2", r, 0); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	r = &Result{ExitCode: 1, Aggregated: "no newline"}
	if got := UserShellText("x", r, 0); !strings.Contains(got, "Output:\nno newline\n</result>") {
		t.Fatalf("got %q", got)
	}
}
