package patch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestCommitNothingWrittenWhenAFileCannotBeWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc, where nobody can create files")
	}
	dir := t.TempDir()
	before := map[string]string{"a.txt": "1\n", "b.txt": "2\n"}
	writeTree(t, dir, before)
	p := mustParse(t, patchText(
		"*** Update File: a.txt", "-1", "+one",
		"*** Delete File: b.txt",
		"*** Add File: new/dir/c.txt", "+c",
		"*** Add File: /proc/agentd-patch-test/x.txt", "+x",
	))
	_, err := p.Apply(dir, ApplyOptions{})
	if !errors.Is(err, ErrWrite) {
		t.Fatalf("Apply error = %v, want ErrWrite", err)
	}
	if !strings.Contains(err.Error(), "/proc/agentd-patch-test/x.txt: write failed: ") || !strings.Contains(err.Error(), "no file was changed") {
		t.Errorf("error text = %q", err)
	}
	if got := readTree(t, dir); !equalTrees(got, before) {
		t.Errorf("tree = %q, want it unchanged %q", got, before)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory made for the patch was left behind (stat: %v)", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("dir holds %d entries, want 2 (temporary files left?)", len(entries))
	}
}

func TestCommitNothingWrittenInReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories; see the /proc variant")
	}
	dir := t.TempDir()
	before := map[string]string{"a.txt": "1\n", "ro/b.txt": "2\n"}
	writeTree(t, dir, before)
	ro := filepath.Join(dir, "ro")
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	p := mustParse(t, patchText("*** Update File: a.txt", "-1", "+one", "*** Update File: ro/b.txt", "-2", "+two"))
	if _, err := p.Apply(dir, ApplyOptions{}); !errors.Is(err, ErrWrite) {
		t.Fatalf("Apply error = %v, want ErrWrite", err)
	}
	if got := readTree(t, dir); !equalTrees(got, before) {
		t.Errorf("tree = %q, want it unchanged", got)
	}
}

func TestCommitRollsBackWhenARenameFails(t *testing.T) {
	dir := t.TempDir()
	before := map[string]string{"a.txt": "1\n", "b.txt": "2\n", "c.txt": "3\n", "d.txt": "4\n"}
	writeTree(t, dir, before)
	if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	calls := 0
	renameFile = func(from, to string) error {
		calls++
		if calls == 3 {
			return fmt.Errorf("injected failure renaming onto %s", filepath.Base(to))
		}
		return os.Rename(from, to)
	}
	t.Cleanup(func() { renameFile = os.Rename })
	p := mustParse(t, patchText(
		"*** Update File: a.txt", "-1", "+one",
		"*** Delete File: b.txt",
		"*** Update File: c.txt", "*** Move to: moved/c.txt", "-3", "+three",
		"*** Add File: e.txt", "+e",
		"*** Update File: d.txt", "-4", "+four",
	))
	_, err := p.Apply(dir, ApplyOptions{})
	if !errors.Is(err, ErrWrite) || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("Apply error = %v, want the injected ErrWrite", err)
	}
	if calls != 3 {
		t.Errorf("renames = %d, want 3 (a.txt, moved/c.txt, then the failing e.txt)", calls)
	}
	if got := readTree(t, dir); !equalTrees(got, before) {
		t.Errorf("tree = %q, want it restored to %q", got, before)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("a.txt mode after rollback = %v (%v), want 0755", fi.Mode().Perm(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "moved")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory made for the patch was left behind (stat: %v)", err)
	}
}

func TestWritableRootsRefuse(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	outside := filepath.Join(dir, "outside")
	before := map[string]string{"root/a.txt": "a\n", "outside/b.txt": "b\n"}
	writeTree(t, dir, before)
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		patch string
		bad   string
	}{
		{"update outside", patchText("*** Update File: a.txt", "-a", "+A", "*** Update File: ../outside/b.txt", "-b", "+B"), outside + "/b.txt"},
		{"move outside", patchText("*** Update File: a.txt", "*** Move to: ../outside/a.txt"), outside + "/a.txt"},
		{"add through a symlink", patchText("*** Add File: escape/new.txt", "+x"), root + "/escape/new.txt"},
		{"delete absolute", patchText("*** Delete File: " + outside + "/b.txt"), outside + "/b.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustParse(t, tt.patch).Apply(root, ApplyOptions{WritableRoots: []string{root}})
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Apply error = %v, want ErrRefused", err)
			}
			if !strings.Contains(err.Error(), tt.bad+" is outside the writable roots") {
				t.Errorf("error text = %q, want it to name %s", err, tt.bad)
			}
			if got := readTree(t, dir); !equalTrees(got, before) {
				t.Errorf("tree changed: %q", got)
			}
		})
	}
	// Inside the root, the same check lets the patch through.
	if _, err := mustParse(t, patchText("*** Update File: a.txt", "-a", "+A", "*** Add File: sub/n.txt", "+n")).
		Apply(root, ApplyOptions{WritableRoots: []string{root}}); err != nil {
		t.Fatalf("Apply inside the root: %v", err)
	}
}

func TestCheckHookSeesEveryPathBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"})
	var seen []string
	refuse := errors.New("not this one")
	check := func(p string) error {
		seen = append(seen, p)
		if filepath.Base(p) == "d" {
			return refuse
		}
		return nil
	}
	p := mustParse(t, patchText("*** Update File: a", "-a", "+A", "*** Delete File: b", "*** Update File: c", "*** Move to: d"))
	_, err := p.Apply(dir, ApplyOptions{Check: check})
	if !errors.Is(err, ErrRefused) || !errors.Is(err, refuse) {
		t.Fatalf("Apply error = %v, want ErrRefused wrapping the hook's error", err)
	}
	want := []string{dir + "/a", dir + "/b", dir + "/c", dir + "/d"}
	if !slices.Equal(seen, want) {
		t.Errorf("check saw %q, want %q", seen, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "a\n" {
		t.Errorf("a was written before the check refused the patch")
	}
	// The same paths are available to a caller deciding on approval.
	pl, err := p.Plan(dir, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pl.Paths(), want) {
		t.Errorf("Paths = %q, want %q", pl.Paths(), want)
	}
}

func TestCommitRefusesStalePlan(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a": "a\n", "b": "b\n"})
	p := mustParse(t, patchText("*** Update File: a", "-a", "+A", "*** Update File: b", "-b", "+B"))
	pl, err := p.Plan(dir, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The user edits b while the approval request is pending.
	writeTree(t, dir, map[string]string{"b": "b\nuser edit\n"})
	_, err = pl.Commit()
	if !errors.Is(err, ErrStale) {
		t.Fatalf("Commit error = %v, want ErrStale", err)
	}
	if got := readTree(t, dir); !equalTrees(got, map[string]string{"a": "a\n", "b": "b\nuser edit\n"}) {
		t.Errorf("tree = %q", got)
	}
	// A fresh plan applies on top of the edit.
	if _, err := p.Apply(dir, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dir); !equalTrees(got, map[string]string{"a": "A\n", "b": "B\nuser edit\n"}) {
		t.Errorf("tree = %q", got)
	}
}
