package rollout

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestReadGitInfo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	git(t, repo, "init")
	os.WriteFile(filepath.Join(repo, "a"), []byte("a"), 0o600)
	git(t, repo, "add", "a")
	git(t, repo, "commit", "-m", "first")
	git(t, repo, "checkout", "-b", "feature/x")
	git(t, repo, "remote", "add", "origin", "https://example.com/org/repo.git")
	sub := filepath.Join(repo, "deep", "dir")
	os.MkdirAll(sub, 0o700)

	want := &GitInfo{SHA: git(t, repo, "rev-parse", "HEAD"), Branch: "feature/x", OriginURL: "https://example.com/org/repo.git"}
	if got := ReadGitInfo(sub); got == nil || *got != *want {
		t.Fatalf("loose refs: %+v, want %+v", got, want)
	}
	// Packed refs.
	git(t, repo, "pack-refs", "--all")
	if got := ReadGitInfo(repo); got == nil || *got != *want {
		t.Fatalf("packed refs: %+v, want %+v", got, want)
	}
	// A worktree: a .git file pointing at the main repository.
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, repo, "worktree", "add", "-b", "wt-branch", wt)
	got := ReadGitInfo(wt)
	if got == nil || got.Branch != "wt-branch" || got.SHA != want.SHA || got.OriginURL != want.OriginURL {
		t.Fatalf("worktree: %+v", got)
	}
	// Detached HEAD.
	git(t, repo, "checkout", "--detach")
	if got := ReadGitInfo(repo); got == nil || got.Branch != "" || got.SHA != want.SHA {
		t.Fatalf("detached: %+v", got)
	}
	// Not a repository.
	if got := ReadGitInfo(t.TempDir()); got != nil {
		t.Fatalf("outside a repository: %+v", got)
	}
}

func TestCreateRecordsGitInfo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	git(t, repo, "init")
	git(t, repo, "commit", "--allow-empty", "-m", "x")
	s, err := Open(t.TempDir(), Options{Version: "9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := testCtx(t)
	m := testMeta("t-git", baseTime)
	m.Cwd, m.CLIVersion = repo, ""
	r, err := s.Create(m)
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t1", prompt: "p", end: "completed"})
	r.Close(ctx)
	th := mustRead(t, r.Path(), ReadOptions{})
	if th.Meta.Git == nil || th.Meta.Git.Branch != "main" || th.Meta.Git.SHA != git(t, repo, "rev-parse", "HEAD") {
		t.Fatalf("git %+v", th.Meta.Git)
	}
	if th.Meta.CLIVersion != "9.9.9" {
		t.Fatalf("cliVersion %q", th.Meta.CLIVersion)
	}
}

// A token in a remote's URL is not copied into the rollout's git info;
// the rest of the URL, and scp-like remotes, are kept.
func TestGitOriginWithoutCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"https://x-access-token:ghp_secret123@github.com/org/repo.git": "https://github.com/org/repo.git",
		"https://ghp_secret123@github.com/org/repo.git":                "https://github.com/org/repo.git",
		"git@github.com:org/repo.git":                                  "git@github.com:org/repo.git",
		"ssh://git@example.com/org/repo.git":                           "ssh://git@example.com/org/repo.git",
		"ssh://git:pw@example.com/org/repo.git":                        "ssh://example.com/org/repo.git",
		"https://example.com/org/repo.git":                             "https://example.com/org/repo.git",
		"/srv/git/repo.git":                                            "/srv/git/repo.git",
	} {
		if got := withoutCredentials(in); got != want {
			t.Errorf("withoutCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}
