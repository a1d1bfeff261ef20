package patch

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// writeTree creates files (path → content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns every regular file under dir (path → content), with
// slash-separated relative paths.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustParse(t testing.TB, text string) *Patch {
	t.Helper()
	p, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// patchText wraps body lines in the patch envelope.
func patchText(lines ...string) string {
	return "*** Begin Patch\n" + strings.Join(lines, "\n") + "\n*** End Patch\n"
}

// gitApply applies one file's unified or git diff to old with go-gitdiff,
// the independent oracle for our diffs.
func gitApply(t testing.TB, diff, old string) string {
	t.Helper()
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		t.Fatalf("gitdiff.Parse: %v\n%s", err, diff)
	}
	if len(files) != 1 {
		t.Fatalf("gitdiff.Parse: %d files, want 1\n%s", len(files), diff)
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, strings.NewReader(old), files[0]); err != nil {
		t.Fatalf("gitdiff.Apply: %v\n%s", err, diff)
	}
	return out.String()
}

// checkItemDiff checks that a fileChange diff (hunks only) turns old into
// new.
func checkItemDiff(t testing.TB, diff, old, new string) {
	t.Helper()
	if old == new {
		if diff != "" {
			t.Errorf("diff of equal contents = %q, want empty", diff)
		}
		return
	}
	if got := gitApply(t, "--- a/f\n+++ b/f\n"+diff, old); got != new {
		t.Errorf("diff applied to old = %q, want %q\ndiff:\n%s", got, new, diff)
	}
}
