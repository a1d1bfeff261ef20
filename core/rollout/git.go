package rollout

import (
	"bufio"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ReadGitInfo describes the git repository dir is in, or returns nil when
// it is in none. It reads .git directly (HEAD, refs, packed-refs, config)
// rather than running git: it is called on every thread creation and must
// not wait on a slow or hung process. Worktrees and submodules (a .git
// file pointing elsewhere) are followed.
func ReadGitInfo(dir string) *GitInfo {
	gitDir := findGitDir(dir)
	if gitDir == "" {
		return nil
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	info := &GitInfo{}
	if head, err := os.ReadFile(filepath.Join(gitDir, "HEAD")); err == nil {
		h := strings.TrimSpace(string(head))
		if ref, ok := strings.CutPrefix(h, "ref: "); ok {
			info.Branch = strings.TrimPrefix(ref, "refs/heads/")
			info.SHA = resolveRef(gitDir, common, ref)
		} else {
			info.SHA = h
		}
	}
	info.OriginURL = withoutCredentials(originURL(filepath.Join(common, "config")))
	return info
}

// withoutCredentials drops the credentials of a URL remote: any password,
// and an http(s) URL's whole user information (https://token@host/repo is
// a token too). They would otherwise be copied into every rollout of the
// repository. An ssh user name (ssh://git@host, git@host:repo) is kept.
func withoutCredentials(remote string) string {
	u, err := url.Parse(remote)
	if err != nil || u.User == nil || u.Host == "" {
		return remote
	}
	if _, hasPassword := u.User.Password(); hasPassword || u.Scheme == "http" || u.Scheme == "https" {
		u.User = nil
	}
	return u.String()
}

// findGitDir walks up from dir to the first .git and returns the git
// directory it names.
func findGitDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for d := abs; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		st, err := os.Stat(p)
		if err == nil {
			if st.IsDir() {
				return p
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return ""
			}
			target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !ok {
				return ""
			}
			target = strings.TrimSpace(target)
			if !filepath.IsAbs(target) {
				target = filepath.Join(d, target)
			}
			return target
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// resolveRef finds ref's commit: a loose ref in the worktree's or the
// common git dir, else a line of packed-refs.
func resolveRef(gitDir, common, ref string) string {
	for _, d := range []string{gitDir, common} {
		if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sha, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref {
			return sha
		}
	}
	return ""
}

// originURL reads remote "origin"'s url from a git config file.
func originURL(configPath string) string {
	f, err := os.Open(configPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inOrigin := false
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "[") {
			inOrigin = strings.EqualFold(strings.Join(strings.Fields(l), " "), `[remote "origin"]`)
			continue
		}
		if !inOrigin {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "url") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
