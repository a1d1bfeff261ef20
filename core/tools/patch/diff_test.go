package patch

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedHunksFormat(t *testing.T) {
	tests := []struct{ old, new, want string }{
		{"", "hello world\n", "@@ -0,0 +1 @@\n+hello world\n"},
		{"a\n", "", "@@ -1 +0,0 @@\n-a\n"},
		{"a\nb\nc\nd\ne\n", "a\nb\nC\nd\ne\n", "@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"},
		{"a", "a\n", "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
		{"same\n", "same\n", ""},
	}
	for _, tt := range tests {
		if got := unifiedHunks(tt.old, tt.new, itemDiffContext); got != tt.want {
			t.Errorf("unifiedHunks(%q, %q) = %q, want %q", tt.old, tt.new, got, tt.want)
		}
	}
}

// TestUnifiedHunksApply checks random edits with go-gitdiff: the diff
// applied to the old text gives the new one, for both context sizes.
func TestUnifiedHunksApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"a", "b", "c", "}", "", "  x", "return nil"}
	randText := func(n int) string {
		var lines []string
		for range n {
			lines = append(lines, words[rng.IntN(len(words))])
		}
		s := strings.Join(lines, "\n")
		if n > 0 && rng.IntN(4) > 0 {
			s += "\n"
		}
		return s
	}
	for range 2000 {
		old := randText(rng.IntN(30))
		lines := strings.SplitAfter(old, "\n")
		for i := range lines {
			switch rng.IntN(6) {
			case 0:
				lines[i] = ""
			case 1:
				lines[i] = randText(1+rng.IntN(3)) + "\n"
			}
		}
		new := strings.Join(lines, "")
		if rng.IntN(5) == 0 {
			new += randText(2)
		}
		for _, ctx := range []int{itemDiffContext, turnDiffContext} {
			d := unifiedHunks(old, new, ctx)
			if old == new {
				if d != "" {
					t.Fatalf("diff of equal texts: %q", d)
				}
				continue
			}
			if got := gitApply(t, "--- a/f\n+++ b/f\n"+d, old); got != new {
				t.Fatalf("context %d: applying\n%s\nto %q gave %q, want %q", ctx, d, old, got, new)
			}
		}
	}
}

func TestGitBlobID(t *testing.T) {
	// `git hash-object` of these contents.
	for content, want := range map[string]string{
		"hello world\n": "3b18e512dba79e4c8300dd08aeb37f8e728b8dad",
		"":              "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
	} {
		if got := gitBlobID(content); got != want {
			t.Errorf("gitBlobID(%q) = %s, want %s", content, got, want)
		}
	}
}
