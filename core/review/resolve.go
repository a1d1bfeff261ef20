package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Limits of what a review request carries to the model.
const (
	// MaxDiffBytes bounds the changes sent with the reviewer's task
	// (about 32,000 tokens); the reviewer is told how to read the rest.
	MaxDiffBytes = 128 << 10
	// maxUntrackedFiles bounds the untracked files shown; maxUntrackedFile
	// bounds the part of each one shown.
	maxUntrackedFiles = 200
	maxUntrackedFile  = 32 << 10
	// maxListing bounds the listing of untracked paths read from git.
	maxListing = 1 << 20
)

// Request is a resolved review: what the user asked for, and what the
// reviewer is given.
type Request struct {
	Target Target
	// Hint is the label clients show (the enteredReviewMode item).
	Hint string
	// Prompt is the reviewer's task, shown as its user message.
	Prompt string
	// Changes is what the reviewer reads besides the prompt: the diff git
	// reports, framed; "" for a custom review.
	Changes string
}

// ModelText is the reviewer's whole task: the prompt, then the changes.
func (r Request) ModelText() string {
	if r.Changes == "" {
		return r.Prompt
	}
	return r.Prompt + "\n\n" + r.Changes
}

// Resolve checks the target and computes what the reviewer needs with git
// in cwd. A custom review needs no repository. The errors name the
// problem plainly: no repository, an unknown branch or commit, git
// missing or failing.
func Resolve(ctx context.Context, cwd string, t Target) (Request, error) {
	if err := t.Validate(); err != nil {
		return Request{}, err
	}
	t.Branch, t.SHA, t.Title = strings.TrimSpace(t.Branch), strings.TrimSpace(t.SHA), strings.TrimSpace(t.Title)
	req := Request{Target: t, Hint: t.Hint()}
	if t.Kind == Custom {
		req.Prompt = strings.TrimSpace(t.Instructions)
		return req, nil
	}
	g, err := repository(ctx, cwd)
	if err != nil {
		return Request{}, err
	}
	switch t.Kind {
	case BaseBranch:
		err = g.baseBranch(ctx, &req)
	case Commit:
		err = g.commitChanges(ctx, &req)
	default:
		err = g.uncommitted(ctx, &req)
	}
	if err != nil {
		return Request{}, err
	}
	return req, nil
}

// ErrNotRepository is returned when the working directory is in no git
// repository.
var ErrNotRepository = errors.New("not a git repository")

// repository finds the top of the repository cwd is in; git runs there,
// so that paths are the repository's whatever the thread's directory.
func repository(ctx context.Context, cwd string) (git, error) {
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return git{}, fmt.Errorf("the thread's working directory %s is not a directory", cut(cwd))
	}
	top, err := git{dir: cwd}.line(ctx, "rev-parse", "--show-toplevel")
	var ge *GitError
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
		return git{}, fmt.Errorf("%w: %s", ErrNotRepository, cut(cwd))
	}
	if err != nil {
		return git{}, err
	}
	if top == "" {
		// A bare repository has no working tree to review.
		return git{}, fmt.Errorf("%w (no working tree): %s", ErrNotRepository, cut(cwd))
	}
	return git{dir: top}, nil
}

// diffArgs are the options of every diff: plain text, git's own diff.
var diffArgs = []string{"--no-color", "--no-ext-diff", "--no-textconv"}

func (g git) diff(ctx context.Context, limit int, args ...string) (string, bool, error) {
	out, more, err := g.output(ctx, limit, append(append([]string{"diff"}, diffArgs...), args...)...)
	return string(out), more, err
}

// uncommitted: the working tree against HEAD (against nothing before the
// first commit), and the untracked files.
func (g git) uncommitted(ctx context.Context, req *Request) error {
	req.Prompt = "Review the uncommitted changes in this repository: staged, unstaged and untracked files."
	_, born, err := g.commit(ctx, "HEAD")
	if err != nil {
		return err
	}
	var d diffText
	cmd := "git diff HEAD"
	if born {
		text, more, err := g.diff(ctx, MaxDiffBytes, "HEAD", "--")
		if err != nil {
			return err
		}
		d.add(text, more)
	} else {
		cmd = "git diff --cached; git diff"
		for _, args := range [][]string{{"--cached", "--"}, {"--"}} {
			text, more, err := g.diff(ctx, d.room(), args...)
			if err != nil {
				return err
			}
			d.add(text, more)
		}
	}
	if err := g.untracked(ctx, &d); err != nil {
		return err
	}
	req.Changes = d.frame(cmd+", and the untracked files", "git status; git diff HEAD")
	return nil
}

// untracked adds the untracked files (not ignored) as additions.
func (g git) untracked(ctx context.Context, d *diffText) error {
	out, _, err := g.output(ctx, maxListing, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return err
	}
	names := strings.Split(string(out), "\x00")
	shown := 0
	for _, name := range names {
		if name == "" || d.cut {
			continue
		}
		if shown == maxUntrackedFiles {
			d.add(fmt.Sprintf("(more untracked files are not shown: %d in all)\n", len(names)-1), false)
			break
		}
		shown++
		text, more := untrackedFile(g.dir, name)
		d.add(text, more)
	}
	return nil
}

// untrackedFile shows a new file as a diff that adds it: a regular
// file's text (up to maxUntrackedFile), or a line saying what it is.
func untrackedFile(dir, name string) (string, bool) {
	head := fmt.Sprintf("diff --git a/%s b/%s\nnew file (untracked)\n", name, name)
	p := filepath.Join(dir, filepath.FromSlash(name))
	st, err := os.Lstat(p)
	switch {
	case err != nil:
		return head + "(cannot be read)\n", false
	case !st.Mode().IsRegular():
		return head + "(not a regular file)\n", false
	}
	f, err := os.Open(p)
	if err != nil {
		return head + "(cannot be read)\n", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxUntrackedFile+1))
	if err != nil {
		return head + "(cannot be read)\n", false
	}
	if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return head + "Binary file\n", false
	}
	more := len(b) > maxUntrackedFile
	if more {
		b = b[:maxUntrackedFile]
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var sb strings.Builder
	sb.WriteString(head)
	fmt.Fprintf(&sb, "--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", name, len(lines))
	for _, l := range lines {
		sb.WriteString("+")
		sb.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			sb.WriteString("\n")
		}
	}
	if more {
		fmt.Fprintf(&sb, "(the file goes on past %d bytes)\n", maxUntrackedFile)
	}
	return sb.String(), false
}

// baseBranch: the working tree against the merge base of HEAD and the
// base branch (its upstream when it has one, as it is the more recent).
func (g git) baseBranch(ctx context.Context, req *Request) error {
	branch := req.Target.Branch
	base, ok, err := g.commit(ctx, branch)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("branch not found: %s", cut(branch))
	}
	if up, ok, err := g.commit(ctx, branch+"@{upstream}"); err == nil && ok {
		base = up
	}
	if _, born, err := g.commit(ctx, "HEAD"); err != nil {
		return err
	} else if !born {
		return errors.New("the current branch has no commit yet")
	}
	mb, err := g.line(ctx, "merge-base", "HEAD", base)
	var ge *GitError
	if errors.As(err, &ge) && ge.exitCode() == 1 {
		return fmt.Errorf("the current branch and %s have no common ancestor", cut(branch))
	}
	if err != nil {
		return err
	}
	req.Prompt = fmt.Sprintf("Review the changes of the current branch against the base branch '%s' (merge base %s).", branch, mb)
	text, more, err := g.diff(ctx, MaxDiffBytes, mb, "--")
	if err != nil {
		return err
	}
	var d diffText
	d.add(text, more)
	cmd := "git diff " + mb
	req.Changes = d.frame(cmd, cmd)
	return nil
}

// commitChanges: what the commit changed (against its first parent), with
// its message.
func (g git) commitChanges(ctx context.Context, req *Request) error {
	sha, ok, err := g.commit(ctx, req.Target.SHA)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("commit not found: %s", cut(req.Target.SHA))
	}
	if req.Target.Title != "" {
		req.Prompt = fmt.Sprintf("Review the changes introduced by commit %s (%q).", sha, req.Target.Title)
	} else {
		req.Prompt = fmt.Sprintf("Review the changes introduced by commit %s.", sha)
	}
	out, more, err := g.output(ctx, MaxDiffBytes, append(append([]string{"show"}, diffArgs...), "--diff-merges=first-parent", "--format=medium", sha, "--")...)
	if err != nil {
		return err
	}
	var d diffText
	d.add(string(out), more)
	cmd := "git show " + sha
	req.Changes = d.frame(cmd, cmd)
	return nil
}

// diffText gathers diff output up to MaxDiffBytes.
type diffText struct {
	b   strings.Builder
	cut bool
}

// room is what may still be added.
func (d *diffText) room() int { return max(0, MaxDiffBytes-d.b.Len()) }

// add appends s (more: its source had more), cutting at the bound, at a
// line's end when there is one.
func (d *diffText) add(s string, more bool) {
	if d.cut {
		return
	}
	if len(s) > d.room() {
		s, more = s[:d.room()], true
	}
	if more {
		d.cut = true
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			s = s[:i+1]
		}
		s = strings.ToValidUTF8(s, "")
	}
	d.b.WriteString(s)
}

// frame presents the diff to the reviewer: what produced it, the text,
// and, when it was cut, how to read the rest.
func (d *diffText) frame(source, rest string) string {
	if d.b.Len() == 0 {
		return fmt.Sprintf("`%s` shows no changes.", source)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "The changes (%s):\n\n```diff\n%s", source, d.b.String())
	if !strings.HasSuffix(d.b.String(), "\n") {
		sb.WriteString("\n")
	}
	sb.WriteString("```")
	if d.cut {
		fmt.Fprintf(&sb, "\n\nThe changes were cut at %d bytes. Run `%s` to read the rest.", MaxDiffBytes, rest)
	}
	return sb.String()
}
