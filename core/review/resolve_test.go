package review

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// repo makes a git repository in a temporary directory: main with one
// commit (a.txt), then branch feature with a second commit. It returns
// the directory and the second commit's id.
func repo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a.txt", "one\n")
	run(t, dir, "add", ".")
	run(t, dir, "commit", "-q", "-m", "first")
	run(t, dir, "checkout", "-q", "-b", "feature")
	write(t, dir, "a.txt", "one\ntwo\n")
	run(t, dir, "commit", "-q", "-am", "second change")
	return dir, strings.TrimSpace(run(t, dir, "rev-parse", "HEAD"))
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Each target gives the reviewer the changes git reports for it.
func TestResolveTargets(t *testing.T) {
	dir, second := repo(t)
	write(t, dir, "a.txt", "one\ntwo\nthree\n")
	write(t, dir, "new.txt", "brand new\n")
	ctx := context.Background()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	// From a subdirectory: git works from the repository's top.
	r, err := Resolve(ctx, sub, Target{Kind: UncommittedChanges})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hint != "current changes" || !strings.Contains(r.Changes, "+three") || strings.Contains(r.Changes, "+two") ||
		!strings.Contains(r.Changes, "+++ b/new.txt") || !strings.Contains(r.Changes, "+brand new") {
		t.Fatalf("uncommitted: %+v", r)
	}

	r, err = Resolve(ctx, dir, Target{Kind: BaseBranch, Branch: " main "})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hint != "changes against 'main'" || !strings.Contains(r.Changes, "+two") || !strings.Contains(r.Changes, "+three") ||
		!strings.Contains(r.Prompt, "'main'") {
		t.Fatalf("base branch: %+v", r)
	}

	r, err = Resolve(ctx, dir, Target{Kind: Commit, SHA: second, Title: "second change"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hint != "commit "+second[:7]+": second change" || !strings.Contains(r.Changes, "+two") || strings.Contains(r.Changes, "+three") ||
		!strings.Contains(r.Changes, "second change") || !strings.Contains(r.Prompt, second) {
		t.Fatalf("commit: %+v", r)
	}
	if r, err = Resolve(ctx, dir, Target{Kind: Commit, SHA: second[:10]}); err != nil || r.Hint != "commit "+second[:7] {
		t.Fatalf("commit without title: %+v %v", r, err)
	}

	// A custom review needs no repository.
	r, err = Resolve(ctx, t.TempDir(), Target{Kind: Custom, Instructions: "  look at a.txt\n"})
	if err != nil || r.Hint != "look at a.txt" || r.Prompt != "look at a.txt" || r.Changes != "" || r.ModelText() != "look at a.txt" {
		t.Fatalf("custom: %+v %v", r, err)
	}
}

// Before the first commit, the staged and unstaged changes are shown;
// a clean tree says so.
func TestResolveUnbornAndClean(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "staged.txt", "staged\n")
	run(t, dir, "add", ".")
	write(t, dir, "loose.txt", "loose\n")
	r, err := Resolve(context.Background(), dir, Target{Kind: UncommittedChanges})
	if err != nil || !strings.Contains(r.Changes, "+staged") || !strings.Contains(r.Changes, "+loose") {
		t.Fatalf("unborn: %+v %v", r, err)
	}
	if _, err := Resolve(context.Background(), dir, Target{Kind: BaseBranch, Branch: "main"}); err == nil {
		t.Fatal("base branch of an unborn branch resolved")
	}

	clean, _ := repo(t)
	r, err = Resolve(context.Background(), clean, Target{Kind: UncommittedChanges})
	if err != nil || !strings.Contains(r.Changes, "shows no changes") {
		t.Fatalf("clean: %+v %v", r, err)
	}
}

// Bad targets give errors that say what is wrong.
func TestResolveErrors(t *testing.T) {
	dir, _ := repo(t)
	ctx := context.Background()
	cases := []struct {
		cwd    string
		target Target
		want   string
	}{
		{t.TempDir(), Target{Kind: UncommittedChanges}, "not a git repository: "},
		{dir, Target{Kind: BaseBranch, Branch: "nope"}, "branch not found: nope"},
		{dir, Target{Kind: Commit, SHA: "deadbeef"}, "commit not found: deadbeef"},
		{dir, Target{Kind: BaseBranch, Branch: "  "}, "branch must not be empty"},
		{dir, Target{Kind: Commit, SHA: "\t"}, "sha must not be empty"},
		{dir, Target{Kind: Custom, Instructions: "\n\n"}, "instructions must not be empty"},
		{dir, Target{Kind: BaseBranch, Branch: "--output=/tmp/x"}, "must not start with '-'"},
		{dir, Target{Kind: Commit, SHA: "HEAD\nmain"}, "control character"},
		{filepath.Join(dir, "missing"), Target{Kind: UncommittedChanges}, "is not a directory"},
		{dir, Target{Kind: "everything"}, "unknown review target"},
	}
	for _, c := range cases {
		_, err := Resolve(ctx, c.cwd, c.target)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v in %s: %v, want %q", c.target, c.cwd, err, c.want)
		}
	}
	if _, err := Resolve(ctx, t.TempDir(), Target{Kind: Commit, SHA: "HEAD"}); !errors.Is(err, ErrNotRepository) {
		t.Errorf("commit outside a repository: %v", err)
	}
}

// A diff past the bound is cut at a line's end, and the reviewer is told
// how to read the rest; git is not left running.
func TestResolveCutsHugeDiff(t *testing.T) {
	dir, _ := repo(t)
	line := strings.Repeat("x", 99) + "\n"
	write(t, dir, "a.txt", strings.Repeat(line, 3*MaxDiffBytes/100))
	r, err := Resolve(context.Background(), dir, Target{Kind: UncommittedChanges})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) > MaxDiffBytes+1024 || !strings.Contains(r.Changes, "were cut at") || !strings.Contains(r.Changes, "xxx\n```") {
		t.Fatalf("cut diff: %d bytes, tail %q", len(r.Changes), r.Changes[len(r.Changes)-200:])
	}
}

// The repository's configuration cannot make the review run a program:
// no file system monitor, no external diff driver, no text conversion.
func TestResolveRunsNoRepositoryProgram(t *testing.T) {
	dir, _ := repo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran >> "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".gitattributes", "*.txt diff=evil\n")
	run(t, dir, "add", ".gitattributes")
	write(t, dir, "a.txt", "changed\n")
	// Set last: the test's own git commands do not avoid them.
	run(t, dir, "config", "core.fsmonitor", script)
	run(t, dir, "config", "diff.external", script)
	run(t, dir, "config", "diff.evil.textconv", script)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the marker exists before the review")
	}
	for _, target := range []Target{{Kind: UncommittedChanges}, {Kind: BaseBranch, Branch: "main"}, {Kind: Commit, SHA: "HEAD"}} {
		r, err := Resolve(context.Background(), dir, target)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Changes, "diff --git") {
			t.Fatalf("%v: no diff in %q", target.Kind, r.Changes)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a program of the repository's configuration ran")
	}
}

// A git that does not finish is stopped at the deadline, with what it
// started: the review's preparation does not hang on a grandchild that
// holds git's output open.
func TestGitDeadlineKillsItsGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	bin := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	fake := "#!/bin/sh\nsleep 120 &\necho $! > " + pidFile + "\nsleep 120\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, _, err := git{dir: t.TempDir(), timeout: 300 * time.Millisecond}.output(context.Background(), 1024, "status")
	if err == nil || !strings.Contains(err.Error(), "did not finish within") {
		t.Fatalf("hung git: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the fake git did not start its child: %v", err)
	}
	if pid := strings.TrimSpace(string(b)); !killedOrGone(pid) {
		t.Fatalf("git's child %s was left running", pid)
	}
}

// killedOrGone reports whether process pid has ended or has a SIGKILL
// pending (it dies when next scheduled).
func killedOrGone(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return true
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if mask, err := strconv.ParseUint(v, 16, 64); err == nil && mask&(1<<(9-1)) != 0 {
				return true
			}
		}
	}
	return false
}

// Without git, the error says so.
func TestNoGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Resolve(context.Background(), t.TempDir(), Target{Kind: UncommittedChanges}); !errors.Is(err, ErrNoGit) {
		t.Fatalf("no git: %v", err)
	}
}
