package patch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// applyCase applies a patch to files in a temp dir and compares the tree.
type applyCase struct {
	name  string
	files map[string]string
	patch string
	opts  ApplyOptions
	want  map[string]string // the whole tree after
	err   error             // expected error (errors.Is); tree must be unchanged
	msg   string            // expected substring of the error text
}

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			p := mustParse(t, tc.patch)
			res, err := p.Apply(dir, tc.opts)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Apply error = %v, want %v", err, tc.err)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error text = %q, want it to contain %q", err.Error(), tc.msg)
				}
				if got := readTree(t, dir); !equalTrees(got, tc.files) {
					t.Errorf("tree changed after a failed patch: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := readTree(t, dir); !equalTrees(got, tc.want) {
				t.Errorf("tree = %q\nwant   %q", got, tc.want)
			}
			// Every update diff must turn the old content into the new.
			for _, c := range res.Changes {
				if c.Kind != KindUpdate {
					continue
				}
				rel, _ := filepath.Rel(dir, c.Path)
				newRel := rel
				if c.MovePath != "" {
					newRel, _ = filepath.Rel(dir, c.MovePath)
				}
				if old, ok := tc.files[rel]; ok && len(p.Ops) == 1 {
					checkItemDiff(t, c.Diff, old, tc.want[newRel])
				}
			}
		})
	}
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestApplyMatching(t *testing.T) {
	code := "package x\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	runApplyCases(t, []applyCase{
		{
			name:  "exact",
			files: map[string]string{"f.txt": "one\ntwo\nthree\n"},
			patch: patchText("*** Update File: f.txt", "@@", " one", "-two", "+TWO", " three"),
			want:  map[string]string{"f.txt": "one\nTWO\nthree\n"},
		},
		{
			name:  "trailing whitespace in the file is ignored and kept",
			files: map[string]string{"f.txt": "one  \ntwo\t\nthree\n"},
			patch: patchText("*** Update File: f.txt", " one", "-two", "+TWO"),
			want:  map[string]string{"f.txt": "one  \nTWO\nthree\n"},
		},
		{
			name:  "surrounding whitespace is ignored and the file's context kept",
			files: map[string]string{"f.txt": "    one\n  two\nthree\n"},
			patch: patchText("*** Update File: f.txt", " one", "-two", "+  TWO"),
			want:  map[string]string{"f.txt": "    one\n  TWO\nthree\n"},
		},
		{
			name:  "typographic punctuation folded",
			files: map[string]string{"f.txt": "say \u201chi\u201d \u2014 it\u2019s\u00a0fine\nend\n"},
			patch: patchText("*** Update File: f.txt", "-say \"hi\" - it's fine", "+say hello"),
			want:  map[string]string{"f.txt": "say hello\nend\n"},
		},
		{
			name:  "typographic punctuation not folded when strict",
			files: map[string]string{"f.txt": "say \u201chi\u201d\n"},
			patch: patchText("*** Update File: f.txt", "-say \"hi\"", "+say hello"),
			opts:  ApplyOptions{StrictPunctuation: true},
			err:   ErrContextNotFound,
			msg:   "f.txt: hunk 1 (patch line 3): context not found: could not find these lines:\nsay \"hi\"\n",
		},
		{
			name:  "exact match preferred over a whitespace-insensitive one",
			files: map[string]string{"f.txt": " x\nx\n"},
			patch: patchText("*** Update File: f.txt", "-x", "+y"),
			want:  map[string]string{"f.txt": " x\ny\n"},
		},
		{
			name:  "ambiguous context refused",
			files: map[string]string{"x.go": code},
			patch: patchText("*** Update File: x.go", "-\treturn 1", "+\treturn 2"),
			err:   ErrAmbiguous,
			msg:   "x.go: hunk 1 (patch line 3): ambiguous context: these lines occur more than once (at lines 4 and 8):\n\treturn 1\nadd unchanged lines",
		},
		{
			name:  "ambiguity resolved by an @@ header",
			files: map[string]string{"x.go": code},
			patch: patchText("*** Update File: x.go", "@@ func b() {", "-\treturn 1", "+\treturn 2"),
			want:  map[string]string{"x.go": strings.Replace(code, "b() {\n\treturn 1", "b() {\n\treturn 2", 1)},
		},
		{
			name:  "ambiguity resolved by more context",
			files: map[string]string{"x.go": code},
			patch: patchText("*** Update File: x.go", " func a() {", "-\treturn 1", "+\treturn 0"),
			want:  map[string]string{"x.go": strings.Replace(code, "\treturn 1", "\treturn 0", 1)},
		},
		{
			name:  "nested @@ headers",
			files: map[string]string{"f.py": "class A:\n  def f():\n    pass\nclass B:\n  def f():\n    pass\n"},
			patch: patchText("*** Update File: f.py", "@@ class B:", "@@   def f():", "-    pass", "+    return 1"),
			want:  map[string]string{"f.py": "class A:\n  def f():\n    pass\nclass B:\n  def f():\n    return 1\n"},
		},
		{
			name:  "@@ header that repeats as the first context line",
			files: map[string]string{"x.go": code},
			patch: patchText("*** Update File: x.go", "@@ func b() {", " func b() {", "-\treturn 1", "+\treturn 3"),
			want:  map[string]string{"x.go": strings.Replace(code, "b() {\n\treturn 1", "b() {\n\treturn 3", 1)},
		},
		{
			name:  "missing @@ line",
			files: map[string]string{"x.go": code},
			patch: patchText("*** Update File: x.go", "@@ func c() {", "-\treturn 1", "+\treturn 2"),
			err:   ErrContextNotFound,
			msg:   "context not found: could not find the '@@' line 'func c() {'",
		},
		{
			name:  "end of file anchors to the last occurrence",
			files: map[string]string{"f": "}\nx\n}\n"},
			patch: patchText("*** Update File: f", " }", "+// end", "*** End of File"),
			want:  map[string]string{"f": "}\nx\n}\n// end\n"},
		},
		{
			name:  "end of file with lines that are not at the end",
			files: map[string]string{"f": "a\nb\nc\n"},
			patch: patchText("*** Update File: f", "-a", "+A", "*** End of File"),
			err:   ErrContextNotFound,
			msg:   "could not find these lines at the end of the file:\na\n",
		},
		{
			name:  "multiple hunks, searched forward",
			files: map[string]string{"f": "a\nx\nb\nx\nc\n"},
			patch: patchText("*** Update File: f", "@@", " a", "-x", "+1", "@@", " b", "-x", "+2"),
			want:  map[string]string{"f": "a\n1\nb\n2\nc\n"},
		},
		{
			name:  "second hunk unique after the first",
			files: map[string]string{"f": "x\na\nx\nb\n"},
			patch: patchText("*** Update File: f", "@@", " a", "+after a", "@@", "-x", "+X"),
			want:  map[string]string{"f": "x\na\nafter a\nX\nb\n"},
		},
		{
			name:  "hunks out of order",
			files: map[string]string{"f": "a\nb\nc\nd\n"},
			patch: patchText("*** Update File: f", "@@", "-c", "+C", "@@", "-a", "+A"),
			err:   ErrContextNotFound,
			msg:   "hunk 2 (patch line 6): context not found: could not find these lines after the previous hunk:\na\nthey are at line 1, before the previous match",
		},
		{
			name:  "pure insertion after an @@ line",
			files: map[string]string{"f": "a\nb\n"},
			patch: patchText("*** Update File: f", "@@ a", "+inserted"),
			want:  map[string]string{"f": "a\ninserted\nb\n"},
		},
		{
			name:  "pure insertion without header appends",
			files: map[string]string{"f": "a\nb"},
			patch: patchText("*** Update File: f", "+c"),
			want:  map[string]string{"f": "a\nb\nc\n"},
		},
		{
			name:  "trailing blank context the file does not have",
			files: map[string]string{"f": "a\nb\n"},
			patch: patchText("*** Update File: f", " a", "-b", "+B", " "),
			want:  map[string]string{"f": "a\nB\n"},
		},
		{
			name:  "missing final newline kept when the end is untouched",
			files: map[string]string{"f": "a\nb\nc"},
			patch: patchText("*** Update File: f", "-a", "+A", " b"),
			want:  map[string]string{"f": "A\nb\nc"},
		},
		{
			name:  "missing final newline kept for a kept last line",
			files: map[string]string{"f": "a\nb"},
			patch: patchText("*** Update File: f", "-a", "+A", " b"),
			want:  map[string]string{"f": "A\nb"},
		},
		{
			name:  "new last line gets a newline",
			files: map[string]string{"f": "a\nb"},
			patch: patchText("*** Update File: f", " a", "-b", "+B"),
			want:  map[string]string{"f": "a\nB\n"},
		},
		{
			name:  "removing the last line of a file without final newline",
			files: map[string]string{"f": "a\nb"},
			patch: patchText("*** Update File: f", " a", "-b"),
			want:  map[string]string{"f": "a\n"},
		},
		{
			name:  "CRLF file stays CRLF",
			files: map[string]string{"f": "a\r\nb\r\nc\r\n"},
			patch: patchText("*** Update File: f", " a", "-b", "+B", "+B2"),
			want:  map[string]string{"f": "a\r\nB\r\nB2\r\nc\r\n"},
		},
		{
			name:  "remove everything",
			files: map[string]string{"f": "a\nb\n"},
			patch: patchText("*** Update File: f", "-a", "-b"),
			want:  map[string]string{"f": ""},
		},
		{
			name:  "context not found",
			files: map[string]string{"f": "a\n"},
			patch: patchText("*** Update File: f", " a", "-zzz"),
			err:   ErrContextNotFound,
			msg:   "f: hunk 1 (patch line 3): context not found: could not find these lines:\na\nzzz\n",
		},
	})
}

func TestApplyFileOperations(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			name:  "add into new directories",
			files: map[string]string{"keep": "k\n"},
			patch: patchText("*** Add File: a/b/c/new.txt", "+hello", "+world"),
			want:  map[string]string{"keep": "k\n", "a/b/c/new.txt": "hello\nworld\n"},
		},
		{
			name:  "add overwrites an existing file",
			files: map[string]string{"f": "old\n"},
			patch: patchText("*** Add File: f", "+new"),
			want:  map[string]string{"f": "new\n"},
		},
		{
			name:  "delete",
			files: map[string]string{"f": "x\n", "g": "y\n"},
			patch: patchText("*** Delete File: f"),
			want:  map[string]string{"g": "y\n"},
		},
		{
			name:  "delete missing file",
			files: map[string]string{"g": "y\n"},
			patch: patchText("*** Delete File: nope.txt"),
			err:   ErrFileNotFound,
			msg:   "nope.txt: file not found: cannot delete a file that does not exist",
		},
		{
			name:  "update missing file",
			files: map[string]string{"g": "y\n"},
			patch: patchText("*** Update File: nope.txt", "-a", "+b"),
			err:   ErrFileNotFound,
			msg:   "use '*** Add File:' to create it",
		},
		{
			name:  "move with changes into a new directory",
			files: map[string]string{"src/a.txt": "one\ntwo\n"},
			patch: patchText("*** Update File: src/a.txt", "*** Move to: dst/sub/b.txt", " one", "-two", "+2"),
			want:  map[string]string{"dst/sub/b.txt": "one\n2\n"},
		},
		{
			name:  "pure rename",
			files: map[string]string{"a": "x\n"},
			patch: patchText("*** Update File: a", "*** Move to: b"),
			want:  map[string]string{"b": "x\n"},
		},
		{
			name:  "move onto itself is an update",
			files: map[string]string{"a": "x\n"},
			patch: patchText("*** Update File: a", "*** Move to: ./a", "-x", "+y"),
			want:  map[string]string{"a": "y\n"},
		},
		{
			name:  "several operations on one file, in order",
			files: map[string]string{},
			patch: patchText("*** Add File: f", "+a", "+b", "*** Update File: f", " a", "-b", "+c", "*** Update File: f", "*** Move to: g", "+d"),
			want:  map[string]string{"g": "a\nc\nd\n"},
		},
		{
			name:  "one failing operation stops the whole patch",
			files: map[string]string{"a": "1\n", "b": "2\n"},
			patch: patchText("*** Update File: a", "-1", "+one", "*** Delete File: b", "*** Update File: c", "-x", "+y"),
			err:   ErrFileNotFound,
			msg:   "c: file not found",
		},
		{
			name:  "directory as a file",
			files: map[string]string{"d/f": "x\n"},
			patch: patchText("*** Delete File: d"),
			err:   ErrNotRegular,
			msg:   "is a directory",
		},
	})
}

func TestApplyResult(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"b.txt": "1\n2\n3\n4\n5\n6\n7\n8\n", "c.txt": "bye\n", "d.txt": "d\n"})
	p := mustParse(t, patchText(
		"*** Add File: hello.txt", "+hello world",
		"*** Update File: b.txt", " 1", "-2", "+two", "@@", " 7", "-8", "+eight",
		"*** Delete File: c.txt",
		"*** Update File: d.txt", "*** Move to: "+filepath.Join(dir, "e.txt"), "-d", "+e",
	))
	pl, err := p.Plan(dir, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Planning writes nothing.
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Plan created hello.txt (stat error %v)", err)
	}
	res, err := pl.Commit()
	if err != nil {
		t.Fatal(err)
	}
	wantSummary := "Success. Updated the following files:\nA hello.txt\nM b.txt\nM " + filepath.Join(dir, "e.txt") + "\nD c.txt\n"
	if res.Summary != wantSummary {
		t.Errorf("Summary = %q, want %q", res.Summary, wantSummary)
	}
	want := []FileChange{
		{Path: filepath.Join(dir, "hello.txt"), Kind: KindAdd, Diff: "hello world\n"},
		{Path: filepath.Join(dir, "b.txt"), Kind: KindUpdate, Diff: "@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n@@ -7,2 +7,2 @@\n 7\n-8\n+eight\n"},
		{Path: filepath.Join(dir, "c.txt"), Kind: KindDelete, Diff: "bye\n"},
		{Path: filepath.Join(dir, "d.txt"), Kind: KindUpdate, MovePath: filepath.Join(dir, "e.txt"), Diff: "@@ -1 +1 @@\n-d\n+e\n"},
	}
	if len(res.Changes) != len(want) {
		t.Fatalf("Changes = %+v", res.Changes)
	}
	for i := range want {
		if res.Changes[i] != want[i] {
			t.Errorf("Changes[%d] = %+v\nwant %+v", i, res.Changes[i], want[i])
		}
	}
}

func TestApplyKeepsMode(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"run.sh": "echo a\n", "mv.sh": "x\n"})
	for _, f := range []string{"run.sh", "mv.sh"} {
		if err := os.Chmod(filepath.Join(dir, f), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	p := mustParse(t, patchText("*** Update File: run.sh", "-echo a", "+echo b",
		"*** Update File: mv.sh", "*** Move to: moved.sh", "*** Add File: new.txt", "+n"))
	if _, err := p.Apply(dir, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]os.FileMode{"run.sh": 0o750, "moved.sh": 0o750, "new.txt": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", f, fi.Mode().Perm(), want)
		}
	}
	// No temporary file is left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func TestApplyThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"real.txt": "a\n"})
	if err := os.Symlink("real.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := mustParse(t, patchText("*** Update File: link.txt", "-a", "+b")).Apply(dir, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a symlink (%v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real.txt")); string(b) != "b\n" {
		t.Errorf("real.txt = %q, want %q", b, "b\n")
	}
}

func TestApplyRefusesTwoNamesForOneFile(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"real.txt": "a\nb\n"})
	if err := os.Symlink("real.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, patchText("*** Update File: real.txt", "-a", "+A", "*** Update File: link.txt", "-b", "+B"))
	_, err := p.Apply(dir, ApplyOptions{})
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "link.txt: bad path: it is the same file as "+filepath.Join(dir, "real.txt")) {
		t.Fatalf("Apply error = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real.txt")); string(b) != "a\nb\n" {
		t.Errorf("real.txt = %q, want it unchanged", b)
	}
}

func TestPlanRelativeCwdRefused(t *testing.T) {
	_, err := mustParse(t, patchText("*** Delete File: a")).Plan("rel/dir", ApplyOptions{})
	if !errors.Is(err, ErrBadPath) {
		t.Fatalf("Plan error = %v, want ErrBadPath", err)
	}
}
