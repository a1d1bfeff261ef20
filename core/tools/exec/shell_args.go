package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tool names of the one-shot shell tools.
const (
	ShellTool        = "shell"
	ShellCommandTool = "shell_command"
	LocalShellTool   = "local_shell"
)

// DefaultShellTimeout bounds a shell, shell_command or local_shell
// command whose call gives no timeout (the reference's 10 s).
const DefaultShellTimeout = 10 * time.Second

// ShellArgs are the parsed arguments of a shell, shell_command or
// local_shell call: one command, run to its end or its timeout.
type ShellArgs struct {
	// Argv is the command (shell, local_shell).
	Argv []string
	// Script and Login are the shell_command form: a script run through
	// the user's shell, as a login shell unless Login is false.
	Script string
	Login  bool
	// Workdir is where to run; "" for the turn's directory.
	Workdir string
	// Timeout kills the command; DefaultShellTimeout unless the call says.
	Timeout time.Duration
	// SandboxPermissions is SandboxUseDefault or SandboxRequireEscalated.
	SandboxPermissions string
	Justification      string
}

// Escalate reports whether the call asks to run outside the sandbox.
func (a ShellArgs) Escalate() bool { return a.SandboxPermissions == SandboxRequireEscalated }

// CommandArgv returns what runs: Argv, or Script through sh.
func (a ShellArgs) CommandArgv(sh Shell) []string {
	if a.Argv != nil {
		return a.Argv
	}
	return sh.Argv(a.Script, a.Login)
}

type rawShellArgs struct {
	Command            json.RawMessage `json:"command"`
	Workdir            *string         `json:"workdir"`
	Login              *bool           `json:"login"`
	TimeoutMs          json.RawMessage `json:"timeout_ms"`
	Timeout            json.RawMessage `json:"timeout"`
	SandboxPermissions *string         `json:"sandbox_permissions"`
	Justification      *string         `json:"justification"`
}

// ParseShellArgs parses the JSON arguments of the shell function:
// {"command": [argv…], "workdir"?, "timeout_ms"? (or "timeout"),
// "sandbox_permissions"?, "justification"?}. Unknown fields are ignored.
func ParseShellArgs(raw []byte) (ShellArgs, error) {
	r, err := decodeShellArgs(raw)
	if err != nil {
		return ShellArgs{}, err
	}
	a, err := r.common()
	if err != nil {
		return ShellArgs{}, err
	}
	if a.Argv, err = argvArg(r.Command); err != nil {
		return ShellArgs{}, err
	}
	return a, nil
}

// ParseShellCommandArgs parses the JSON arguments of shell_command:
// {"command": "script", "workdir"?, "login"? (default true),
// "timeout_ms"? (or "timeout"), "sandbox_permissions"?, "justification"?}.
func ParseShellCommandArgs(raw []byte) (ShellArgs, error) {
	r, err := decodeShellArgs(raw)
	if err != nil {
		return ShellArgs{}, err
	}
	a, err := r.common()
	if err != nil {
		return ShellArgs{}, err
	}
	if len(r.Command) == 0 || string(r.Command) == "null" {
		return ShellArgs{}, errors.New(`missing required argument "command" (the command line, as a string)`)
	}
	if err := json.Unmarshal(r.Command, &a.Script); err != nil {
		return ShellArgs{}, errors.New(`"command" must be a string holding the command line, e.g. "ls -la"`)
	}
	if strings.TrimSpace(a.Script) == "" {
		return ShellArgs{}, errors.New(`"command" must not be empty`)
	}
	a.Login = true
	if r.Login != nil {
		a.Login = *r.Login
	}
	return a, nil
}

func decodeShellArgs(raw []byte) (rawShellArgs, error) {
	var r rawShellArgs
	err := decodeArgs(raw, &r)
	return r, err
}

// common reads the fields every form shares.
func (r rawShellArgs) common() (ShellArgs, error) {
	a := ShellArgs{Workdir: deref(r.Workdir), Justification: deref(r.Justification), SandboxPermissions: SandboxUseDefault}
	if r.SandboxPermissions != nil && *r.SandboxPermissions != "" {
		switch *r.SandboxPermissions {
		case SandboxUseDefault, SandboxRequireEscalated:
			a.SandboxPermissions = *r.SandboxPermissions
		default:
			return ShellArgs{}, fmt.Errorf("sandbox_permissions must be %q or %q, not %q",
				SandboxUseDefault, SandboxRequireEscalated, *r.SandboxPermissions)
		}
	}
	timeout := r.TimeoutMs
	if len(timeout) == 0 || string(timeout) == "null" {
		timeout = r.Timeout
	}
	var err error
	a.Timeout, err = timeoutArg(timeout)
	return a, err
}

func timeoutArg(raw json.RawMessage) (time.Duration, error) {
	n, ok, err := numberArg("timeout_ms", raw)
	if err != nil {
		return 0, err
	}
	if !ok || n == 0 {
		return DefaultShellTimeout, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// argvArg reads the command as a non-empty array of strings.
func argvArg(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New(`missing required argument "command" (the program and its arguments, as an array of strings)`)
	}
	var argv []string
	if err := json.Unmarshal(raw, &argv); err != nil {
		return nil, errors.New(`"command" must be an array of strings (the program and its arguments), e.g. ["bash", "-lc", "ls -la"]`)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New(`"command" must name a program: it is empty`)
	}
	return argv, nil
}

// ParseLocalShellAction parses the action of a local_shell_call item:
// {"type": "exec", "command": [argv…], "working_directory"?,
// "timeout_ms"?, "env"?, "user"?}. user is ignored: commands run as the
// daemon's user.
func ParseLocalShellAction(raw []byte) (ShellArgs, error) {
	var r struct {
		Type             string          `json:"type"`
		Command          json.RawMessage `json:"command"`
		WorkingDirectory *string         `json:"working_directory"`
		TimeoutMs        json.RawMessage `json:"timeout_ms"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ShellArgs{}, errors.New(`the call has no "action"`)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return ShellArgs{}, fmt.Errorf("the action is not valid: %w", err)
	}
	if r.Type != "exec" {
		return ShellArgs{}, fmt.Errorf("unsupported action type %q: only \"exec\" is supported", r.Type)
	}
	argv, err := argvArg(r.Command)
	if err != nil {
		return ShellArgs{}, err
	}
	timeout, err := timeoutArg(r.TimeoutMs)
	if err != nil {
		return ShellArgs{}, err
	}
	return ShellArgs{Argv: argv, Workdir: deref(r.WorkingDirectory), Timeout: timeout, SandboxPermissions: SandboxUseDefault}, nil
}
