package utility

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

// writeTestFile writes data at path, making its directories.
func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tree's copy merged into an existing destination never writes through
// a symbolic link already there: neither a link where a directory goes
// nor one where a file goes. What the links point at (outside the tree
// the copy was checked for) keeps its bytes.
func TestCopyTreeRefusesLinksInTheDestination(t *testing.T) {
	for _, tc := range []struct {
		name   string
		link   string // in dst, pointing into out
		target string // in out
	}{
		{"directory", "sub", "d"},
		{"file", "g.txt", "g.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			src, dst, out := filepath.Join(tmp, "src"), filepath.Join(tmp, "dst"), filepath.Join(tmp, "out")
			writeTestFile(t, filepath.Join(src, "sub", "f.txt"), "new")
			writeTestFile(t, filepath.Join(src, "g.txt"), "new")
			writeTestFile(t, filepath.Join(out, "d", "f.txt"), "old")
			writeTestFile(t, filepath.Join(out, "g.txt"), "old")
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dst, tc.link)
			if err := os.Symlink(filepath.Join(out, tc.target), link); err != nil {
				t.Fatal(err)
			}
			_, err := copyTree(context.Background(), src, dst)
			var perr *protocol.Error
			if !errors.As(err, &perr) || perr.Code != protocol.CodeInvalidRequest ||
				perr.Message != "fs/copy will not write through the symbolic link "+link+" in the destination" {
				t.Fatalf("copyTree = %v, want the refusal naming %s", err, link)
			}
			for _, p := range []string{filepath.Join(out, "d", "f.txt"), filepath.Join(out, "g.txt")} {
				if b, err := os.ReadFile(p); err != nil || string(b) != "old" {
					t.Errorf("%s = %q, %v; the copy wrote through the link", p, b, err)
				}
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link %s was replaced: %v", link, err)
			}
		})
	}
}

// The refusal does not stop an ordinary merge: existing directories are
// entered and existing files overwritten; a link in the source is copied
// as a link, replacing a link at its place in the destination.
func TestCopyTreeMergesIntoRealDirectories(t *testing.T) {
	tmp := t.TempDir()
	src, dst := filepath.Join(tmp, "src"), filepath.Join(tmp, "dst")
	writeTestFile(t, filepath.Join(src, "sub", "f.txt"), "new")
	if err := os.Symlink("sub/f.txt", filepath.Join(src, "ln")); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dst, "sub", "f.txt"), "old")
	writeTestFile(t, filepath.Join(dst, "keep.txt"), "kept")
	if err := os.Symlink("elsewhere", filepath.Join(dst, "ln")); err != nil {
		t.Fatal(err)
	}
	n, err := copyTree(context.Background(), src, dst)
	if err != nil || n != 4 {
		t.Fatalf("copyTree = %d, %v; want 4 entries", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "sub", "f.txt")); string(b) != "new" {
		t.Errorf("sub/f.txt = %q, want overwritten", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "keep.txt")); string(b) != "kept" {
		t.Errorf("keep.txt = %q, want kept", b)
	}
	if target, err := os.Readlink(filepath.Join(dst, "ln")); err != nil || !strings.HasSuffix(target, "sub/f.txt") {
		t.Errorf("ln -> %q, %v; want the source's link", target, err)
	}
}
