package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentd-dev/agentd/protocol"
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
	// The error names the directory once, cut: a client may have sent it.
	st, err := os.Stat(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s: %w", protocol.Cut(dir), err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", protocol.Cut(dir))
	}
	return dir, nil
}
