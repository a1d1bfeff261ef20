package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultUserShellTimeout bounds a user shell command when the request
// does not say.
const DefaultUserShellTimeout = time.Hour

// UserShellRequest is a command the user typed (thread/shellCommand).
type UserShellRequest struct {
	// Command is shell syntax, run as "<shell> -lc Command".
	Command string
	Cwd     string
	// BaseEnv and Env are as in Request.
	BaseEnv []string
	Env     map[string]string
	// Timeout kills the command after this long; zero means
	// DefaultUserShellTimeout.
	Timeout time.Duration
	// Shell runs the command; the zero value means DetectShell().
	Shell    Shell
	OnOutput func(stream string, chunk []byte)
}

// RunUserShell runs a command the user typed, unsandboxed and with full
// access (the user is the one asking), through their login shell, and
// waits for it to end. Its input is /dev/null.
func (m *Manager) RunUserShell(ctx context.Context, req UserShellRequest) (*Result, error) {
	if strings.TrimSpace(req.Command) == "" {
		return nil, errors.New("exec: empty shell command")
	}
	sh := req.Shell
	if sh.Path == "" {
		sh = DetectShell()
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultUserShellTimeout
	}
	return m.Start(ctx, Request{
		Argv:     sh.Argv(req.Command, true),
		Cwd:      req.Cwd,
		BaseEnv:  req.BaseEnv,
		Env:      req.Env,
		Timeout:  timeout,
		OnOutput: req.OnOutput,
	})
}

// UserShellText is the message the model later reads about a user shell
// command, in the reference server's shape:
//
//	<user_shell_command>
//	<command>
//	ls
//	</command>
//	<result>
//	Exit code: 0
//	Duration: 0.0100 seconds
//	Output:
//	…
//	</result>
//	</user_shell_command>
//
// The output is the aggregated output cut to maxTokens (0: the default).
func UserShellText(command string, r *Result, maxTokens int) string {
	var b strings.Builder
	b.WriteString("<user_shell_command>\n<command>\n")
	b.WriteString(command)
	b.WriteString("\n</command>\n<result>\n")
	fmt.Fprintf(&b, "Exit code: %d\n", r.ExitCode)
	fmt.Fprintf(&b, "Duration: %.4f seconds\n", r.Duration.Seconds())
	b.WriteString("Output:\n")
	out := TruncateForModel(r.Aggregated, maxTokens)
	b.WriteString(out)
	if out != "" && !strings.HasSuffix(out, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("</result>\n</user_shell_command>")
	return b.String()
}
