package patch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WithinRoots returns a path check (for ApplyOptions.Check) that refuses
// any path outside the given absolute directories. Symbolic links in the
// existing part of a path are resolved first, so a link inside a root that
// points outside it does not let a patch escape.
func WithinRoots(roots []string) func(absPath string) error {
	resolved := make([]string, 0, len(roots))
	for _, r := range roots {
		if filepath.IsAbs(r) {
			resolved = append(resolved, resolveExisting(filepath.Clean(r)))
		}
	}
	return func(p string) error {
		rp := resolveExisting(filepath.Clean(p))
		for _, r := range resolved {
			if within(rp, r) {
				return nil
			}
		}
		return fmt.Errorf("%s is outside the writable roots (%s)", p, strings.Join(roots, ", "))
	}
}

func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting resolves symbolic links in the longest existing prefix of
// an absolute path and appends the rest unchanged.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; {
		if _, err := os.Lstat(cur); err == nil {
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				return filepath.Join(r, rest)
			}
			return p
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
