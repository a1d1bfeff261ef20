package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.json")
	if err := Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	st, _ := os.Stat(p)
	if err != nil || string(b) != "two" || st.Mode().Perm() != 0o644 {
		t.Fatalf("%q %v %v", b, err, st.Mode())
	}
	if sub, _ := os.Stat(filepath.Dir(p)); sub.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", sub.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	// A directory in the way: an error, and no temporary file left.
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "d"), []byte("x"), 0o600); err == nil {
		t.Fatal("replaced a directory")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
