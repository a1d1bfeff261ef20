package utility

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentd-dev/agentd/protocol"
)

// roots are the fs roots of the configuration in use: a reload (SIGHUP, a
// config write) changes them for the next request.
func (u *utility) roots() fsRoots {
	if cfg := u.config(); cfg != nil {
		return fsRoots{roots: cfg.FsRoots}
	}
	return fsRoots{}
}

// fsRoots confines the fs/* methods, fuzzyFileSearch and command/exec's
// cwd to the trees of [fs] roots (or --fs-root). A path is allowed when
// the place the system will act on, symbolic links resolved, lies in one
// of them. No roots: everything is allowed, as in the reference.
//
// The check is made before the operation: it keeps clients to their
// trees, but it is not a sandbox against a process that swaps links in
// those trees at the same moment (and a command a client runs can go
// anywhere its sandbox lets it).
type fsRoots struct {
	// roots are absolute, cleaned and resolved (config.Config.FsRoots).
	roots []string
}

// maxLinks bounds the symbolic links followed while resolving one path,
// as the kernel bounds them (ELOOP).
const maxLinks = 40

// errTooManyLinks is a path whose links do not end.
var errTooManyLinks error = syscall.ELOOP

// resolvePath returns where the system takes the absolute path: every
// symbolic link resolved, the last element's too when follow (an open, a
// write) and not when it is the link itself that is acted on (a remove).
// "." and ".." are taken in order, after the links before them, as the
// kernel takes them. Elements that do not exist yet are taken as the
// directories or file the operation will make (so a new file, or
// createDirectory's missing parents, are checked where they will be).
// A dangling link is followed to where its target would be made.
func resolvePath(path string, follow bool) (string, error) {
	if !filepath.IsAbs(path) {
		return "", errors.New("not an absolute path")
	}
	todo := splitPath(path)
	cur := "/"
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		st, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			cur = next
			continue
		case err != nil:
			return "", err
		case st.Mode()&fs.ModeSymlink == 0 || (len(todo) == 0 && !follow):
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", errTooManyLinks
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(splitPath(target), todo...)
	}
	return cur, nil
}

// splitPath returns the elements of a path, without empty ones; a path
// that ends in "/" ends in "." (the kernel follows a last link then).
func splitPath(path string) []string {
	var out []string
	for e := range strings.SplitSeq(path, "/") {
		if e != "" {
			out = append(out, e)
		}
	}
	if strings.HasSuffix(path, "/") && len(out) > 0 {
		out = append(out, ".")
	}
	return out
}

// allows reports whether path, resolved (resolvePath), lies in a root;
// an error says why it could not be resolved.
func (r fsRoots) allows(path string, follow bool) (bool, error) {
	if len(r.roots) == 0 {
		return true, nil
	}
	real, err := resolvePath(path, follow)
	if err != nil {
		return false, err
	}
	for _, root := range r.roots {
		if within(real, root) {
			return true, nil
		}
	}
	return false, nil
}

// check answers a request for path that the roots do not allow: -32600
// naming the method and the path (cut).
func (r fsRoots) check(method, path string, follow bool) error {
	ok, err := r.allows(path, follow)
	switch {
	case err != nil:
		return protocol.InvalidRequest("%s refuses %s: it cannot be resolved within the fs roots: %s", method, protocol.Cut(path), osErrorText(err))
	case !ok:
		return protocol.InvalidRequest("%s refuses %s: it is outside the fs roots", method, protocol.Cut(path))
	}
	return nil
}
