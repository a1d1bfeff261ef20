package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// ResolveDir makes dir absolute (relative to base), cleans it, and checks
// that it is a directory; "" means base. The error names the directory:
// "<dir>: <why>" or "<dir> is not a directory".
func ResolveDir(dir, base string) (string, error) {
	if dir == "" {
		return base, nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	dir = filepath.Clean(dir)
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return dir, nil
}
