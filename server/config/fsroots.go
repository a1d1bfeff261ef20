package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// resolveFsRoots checks the fs roots named by source (for errors) and
// returns them cleaned, with their symbolic links resolved, so that the
// checks compare real paths. A root must be an absolute path to an
// existing directory: a typo would otherwise confine the daemon to
// nothing, or to somewhere else, without a word.
func resolveFsRoots(roots []string, source string) ([]string, error) {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("%s: %q is not an absolute path", source, r)
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %q does not exist or cannot be resolved: %w", source, r, err)
		}
		st, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", source, r, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s: %q is not a directory", source, r)
		}
		out = append(out, real)
	}
	return out, nil
}
