package patch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds are patch texts for the fuzzers: the valid corpus plus
// near-misses.
func fuzzSeeds() []string {
	seeds := []string{
		"",
		"*** Begin Patch\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n*** End of File\n+y\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.txt\n@@ one\n+after one\n@@ -1,2 +1,3 @@\n two\n-three\n+3\n\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../escape.txt\n*** Delete File: /etc/passwd\n*** End Patch\n",
		"<<'EOF'\n*** Begin Patch\n*** Add File: d/e/f.txt\n+f\n*** End Patch\nEOF",
	}
	for _, c := range validCorpus {
		seeds = append(seeds, c.patch)
	}
	return seeds
}

// fuzzFiles are the files a fuzzed patch is applied to.
var fuzzFiles = map[string]string{
	"a.txt":       "one\ntwo\nthree\ntwo\n",
	"src/app.py":  validCorpus[1].files["src/app.py"],
	"gone.txt":    "bye\n",
	"x":           "x\n",
	"crlf.txt":    "a\r\nb\r\n",
	"nonl.txt":    "no newline",
	"dir/inner.c": "int main() {\n\treturn 0;\n}\n",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || pe.Line > strings.Count(unwrapJSON(text), "\n")+2 {
				t.Fatalf("Parse error %v: not a *ParseError with a line in range", err)
			}
			return
		}
		if len(p.Ops) == 0 {
			t.Fatal("Parse succeeded with no operations")
		}
		// Apply inside a temp dir, confined to it: the fuzzer writes
		// absolute and ../ paths too.
		dir := t.TempDir()
		writeTree(t, dir, fuzzFiles)
		before := readTree(t, dir)
		res, err := p.Apply(dir, ApplyOptions{WritableRoots: []string{dir}})
		if err != nil {
			var ae *ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("Apply error %v is not an *ApplyError", err)
			}
			if got := readTree(t, dir); !equalTrees(got, before) {
				t.Fatalf("failed Apply (%v) changed the tree", err)
			}
			return
		}
		if len(res.Changes) != len(p.Ops) || !strings.HasPrefix(res.Summary, "Success. Updated the following files:\n") {
			t.Fatalf("result %+v for %d ops", res, len(p.Ops))
		}
		// With one update, its diff must turn the old file into the new.
		if len(p.Ops) == 1 && p.Ops[0].Kind == KindUpdate {
			c := res.Changes[0]
			rel, _ := filepath.Rel(dir, c.Path)
			newPath := c.Path
			if c.MovePath != "" {
				newPath = c.MovePath
			}
			got, err := os.ReadFile(newPath)
			if err != nil {
				t.Fatal(err)
			}
			checkItemDiff(t, c.Diff, before[filepath.ToSlash(rel)], string(got))
		}
	})
}

func FuzzPreview(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, chunk uint8) {
		n := int(chunk%16) + 1
		sp := NewStreamParser()
		var prev []FileChange
		for i := 0; i < len(text); i += n {
			sp.Push(text[i:min(i+n, len(text))])
			cur := sp.Snapshot()
			checkGrowth(t, prev, cur)
			prev = cur
		}
		sp.Finish()
		checkGrowth(t, prev, sp.Snapshot())
	})
}

func FuzzUnifiedHunks(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("", "x")
	f.Add("x\r\ny", "x\ny\r\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		d := unifiedHunks(old, new, turnDiffContext)
		if old == new {
			return
		}
		if got := gitApply(t, "--- a/f\n+++ b/f\n"+d, old); got != new {
			t.Fatalf("applying\n%s\nto %q gave %q, want %q", d, old, got, new)
		}
	})
}
