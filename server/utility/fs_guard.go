package utility

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/protocol"
)

// systemDirs are the top-level directories of a Unix system: no fs/*
// request may remove or overwrite one of them (their contents are the
// client's business, with the daemon's rights).
var systemDirs = []string{
	"/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/lost+found",
	"/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp",
	"/usr", "/var",
}

// guard refuses destructive fs/* requests at paths whose loss would wreck
// the machine or the daemon: "/", the user's home, agentd's home, any
// ancestor of these, and the top-level system directories. It knows the
// two homes; the checks take no other state.
type guard struct {
	// protected are the homes, cleaned and with symbolic links resolved.
	protected []string
}

// newGuard protects the user's home (userHome; "" if unknown) and the
// daemon's home.
func newGuard(userHome, agentdHome string) guard {
	var g guard
	for _, h := range []string{userHome, agentdHome} {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		g.protected = append(g.protected, filepath.Clean(h))
		if r, err := filepath.EvalSymlinks(h); err == nil && r != filepath.Clean(h) {
			g.protected = append(g.protected, r)
		}
	}
	return g
}

// why says why path may not be removed (follow false) or overwritten
// (follow true), or "" when it may. It checks the path as written and as
// the file system resolves its directory: a link in the middle of the
// path leads elsewhere. A link as the last element is what a remove
// removes, but an overwrite writes through it: with follow, its target
// is checked too.
func (g guard) why(path string, follow bool) string {
	clean := filepath.Clean(path)
	candidates := []string{clean}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(clean)); err == nil {
		candidates = append(candidates, filepath.Join(dir, filepath.Base(clean)))
	}
	if full, err := filepath.EvalSymlinks(clean); err == nil && follow {
		candidates = append(candidates, full)
	}
	for _, p := range candidates {
		if p == "/" {
			return "it is the root directory"
		}
		for _, d := range systemDirs {
			if p == d {
				return "it is a top-level system directory"
			}
		}
		for _, h := range g.protected {
			switch {
			case p == h:
				return "it is a home directory (the user's or agentd's)"
			case strings.HasPrefix(h, p+"/"):
				return "it contains a home directory (the user's or agentd's)"
			}
		}
	}
	return ""
}

// check answers a refused request: -32600 naming the method, the path
// and the reason.
func (g guard) check(method, path string, follow bool) error {
	if why := g.why(path, follow); why != "" {
		return protocol.InvalidRequest("%s refuses to remove or overwrite %s: %s", method, protocol.Cut(path), why)
	}
	return nil
}

// userHome is the user's home directory, "" when unknown.
func userHome() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}
