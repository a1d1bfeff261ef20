package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// GitTimeout bounds each git command of a review's preparation.
const GitTimeout = 30 * time.Second

// maxStderr bounds what is kept of git's error output.
const maxStderr = 4 << 10

// gitConfig is given to every git command: the repository's
// configuration must not make git run a program of the repository's
// (core.fsmonitor), and paths are shown as they are.
var gitConfig = []string{"--no-pager", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false"}

// gitEnvKeep are the variables of the daemon's environment git sees; the
// rest (credentials among them, and GIT_DIR and the like, which would
// point git elsewhere) are left out.
var gitEnvKeep = []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_CONFIG_HOME"}

// gitEnv is the environment of git commands: the variables kept, in the
// C locale (messages read the same everywhere), never prompting, never
// paging, taking no optional lock (a review does not touch the index).
func gitEnv() []string {
	env := []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "PAGER=cat"}
	for _, k := range gitEnvKeep {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// GitError is a git command that failed: its arguments and what it said.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	msg = strings.TrimPrefix(msg, "fatal: ")
	return fmt.Sprintf("git %s failed: %s", cut(strings.Join(e.Args, " ")), cut(firstLine(msg)))
}

func (e *GitError) Unwrap() error { return e.Err }

// exitCode is git's exit status, -1 when it did not exit normally.
func (e *GitError) exitCode() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ErrNoGit is returned when git cannot be run at all.
var ErrNoGit = errors.New("git is not installed (not found on PATH)")

// git runs git commands in one directory.
type git struct {
	dir string
	// timeout bounds each command (GitTimeout when zero).
	timeout time.Duration
}

// output runs git with args and returns at most limit bytes of its
// standard output, and whether there was more. Once the limit is passed
// git is killed: the rest is not needed.
func (g git) output(ctx context.Context, limit int, args ...string) ([]byte, bool, error) {
	timeout := g.timeout
	if timeout == 0 {
		timeout = GitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, gitConfig...), args...)...)
	cmd.Dir = g.dir
	cmd.Env = gitEnv()
	cmd.Stdin = nil
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 2 * time.Second
	stderr := &cappedBuffer{max: maxStderr}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, false, ErrNoGit
		}
		return nil, false, fmt.Errorf("cannot run git in %s: %w", cut(g.dir), err)
	}
	out, rerr := io.ReadAll(io.LimitReader(stdout, int64(limit)+1))
	more := len(out) > limit
	if more {
		out = out[:limit]
		cancel()
	}
	werr := cmd.Wait()
	switch {
	case more:
		return out, true, nil
	case ctx.Err() == context.DeadlineExceeded:
		return nil, false, fmt.Errorf("git %s did not finish within %v", cut(strings.Join(args, " ")), timeout)
	case werr != nil:
		return nil, false, &GitError{Args: args, Stderr: stderr.String(), Err: werr}
	case rerr != nil:
		return nil, false, rerr
	}
	return out, false, nil
}

// line runs git and returns the first line of its output, trimmed.
func (g git) line(ctx context.Context, args ...string) (string, error) {
	out, _, err := g.output(ctx, 64<<10, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(firstLine(string(out))), nil
}

// commit resolves a revision to a commit id; ok is false when the
// revision names no commit.
func (g git) commit(ctx context.Context, rev string) (sha string, ok bool, err error) {
	sha, err = g.line(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	var ge *GitError
	if errors.As(err, &ge) && ge.exitCode() == 1 {
		return "", false, nil
	}
	return sha, err == nil, err
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string { return b.buf.String() }
