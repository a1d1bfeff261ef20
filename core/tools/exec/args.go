package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Bounds of the tool arguments.
const (
	DefaultExecYield  = 10 * time.Second
	DefaultWriteYield = 250 * time.Millisecond
	MinYield          = 250 * time.Millisecond
	MaxYield          = 30 * time.Second
)

// sandbox_permissions values.
const (
	SandboxUseDefault       = "use_default"
	SandboxRequireEscalated = "require_escalated"
)

// ExecArgs are the parsed arguments of an exec_command call.
type ExecArgs struct {
	Cmd     string
	Workdir string
	// Shell overrides the user's shell for this call.
	Shell string
	// Login runs a login shell ("-lc"); true unless the call says false.
	Login           bool
	TTY             bool
	YieldTime       time.Duration
	MaxOutputTokens int
	Justification   string
	// SandboxPermissions is SandboxUseDefault or SandboxRequireEscalated.
	SandboxPermissions string
	// PrefixRule is the command prefix the model suggests approving for
	// the session along with this command.
	PrefixRule []string
}

// Escalate reports whether the call asks to run outside the sandbox.
func (a ExecArgs) Escalate() bool { return a.SandboxPermissions == SandboxRequireEscalated }

// Argv returns the command line for the call, through a.Shell or def.
func (a ExecArgs) Argv(def Shell) []string {
	sh := def
	if a.Shell != "" {
		sh = Shell{Path: a.Shell}
	}
	return sh.Argv(a.Cmd, a.Login)
}

// WriteStdinArgs are the parsed arguments of a write_stdin call.
type WriteStdinArgs struct {
	SessionID       int
	Chars           string
	YieldTime       time.Duration
	MaxOutputTokens int
}

type rawExecArgs struct {
	Cmd                *string         `json:"cmd"`
	Workdir            *string         `json:"workdir"`
	Shell              *string         `json:"shell"`
	Login              *bool           `json:"login"`
	TTY                *bool           `json:"tty"`
	YieldTimeMs        json.RawMessage `json:"yield_time_ms"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	Justification      *string         `json:"justification"`
	SandboxPermissions *string         `json:"sandbox_permissions"`
	PrefixRule         []string        `json:"prefix_rule"`
}

// ParseExecArgs parses the JSON arguments of exec_command. Unknown fields
// are ignored; cmd is required. Yield times are clamped to
// [MinYield, MaxYield].
func ParseExecArgs(raw []byte) (ExecArgs, error) {
	var r rawExecArgs
	if err := decodeArgs(raw, &r); err != nil {
		return ExecArgs{}, fmt.Errorf("exec_command: %w", err)
	}
	if r.Cmd == nil || strings.TrimSpace(*r.Cmd) == "" {
		return ExecArgs{}, errors.New(`exec_command: missing required argument "cmd"`)
	}
	a := ExecArgs{Cmd: *r.Cmd, Login: true, SandboxPermissions: SandboxUseDefault, PrefixRule: r.PrefixRule}
	a.Workdir = deref(r.Workdir)
	a.Shell = deref(r.Shell)
	a.Justification = deref(r.Justification)
	if r.Login != nil {
		a.Login = *r.Login
	}
	if r.TTY != nil {
		a.TTY = *r.TTY
	}
	if r.SandboxPermissions != nil && *r.SandboxPermissions != "" {
		switch *r.SandboxPermissions {
		case SandboxUseDefault, SandboxRequireEscalated:
			a.SandboxPermissions = *r.SandboxPermissions
		default:
			return ExecArgs{}, fmt.Errorf("exec_command: sandbox_permissions must be %q or %q, not %q",
				SandboxUseDefault, SandboxRequireEscalated, *r.SandboxPermissions)
		}
	}
	var err error
	if a.YieldTime, err = yieldArg("yield_time_ms", r.YieldTimeMs, DefaultExecYield); err != nil {
		return ExecArgs{}, fmt.Errorf("exec_command: %w", err)
	}
	if a.MaxOutputTokens, err = intArg("max_output_tokens", r.MaxOutputTokens, DefaultMaxOutputTokens); err != nil {
		return ExecArgs{}, fmt.Errorf("exec_command: %w", err)
	}
	return a, nil
}

type rawWriteStdinArgs struct {
	SessionID       json.RawMessage `json:"session_id"`
	Chars           *string         `json:"chars"`
	YieldTimeMs     json.RawMessage `json:"yield_time_ms"`
	MaxOutputTokens json.RawMessage `json:"max_output_tokens"`
}

// ParseWriteStdinArgs parses the JSON arguments of write_stdin. Unknown
// fields are ignored; session_id is required.
func ParseWriteStdinArgs(raw []byte) (WriteStdinArgs, error) {
	var r rawWriteStdinArgs
	if err := decodeArgs(raw, &r); err != nil {
		return WriteStdinArgs{}, fmt.Errorf("write_stdin: %w", err)
	}
	if len(r.SessionID) == 0 || string(r.SessionID) == "null" {
		return WriteStdinArgs{}, errors.New(`write_stdin: missing required argument "session_id"`)
	}
	id, err := intArg("session_id", r.SessionID, 0)
	if err != nil {
		return WriteStdinArgs{}, fmt.Errorf("write_stdin: %w", err)
	}
	a := WriteStdinArgs{SessionID: id, Chars: deref(r.Chars)}
	if a.YieldTime, err = yieldArg("yield_time_ms", r.YieldTimeMs, DefaultWriteYield); err != nil {
		return WriteStdinArgs{}, fmt.Errorf("write_stdin: %w", err)
	}
	if a.MaxOutputTokens, err = intArg("max_output_tokens", r.MaxOutputTokens, DefaultMaxOutputTokens); err != nil {
		return WriteStdinArgs{}, fmt.Errorf("write_stdin: %w", err)
	}
	return a, nil
}

func decodeArgs(raw []byte, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("arguments are not a valid JSON object: %w", err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// numberArg reads a JSON number, or a string holding one (models send
// both), as a non-negative integer.
func numberArg(name string, raw json.RawMessage) (int64, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false, fmt.Errorf("%s must be a number", name)
		}
		if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return 0, false, fmt.Errorf("%s must be a number, not %q", name, s)
		}
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt32 {
		return 0, false, fmt.Errorf("%s is out of range", name)
	}
	return int64(f), true, nil
}

func intArg(name string, raw json.RawMessage, def int) (int, error) {
	n, ok, err := numberArg(name, raw)
	if err != nil || !ok {
		return def, err
	}
	return int(n), nil
}

func yieldArg(name string, raw json.RawMessage, def time.Duration) (time.Duration, error) {
	n, ok, err := numberArg(name, raw)
	if err != nil {
		return 0, err
	}
	d := def
	if ok {
		d = time.Duration(n) * time.Millisecond
	}
	return min(max(d, MinYield), MaxYield), nil
}
