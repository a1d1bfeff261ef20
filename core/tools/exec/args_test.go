package exec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseExecArgs(t *testing.T) {
	a, err := ParseExecArgs([]byte(`{"cmd":"ls -la","unknown_field":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Cmd != "ls -la" || !a.Login || a.TTY || a.YieldTime != DefaultExecYield || a.MaxOutputTokens != DefaultMaxOutputTokens ||
		a.SandboxPermissions != SandboxUseDefault || a.Escalate() {
		t.Fatalf("defaults: %+v", a)
	}
	a, err = ParseExecArgs([]byte(`{"cmd":"make","workdir":"/w","shell":"/bin/zsh","login":false,"tty":true,
		"yield_time_ms":"1500","max_output_tokens":2000.0,"justification":"needs network",
		"sandbox_permissions":"require_escalated","prefix_rule":["make","test"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Workdir != "/w" || a.Shell != "/bin/zsh" || a.Login || !a.TTY || a.YieldTime != 1500*time.Millisecond ||
		a.MaxOutputTokens != 2000 || a.Justification != "needs network" || !a.Escalate() || !slices.Equal(a.PrefixRule, []string{"make", "test"}) {
		t.Fatalf("all fields: %+v", a)
	}
	if got := a.Argv(Shell{Path: "/bin/bash"}); !slices.Equal(got, []string{"/bin/zsh", "-c", "make"}) {
		t.Fatalf("argv %q", got)
	}
	if a, _ := ParseExecArgs([]byte(`{"cmd":"x","yield_time_ms":1}`)); a.YieldTime != MinYield {
		t.Fatalf("yield not clamped up: %v", a.YieldTime)
	}
	if a, _ := ParseExecArgs([]byte(`{"cmd":"x","yield_time_ms":9999999}`)); a.YieldTime != MaxYield {
		t.Fatalf("yield not clamped down: %v", a.YieldTime)
	}
	for raw, want := range map[string]string{
		``:                                     `missing required argument "cmd"`,
		`{}`:                                   `missing required argument "cmd"`,
		`{"cmd":"  "}`:                         `missing required argument "cmd"`,
		`{"cmd":3}`:                            "not a valid JSON object",
		`[1]`:                                  "not a valid JSON object",
		`{"cmd":"x"`:                           "not a valid JSON object",
		`{"cmd":"x","yield_time_ms":-5}`:       "yield_time_ms is out of range",
		`{"cmd":"x","yield_time_ms":"soon"}`:   `yield_time_ms must be a number, not "soon"`,
		`{"cmd":"x","max_output_tokens":true}`: "max_output_tokens must be a number",
		`{"cmd":"x","sandbox_permissions":"root"}`: `sandbox_permissions must be "use_default" or "require_escalated"`,
	} {
		_, err := ParseExecArgs([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "exec_command: ") {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}

func TestParseWriteStdinArgs(t *testing.T) {
	a, err := ParseWriteStdinArgs([]byte(`{"session_id":7,"chars":"y\n","extra":true}`))
	if err != nil || a.SessionID != 7 || a.Chars != "y\n" || a.YieldTime != DefaultWriteYield || a.MaxOutputTokens != DefaultMaxOutputTokens {
		t.Fatalf("%+v %v", a, err)
	}
	a, err = ParseWriteStdinArgs([]byte(`{"session_id":"12","yield_time_ms":5000,"max_output_tokens":10}`))
	if err != nil || a.SessionID != 12 || a.Chars != "" || a.YieldTime != 5*time.Second || a.MaxOutputTokens != 10 {
		t.Fatalf("%+v %v", a, err)
	}
	for raw, want := range map[string]string{
		`{}`:                         `missing required argument "session_id"`,
		`{"session_id":null}`:        `missing required argument "session_id"`,
		`{"session_id":"abc"}`:       "session_id must be a number",
		`{"session_id":[1]}`:         "session_id must be a number",
		`{"session_id":1e12}`:        "session_id is out of range",
		`{"session_id":1,"chars":5}`: "not a valid JSON object",
	} {
		_, err := ParseWriteStdinArgs([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "write_stdin: ") {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}

func TestToolSpecs(t *testing.T) {
	type spec struct {
		Type       string `json:"type"`
		Name       string `json:"name"`
		Desc       string `json:"description"`
		Strict     *bool  `json:"strict"`
		Parameters struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
			Additional *bool                      `json:"additionalProperties"`
		} `json:"parameters"`
	}
	for _, c := range []struct {
		raw      json.RawMessage
		name     string
		props    []string
		required []string
	}{
		{ExecCommandSpec(), "exec_command", []string{"cmd", "justification", "login", "max_output_tokens", "prefix_rule",
			"sandbox_permissions", "shell", "tty", "workdir", "yield_time_ms"}, []string{"cmd"}},
		{WriteStdinSpec(), "write_stdin", []string{"chars", "max_output_tokens", "session_id", "yield_time_ms"}, []string{"session_id"}},
	} {
		var s spec
		if err := json.Unmarshal(c.raw, &s); err != nil {
			t.Fatal(err)
		}
		var props []string
		for k := range s.Parameters.Properties {
			props = append(props, k)
		}
		slices.Sort(props)
		if s.Type != "function" || s.Name != c.name || s.Desc == "" || s.Strict == nil || *s.Strict ||
			s.Parameters.Type != "object" || !slices.Equal(props, c.props) || !slices.Equal(s.Parameters.Required, c.required) ||
			s.Parameters.Additional == nil || *s.Parameters.Additional {
			t.Errorf("%s spec: %s", c.name, c.raw)
		}
	}
	if !strings.Contains(string(ExecCommandSpec()), `"enum":["use_default","require_escalated"]`) {
		t.Error("sandbox_permissions enum missing")
	}
}

func TestModelEnv(t *testing.T) {
	if e := ModelEnv(false); e["PAGER"] != "cat" || e["TERM"] != "dumb" || e["NO_COLOR"] != "1" {
		t.Fatalf("%v", e)
	}
	if _, ok := ModelEnv(true)["TERM"]; ok {
		t.Fatal("TERM overridden on a terminal")
	}
}
