package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WritableRoots returns the directories a sandboxed command may write to
// under sp, for a command running in cwd: in workspace-write mode the cwd,
// the configured roots, $TMPDIR (unless excluded) and /tmp (unless
// excluded); none in read-only mode. Paths are absolute and cleaned,
// without duplicates; relative configured roots are taken from cwd. Full
// access and external sandboxes have no roots because nothing is
// restricted.
func WritableRoots(sp SandboxPolicy, cwd string) []string {
	if sp.Mode != SandboxWorkspaceWrite {
		return nil
	}
	var roots []string
	add := func(p string) {
		if p == "" {
			return
		}
		if !filepath.IsAbs(p) {
			if cwd == "" {
				return
			}
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if !slices.Contains(roots, p) {
			roots = append(roots, p)
		}
	}
	add(cwd)
	for _, r := range sp.WritableRoots {
		add(r)
	}
	if !sp.ExcludeTmpdirEnvVar {
		add(os.Getenv("TMPDIR"))
	}
	if !sp.ExcludeSlashTmp {
		if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
			add("/tmp")
		}
	}
	return roots
}

// ReadOnlySubpaths returns the parts of a writable root that stay read-only:
// its .git directory (or file, for worktrees), so that a sandboxed command
// cannot rewrite hooks or history. Only the bubblewrap sandbox and patch
// checks can enforce this; Landlock grants whole hierarchies.
func ReadOnlySubpaths(root string) []string {
	git := filepath.Join(root, ".git")
	if _, err := os.Lstat(git); err == nil {
		return []string{git}
	}
	return nil
}

// IsWritable reports whether path (absolute) lies under one of roots and
// not inside a .git directory of that root. Symbolic links in the
// existing part of path and roots are resolved first, so a link inside
// a root cannot lead a write outside it.
func IsWritable(path string, roots []string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	p := resolveExisting(filepath.Clean(path))
	for _, r := range roots {
		rr := resolveExisting(filepath.Clean(r))
		rel, ok := relUnder(p, rr)
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rel, string(filepath.Separator))
		if first == ".git" {
			continue
		}
		return true
	}
	return false
}

// underAny reports whether path lies under one of roots, after resolving
// links as IsWritable does.
func underAny(path string, roots []string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	p := resolveExisting(filepath.Clean(path))
	for _, r := range roots {
		if _, ok := relUnder(p, resolveExisting(filepath.Clean(r))); ok {
			return true
		}
	}
	return false
}

// relUnder returns path relative to root when path is root or beneath it.
func relUnder(path, root string) (string, bool) {
	if path == root {
		return ".", true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if !strings.HasPrefix(path, prefix) {
		return "", false
	}
	return path[len(prefix):], true
}

// resolveExisting resolves symbolic links in the longest existing prefix
// of path and appends the rest unchanged: a file about to be created has
// no link of its own, but its directories may.
func resolveExisting(path string) string {
	var rest []string
	cur := path
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return path
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}
