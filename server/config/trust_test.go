package config

import (
	"os"
	"path/filepath"
	"testing"
)

// mkGitDir makes dir look like a git directory to git: HEAD, objects and
// refs.
func mkGitDir(t *testing.T, dir string) {
	t.Helper()
	for _, sub := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TrustRoot is the repository's root, symbolic links resolved, and a
// linked worktree's main repository; a .git entry that git would not
// take for a repository (an empty directory, a file naming nothing, a
// worktree its repository does not list back) makes no root, so that a
// planted one cannot choose which directory gets trusted.
func TestTrustRoot(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := func(parts ...string) string { return filepath.Join(append([]string{tmp}, parts...)...) }

	mkGitDir(t, at("repo", ".git"))
	if err := os.MkdirAll(at("repo", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A linked worktree of repo, registered both ways.
	mkGitDir(t, at("repo", ".git"))
	writeFile(t, at("repo", ".git", "worktrees", "wt", "commondir"), "../..\n")
	writeFile(t, at("repo", ".git", "worktrees", "wt", "gitdir"), at("wt", ".git")+"\n")
	writeFile(t, at("wt", ".git"), "gitdir: "+at("repo", ".git", "worktrees", "wt")+"\n")
	// A repository kept elsewhere (a submodule's shape): its own root.
	mkGitDir(t, at("repo", ".git", "modules", "sub"))
	writeFile(t, at("sub", ".git"), "gitdir: ../repo/.git/modules/sub\n")
	// A link to the repository.
	if err := os.Symlink(at("repo"), at("link")); err != nil {
		t.Fatal(err)
	}
	// Planted: an empty .git directory; a .git file naming the
	// worktree's directory (which names wt back, not it); one naming a
	// directory that is not there.
	if err := os.MkdirAll(at("empty", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, at("fake", ".git"), "gitdir: "+at("repo", ".git", "worktrees", "wt")+"\n")
	writeFile(t, at("dangling", ".git"), "gitdir: "+at("nowhere", ".git", "worktrees", "x")+"\n")
	if err := os.MkdirAll(at("plain"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ cwd, want string }{
		{at("repo"), at("repo")},
		{at("repo", "a", "b"), at("repo")},
		{at("wt"), at("repo")},
		{at("sub"), at("sub")},
		{at("link", "a"), at("repo")},
		{at("empty"), ""},
		{at("fake"), ""},
		{at("dangling"), ""},
		{at("plain"), ""},
		{at("missing"), ""},
	} {
		if got := TrustRoot(tc.cwd); got != tc.want {
			t.Errorf("TrustRoot(%s) = %q, want %q", tc.cwd, got, tc.want)
		}
	}

	// ProjectTrust finds a rating by the cwd, as given or resolved, by
	// the nearest .git entry's directory, resolved or not, and by the
	// trust root; nothing for a planted worktree pointer.
	c := &Config{Projects: map[string]string{at("repo"): TrustTrusted, at("plain"): TrustUntrusted}}
	for _, tc := range []struct{ cwd, want string }{
		{at("wt"), TrustTrusted},
		{at("link", "a"), TrustTrusted},
		{at("plain"), TrustUntrusted},
		{at("fake"), ""},
	} {
		if got := c.ProjectTrust(tc.cwd); got != tc.want {
			t.Errorf("ProjectTrust(%s) = %q, want %q", tc.cwd, got, tc.want)
		}
	}
	c = &Config{Projects: map[string]string{at("wt"): TrustUntrusted}}
	if err := os.Symlink(at("wt"), at("wtlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(at("wt", "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := c.ProjectTrust(at("wtlink", "s")); got != TrustUntrusted {
		t.Errorf("a rated worktree through a link: %q", got)
	}
}
