package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/core/policy"
)

// Project trust levels (projects.<path>.trust_level).
const (
	TrustTrusted   = "trusted"
	TrustUntrusted = "untrusted"
)

// applyTurnKeys resolves the keys that shape the model's turns and what
// happens around them: context window, auto-compaction, verbosity,
// reasoning display, notify and project trust.
func applyTurnKeys(cfg *Config, fc *fileConfig) error {
	if v := fc.ModelContextWindow; v != nil {
		if *v <= 0 {
			return fmt.Errorf("config key `model_context_window` must be positive, got %d", *v)
		}
		cfg.ContextWindow = *v
	}
	if v := fc.ModelAutoCompactTokenLimit; v != nil {
		if *v <= 0 {
			return fmt.Errorf("config key `model_auto_compact_token_limit` must be positive, got %d", *v)
		}
		cfg.AutoCompactTokenLimit = *v
	}
	if v := fc.ModelVerbosity; v != nil {
		switch *v {
		case "low", "medium", "high":
			cfg.Verbosity = *v
		default:
			return fmt.Errorf("config key `model_verbosity`: %q is not one of low, medium, high", *v)
		}
	}
	if v := fc.ToolOutputTokenLimit; v != nil {
		if *v <= 0 || *v > 1<<30 {
			return fmt.Errorf("config key `tool_output_token_limit` must be between 1 and %d, got %d", 1<<30, *v)
		}
		cfg.ToolOutputTokenLimit = int(*v)
	}
	cfg.WebSearch = WebSearchCached
	if v := fc.WebSearch; v != nil {
		switch *v {
		case WebSearchCached, WebSearchLive, WebSearchDisabled:
			cfg.WebSearch = *v
		default:
			return fmt.Errorf("config key `web_search`: %q is not one of live, cached, disabled", *v)
		}
	}
	if fc.HideAgentReasoning != nil {
		cfg.HideAgentReasoning = *fc.HideAgentReasoning
	}
	if len(fc.Notify) > 0 {
		if fc.Notify[0] == "" {
			return fmt.Errorf("config key `notify`: the program (its first element) is empty")
		}
		cfg.Notify = fc.Notify
	}
	for path, t := range fc.Projects {
		if t.TrustLevel == nil {
			continue
		}
		switch *t.TrustLevel {
		case TrustTrusted, TrustUntrusted:
		default:
			return fmt.Errorf("config key `projects.%q.trust_level`: %q is not one of trusted, untrusted", path, *t.TrustLevel)
		}
		if !filepath.IsAbs(path) {
			return fmt.Errorf("config key `projects.%q`: the project path must be absolute", path)
		}
		if cfg.Projects == nil {
			cfg.Projects = map[string]string{}
		}
		cfg.Projects[filepath.Clean(path)] = *t.TrustLevel
	}
	cfg.approvalSet = fc.ApprovalPolicy != nil
	cfg.sandboxSet = fc.SandboxMode != nil
	return nil
}

// ProjectTrust is the trust level configured for the project of cwd: the
// entry for cwd itself (as given, then with its symbolic links
// resolved), else for the root of the git repository holding it (the
// nearest directory with a .git entry, then TrustRoot's: a linked
// worktree's main repository); "" when there is none.
func (c *Config) ProjectTrust(cwd string) string {
	if len(c.Projects) == 0 {
		return ""
	}
	cwd = filepath.Clean(cwd)
	candidates := []string{cwd, gitRoot(cwd)}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		root := gitRoot(real)
		candidates = append(candidates, real, root, trustRootOf(root))
	}
	for _, dir := range candidates {
		if level, ok := c.Projects[dir]; ok && dir != "" {
			return level
		}
	}
	return ""
}

// TrustRoot is the directory a trust level for cwd is recorded under, as
// the reference resolves it (through git): the root of the git repository
// holding cwd, symbolic links resolved, and for a linked worktree the
// main repository's root. "" when cwd is in no git repository. The .git
// entry is checked as git would, since what it says decides which
// directory is trusted and anything that can write in the workspace can
// plant one: a .git directory must be a repository (HEAD, objects, refs);
// a .git file must name one, or a worktree's directory whose commondir
// is one and whose gitdir names this .git file back.
func TrustRoot(cwd string) string {
	dir, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return ""
	}
	return trustRootOf(gitRoot(dir))
}

// trustRootOf is TrustRoot for root, the nearest directory with a .git
// entry at or above a cwd whose symbolic links are resolved ("": none).
func trustRootOf(root string) string {
	if root == "" || root == string(filepath.Separator) {
		return ""
	}
	dotGit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		if !isGitDir(dotGit) {
			return ""
		}
		return root
	case !fi.Mode().IsRegular():
		return ""
	}
	gitDir := pathIn(dotGit, "gitdir:")
	if gitDir == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
		// A submodule, or a repository kept elsewhere: its own root.
		if !isGitDir(gitDir) {
			return ""
		}
		return root
	}
	common := pathIn(filepath.Join(gitDir, "commondir"), "")
	if common == "" || !isGitDir(common) || pathIn(filepath.Join(gitDir, "gitdir"), "") != dotGit {
		return ""
	}
	if filepath.Base(common) != ".git" {
		return root // a worktree of a bare repository
	}
	return filepath.Dir(common)
}

// pathIn reads the path a git pointer file holds (after prefix, relative
// to the file's directory), with its symbolic links resolved; "" when the
// file or the path is not there.
func pathIn(file, prefix string) string {
	b, err := os.ReadFile(file)
	if err != nil || len(b) > 4096 {
		return ""
	}
	p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), prefix)
	p = strings.TrimSpace(p)
	if !ok || p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(file), p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return real
}

// isGitDir reports whether dir looks like a git directory to git: a HEAD
// file, and objects and refs directories.
func isGitDir(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// ThreadPolicies are the approval policy and sandbox a new thread in cwd
// starts with, before the client's overrides: the configured ones; where
// config.toml leaves them out, a project with a trust level gets the
// workspace-write sandbox, and an untrusted one the untrusted approval
// policy (as the reference does).
func (c *Config) ThreadPolicies(cwd string) (policy.ApprovalPolicy, policy.SandboxPolicy) {
	approval, sandbox := c.ApprovalPolicy, c.Sandbox
	level := c.ProjectTrust(cwd)
	if level != "" && !c.sandboxSet {
		sandbox.Mode = policy.SandboxWorkspaceWrite
	}
	if level == TrustUntrusted && !c.approvalSet {
		approval = policy.ApprovalUntrusted
	}
	return approval, sandbox
}

// gitRoot is the nearest directory at or above dir that holds a .git
// entry, or "".
func gitRoot(dir string) string {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
