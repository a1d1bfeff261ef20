package patch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// applyTracked plans, tracks and commits a patch, as the turn loop does.
func applyTracked(t *testing.T, tr *TurnDiffTracker, cwd, text string) {
	t.Helper()
	pl, err := mustParse(t, text).Plan(cwd, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Commit(); err != nil {
		t.Fatal(err)
	}
	tr.Track(pl)
}

func TestTurnDiffMatchesReference(t *testing.T) {
	// patch-turn.jsonl: turn/diff/updated after adding hello.txt.
	dir := t.TempDir()
	tr := NewTurnDiffTracker(dir)
	applyTracked(t, tr, dir, "*** Begin Patch\n*** Add File: hello.txt\n+hello world\n*** End Patch\n")
	got, err := tr.Diff()
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..3b18e512dba79e4c8300dd08aeb37f8e728b8dad\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hello world\n"
	if got != want {
		t.Errorf("Diff =\n%q\nwant\n%q", got, want)
	}
}

func TestTurnDiffEmptyAndNoop(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a": "a\n"})
	tr := NewTurnDiffTracker(dir)
	if d, err := tr.Diff(); err != nil || d != "" {
		t.Fatalf("Diff of an untouched turn = %q, %v", d, err)
	}
	// Changed and changed back; added and deleted again: nothing to show.
	applyTracked(t, tr, dir, patchText("*** Update File: a", "-a", "+b", "*** Add File: tmp", "+x"))
	applyTracked(t, tr, dir, patchText("*** Update File: a", "-b", "+a", "*** Delete File: tmp"))
	if d, err := tr.Diff(); err != nil || d != "" {
		t.Fatalf("Diff after undoing everything = %q, %v", d, err)
	}
}

func TestTurnDiffRelativeToGitRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(dir, "pkg", "sub")
	writeTree(t, cwd, map[string]string{"x.go": "x\n"})
	tr := NewTurnDiffTracker(cwd)
	if tr.Root() != dir {
		t.Fatalf("Root = %s, want the git root %s", tr.Root(), dir)
	}
	applyTracked(t, tr, cwd, patchText("*** Update File: x.go", "-x", "+y"))
	d, err := tr.Diff()
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/pkg/sub/x.go b/pkg/sub/x.go\nindex " + gitBlobID("x\n") + ".." + gitBlobID("y\n") + " 100644\n--- a/pkg/sub/x.go\n+++ b/pkg/sub/x.go\n@@ -1 +1 @@\n-x\n+y\n"
	if d != want {
		t.Errorf("Diff =\n%s\nwant\n%s", d, want)
	}
}

// turnScenario is a turn of several patches over a small tree.
func turnScenario(t *testing.T, dir string) (*TurnDiffTracker, map[string]string) {
	var long []string
	for i := range 40 {
		long = append(long, fmt.Sprintf("line %d", i))
	}
	before := map[string]string{
		"src/main.go": strings.Join(long, "\n") + "\n",
		"old.txt":     "to be removed\n",
		"mv/from.txt": "moving\ncontent\n",
		"same.txt":    "renamed as is\n",
		"tail.txt":    "no newline",
		"z.txt":       "z\n",
	}
	writeTree(t, dir, before)
	tr := NewTurnDiffTracker(dir)
	applyTracked(t, tr, dir, patchText(
		"*** Update File: src/main.go", "@@", " line 0", "-line 1", "+LINE 1", "@@", " line 20", "+inserted", " line 21",
		"*** Delete File: old.txt",
		"*** Add File: new/added.txt", "+fresh", "+file",
	))
	applyTracked(t, tr, dir, patchText(
		"*** Update File: src/main.go", "@@", "-line 39", "+line 39!", "*** End of File",
		"*** Update File: mv/from.txt", "*** Move to: mv/to.txt", " moving", "-content", "+contents",
		"*** Update File: same.txt", "*** Move to: renamed.txt",
		"*** Update File: tail.txt", "-no newline", "+now with one",
		"*** Update File: z.txt", "+appended",
	))
	applyTracked(t, tr, dir, patchText(
		"*** Update File: new/added.txt", " fresh", "-file", "+file, updated",
	))
	return tr, before
}

func TestTurnDiffAppliesWithGoGitdiff(t *testing.T) {
	dir := t.TempDir()
	tr, before := turnScenario(t, dir)
	d, err := tr.Diff()
	if err != nil {
		t.Fatal(err)
	}
	after := readTree(t, dir)
	files, _, err := gitdiff.Parse(strings.NewReader(d))
	if err != nil {
		t.Fatalf("gitdiff.Parse: %v\n%s", err, d)
	}
	var names []string
	for _, f := range files {
		name := f.NewName
		if f.IsDelete {
			name = f.OldName
		}
		names = append(names, name)
		var out strings.Builder
		if err := gitdiff.Apply(&out, strings.NewReader(before[f.OldName]), f); err != nil {
			t.Fatalf("%s: gitdiff.Apply: %v\n%s", name, err, d)
		}
		if want := after[f.NewName]; out.String() != want {
			t.Errorf("%s: applied = %q, want %q", name, out.String(), want)
		}
	}
	// Path order (a rename sorts by its source), renames paired.
	wantNames := "mv/to.txt new/added.txt old.txt renamed.txt src/main.go tail.txt z.txt"
	if got := strings.Join(names, " "); got != wantNames {
		t.Errorf("files = %s, want %s\n%s", got, wantNames, d)
	}
	for _, f := range files {
		switch f.NewName {
		case "mv/to.txt", "renamed.txt":
			if !f.IsRename {
				t.Errorf("%s not shown as a rename", f.NewName)
			}
		case "new/added.txt":
			if !f.IsNew {
				t.Errorf("%s not shown as new", f.NewName)
			}
		}
	}
	if !strings.Contains(d, "diff --git a/same.txt b/renamed.txt\nsimilarity index 100%\nrename from same.txt\nrename to renamed.txt\n") {
		t.Errorf("pure rename not in git's form:\n%s", d)
	}
	// Diff is deterministic.
	if d2, _ := tr.Diff(); d2 != d {
		t.Error("second Diff differs")
	}
}

// TestTurnDiffAppliesWithGit checks the aggregated diff with git itself:
// applied to a clone of the files as they were, it yields the files as they
// are.
func TestTurnDiffAppliesWithGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	tr, before := turnScenario(t, work)
	d, err := tr.Diff()
	if err != nil {
		t.Fatal(err)
	}
	check := filepath.Join(dir, "check")
	writeTree(t, check, before)
	if err := os.WriteFile(filepath.Join(dir, "turn.diff"), []byte(d), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gitBin, "apply", "--verbose", filepath.Join(dir, "turn.diff"))
	cmd.Dir = check
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\ndiff:\n%s", err, out, d)
	}
	if got, want := readTree(t, check), readTree(t, work); !equalTrees(got, want) {
		t.Errorf("git apply gave %q\nwant %q", got, want)
	}
}

func TestGitQuote(t *testing.T) {
	for in, want := range map[string]string{
		"a/plain name.txt": "a/plain name.txt",
		"a/tab\there":      `"a/tab\there"`,
		`a/q"uote`:         `"a/q\"uote"`,
		"a/ünïcode":        "a/ünïcode",
		"a/\x01":           `"a/\001"`,
	} {
		if got := gitQuote(in); got != want {
			t.Errorf("gitQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestTurnDiffChainedMovesAndDeclinedPlans(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"p.txt": "p\n", "keep.txt": "k\n"})
	tr := NewTurnDiffTracker(dir)
	// A declined plan is tracked but never committed: nothing to show.
	declined, err := mustParse(t, patchText("*** Update File: keep.txt", "-k", "+K")).Plan(dir, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Track(declined)
	applyTracked(t, tr, dir, patchText("*** Update File: p.txt", "*** Move to: q.txt", "-p", "+q"))
	applyTracked(t, tr, dir, patchText("*** Update File: q.txt", "*** Move to: sub/r.txt"))
	d, err := tr.Diff()
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/p.txt b/sub/r.txt\nrename from p.txt\nrename to sub/r.txt\nindex " + gitBlobID("p\n") + ".." + gitBlobID("q\n") +
		" 100644\n--- a/p.txt\n+++ b/sub/r.txt\n@@ -1 +1 @@\n-p\n+q\n"
	if d != want {
		t.Errorf("Diff =\n%s\nwant\n%s", d, want)
	}
	if got := gitApply(t, d, "p\n"); got != "q\n" {
		t.Errorf("applied = %q", got)
	}
}
