package exec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseShellArgs(t *testing.T) {
	a, err := ParseShellArgs([]byte(`{"command":["bash","-lc","ls"],"other":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Argv, []string{"bash", "-lc", "ls"}) || a.Workdir != "" || a.Timeout != DefaultShellTimeout ||
		a.Escalate() || a.Justification != "" {
		t.Fatalf("defaults: %+v", a)
	}
	if got := a.CommandArgv(Shell{Path: "/bin/zsh"}); !slices.Equal(got, a.Argv) {
		t.Fatalf("argv %q: the shell form runs its argv as given", got)
	}
	a, err = ParseShellArgs([]byte(`{"command":["make"],"workdir":"sub","timeout_ms":"2500",
		"sandbox_permissions":"require_escalated","justification":"needs network","prefix_rule":["make"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Workdir != "sub" || a.Timeout != 2500*time.Millisecond || !a.Escalate() || a.Justification != "needs network" {
		t.Fatalf("all fields: %+v", a)
	}
	// "timeout" is an alias of timeout_ms; timeout_ms wins.
	if a, _ := ParseShellArgs([]byte(`{"command":["x"],"timeout":700}`)); a.Timeout != 700*time.Millisecond {
		t.Fatalf("timeout alias: %v", a.Timeout)
	}
	if a, _ := ParseShellArgs([]byte(`{"command":["x"],"timeout":700,"timeout_ms":900}`)); a.Timeout != 900*time.Millisecond {
		t.Fatalf("timeout_ms over timeout: %v", a.Timeout)
	}
	if a, _ := ParseShellArgs([]byte(`{"command":["x"],"timeout_ms":null}`)); a.Timeout != DefaultShellTimeout {
		t.Fatalf("null timeout: %v", a.Timeout)
	}
	for raw, want := range map[string]string{
		``:                                    `missing required argument "command"`,
		`{}`:                                  `missing required argument "command"`,
		`{"command":null}`:                    `missing required argument "command"`,
		`{"command":"ls -la"}`:                `"command" must be an array of strings`,
		`{"command":[1,2]}`:                   `"command" must be an array of strings`,
		`{"command":[]}`:                      `"command" must name a program`,
		`{"command":[""]}`:                    `"command" must name a program`,
		`{"command":["x"],"timeout_ms":-1}`:   "timeout_ms is out of range",
		`{"command":["x"],"timeout_ms":"1s"}`: `timeout_ms must be a number, not "1s"`,
		`{"command":["x"],"sandbox_permissions":"root"}`: `sandbox_permissions must be "use_default" or "require_escalated"`,
		`["ls"]`:           "not a valid JSON object",
		`{"command":["x"]`: "not a valid JSON object",
	} {
		if _, err := ParseShellArgs([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}

func TestParseShellCommandArgs(t *testing.T) {
	a, err := ParseShellCommandArgs([]byte(`{"command":"echo hi | wc -c"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Script != "echo hi | wc -c" || !a.Login || a.Timeout != DefaultShellTimeout || a.Argv != nil {
		t.Fatalf("defaults: %+v", a)
	}
	if got := a.CommandArgv(Shell{Path: "/bin/zsh"}); !slices.Equal(got, []string{"/bin/zsh", "-lc", "echo hi | wc -c"}) {
		t.Fatalf("login argv %q", got)
	}
	a, err = ParseShellCommandArgs([]byte(`{"command":"make","login":false,"workdir":"/w","timeout_ms":1234,"sandbox_permissions":"use_default"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.CommandArgv(Shell{Path: "/bin/bash"}); !slices.Equal(got, []string{"/bin/bash", "-c", "make"}) || a.Workdir != "/w" ||
		a.Timeout != 1234*time.Millisecond || a.Escalate() {
		t.Fatalf("argv %q, args %+v", got, a)
	}
	for raw, want := range map[string]string{
		`{}`:                             `missing required argument "command"`,
		`{"command":["ls"]}`:             `"command" must be a string`,
		`{"command":"   "}`:              `"command" must not be empty`,
		`{"command":"x","login":"yes"}`:  "not a valid JSON object",
		`{"command":"x","timeout":true}`: "timeout_ms must be a number",
	} {
		if _, err := ParseShellCommandArgs([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}

func TestParseLocalShellAction(t *testing.T) {
	a, err := ParseLocalShellAction(json.RawMessage(`{"type":"exec","command":["ls","-a"],"working_directory":"/w",
		"timeout_ms":3000,"env":{"A":"1"},"user":"root"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Argv, []string{"ls", "-a"}) || a.Workdir != "/w" || a.Timeout != 3*time.Second || a.Escalate() {
		t.Fatalf("action: %+v", a)
	}
	if a, _ := ParseLocalShellAction(json.RawMessage(`{"type":"exec","command":["ls"]}`)); a.Timeout != DefaultShellTimeout || a.Workdir != "" {
		t.Fatalf("defaults: %+v", a)
	}
	for raw, want := range map[string]string{
		``:                               `no "action"`,
		`null`:                           `no "action"`,
		`"exec"`:                         "the action is not valid",
		`{"type":"screenshot"}`:          `unsupported action type "screenshot"`,
		`{"type":"exec"}`:                `missing required argument "command"`,
		`{"type":"exec","command":"ls"}`: `"command" must be an array of strings`,
		`{"type":"exec","command":["x"],"timeout_ms":-3}`: "timeout_ms is out of range",
	} {
		if _, err := ParseLocalShellAction(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}

func TestShellOutputFormats(t *testing.T) {
	r := &Result{ExitCode: 0, Duration: 40 * time.Millisecond, Aggregated: "hi <b> & \"q\"\n"}
	if got, want := r.StructuredText(), `{"output":"hi <b> & \"q\"\n","metadata":{"exit_code":0,"duration_seconds":0.0}}`; got != want {
		t.Errorf("structured:\n got %s\nwant %s", got, want)
	}
	if got, want := r.FreeformText(), "Exit code: 0\nWall time: 0 seconds\nOutput:\nhi <b> & \"q\"\n"; got != want {
		t.Errorf("freeform:\n got %q\nwant %q", got, want)
	}
	r = &Result{ExitCode: 3, Duration: 1260 * time.Millisecond, Aggregated: "err"}
	if got, want := r.StructuredText(), `{"output":"err","metadata":{"exit_code":3,"duration_seconds":1.3}}`; got != want {
		t.Errorf("structured:\n got %s\nwant %s", got, want)
	}
	if got, want := r.FreeformText(), "Exit code: 3\nWall time: 1.3 seconds\nOutput:\nerr"; got != want {
		t.Errorf("freeform:\n got %q\nwant %q", got, want)
	}
	r = &Result{ExitCode: 124, TimedOut: true, Duration: 2 * time.Second, Aggregated: "partial\n"}
	if got, want := r.FreeformText(), "Exit code: 124\nWall time: 2 seconds\nOutput:\ncommand timed out after 2000 milliseconds\npartial\n"; got != want {
		t.Errorf("timeout:\n got %q\nwant %q", got, want)
	}
	if got, want := r.StructuredText(), `{"output":"command timed out after 2000 milliseconds\npartial\n","metadata":{"exit_code":124,"duration_seconds":2.0}}`; got != want {
		t.Errorf("timeout:\n got %s\nwant %s", got, want)
	}
	for d, want := range map[time.Duration]string{0: "0", 40 * time.Millisecond: "0", 60 * time.Millisecond: "0.1",
		1500 * time.Millisecond: "1.5", 12 * time.Second: "12", 2960 * time.Millisecond: "3"} {
		if got := WallSeconds(d); got != want {
			t.Errorf("WallSeconds(%v) = %q, want %q", d, got, want)
		}
	}
	// A long output is cut in the middle, with the line count.
	long := strings.Repeat("0123456789abcdef\n", 5000)
	r = &Result{Aggregated: long}
	if got := r.FreeformText(); !strings.Contains(got, "Total output lines: 5000\nOutput:\n0123") || !strings.Contains(got, "tokens truncated") || len(got) > len(long) {
		t.Errorf("freeform long output: %d bytes, %q…", len(got), got[:80])
	}
	var s structuredOutput
	if err := json.Unmarshal([]byte(r.StructuredText()), &s); err != nil || !strings.HasPrefix(s.Output, "Total output lines: 5000\n\n0123") {
		t.Errorf("structured long output: %v %q…", err, s.Output[:40])
	}
}
