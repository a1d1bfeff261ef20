package utility

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

func newTestUtility(t *testing.T) *utility {
	return newUtility(Options{Cwd: t.TempDir()})
}

// A search with a token is cancelled by the next one with the same token
// on the same connection, and by nothing else.
func TestFuzzySearchCancellation(t *testing.T) {
	u := newTestUtility(t)
	c1, c2 := uint64(1), uint64(2)
	tok, other := "t", "u"
	ctx1, done1 := u.startSearch(context.Background(), c1, &tok)
	ctxOther, doneOther := u.startSearch(context.Background(), c1, &other)
	ctxConn2, doneConn2 := u.startSearch(context.Background(), c2, &tok)
	ctx2, done2 := u.startSearch(context.Background(), c1, &tok)
	if ctx1.Err() == nil {
		t.Fatal("earlier search with the same token not cancelled")
	}
	if ctx2.Err() != nil || ctxOther.Err() != nil || ctxConn2.Err() != nil {
		t.Fatal("a search was cancelled by another token or connection")
	}
	done1() // the superseded search ending must not unregister its successor
	if u.searches[searchKey{1, tok}] == nil {
		t.Fatal("successor unregistered")
	}
	done2()
	doneOther()
	doneConn2()
	if len(u.searches) != 0 {
		t.Fatalf("searches left: %v", u.searches)
	}
}

// A cancelled search answers with no files.
func TestFuzzySearchCancelledIsEmpty(t *testing.T) {
	u := newTestUtility(t)
	root := t.TempDir()
	for i := 0; i < 10; i++ {
		if err := os.WriteFile(filepath.Join(root, "match"+string(rune('a'+i))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	params := &protocol.FuzzyFileSearchParams{Query: "match", Roots: []string{root}}
	res, err := u.search(context.Background(), 1, params)
	if err != nil || len(res.Files) != 10 {
		t.Fatalf("live search: %v %+v", err, res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = u.search(ctx, 1, params)
	if err != nil || len(res.Files) != 0 {
		t.Fatalf("cancelled search: %v %+v", err, res)
	}
}

func TestFuzzyWalkLimit(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 30; i++ {
		if err := os.WriteFile(filepath.Join(root, string(rune('a'+i%26))+string(rune('0'+i/26))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := walkRoots(context.Background(), []string{root}, 10); len(got) != 9 {
		// The root itself counts as visited.
		t.Fatalf("visited %d entries, want 9", len(got))
	}
}

func TestIgnoreRules(t *testing.T) {
	s := newIgnoreStack()
	for dir, lines := range map[string][]string{
		"":    {"*.log", "!keep.log", "/root-only", "build/", "a/**/z", "**/gen", "doc/*.txt", `\#hash`, "  ", "# c"},
		"sub": {"local", "!*.log"},
	} {
		for _, l := range lines {
			if r, ok := parseIgnoreLine(l); ok {
				s.rules[dir] = append(s.rules[dir], r)
			}
		}
	}
	for _, c := range []struct {
		rel  string
		dir  bool
		want bool
	}{
		{"x.log", false, true},
		{"deep/x.log", false, true},
		{"keep.log", false, false},
		{"root-only", false, true},
		{"sub/root-only", false, false},
		{"build", true, true},
		{"build", false, false},
		{"a/z", false, true},
		{"a/b/c/z", false, true},
		{"gen", true, true},
		{"x/y/gen", false, true},
		{"doc/a.txt", false, true},
		{"doc/sub/a.txt", false, false},
		{"#hash", false, true},
		{"sub/local", false, true},
		{"sub/x.log", false, false},
		{"other/local", false, false},
	} {
		if got := s.ignored(c.rel, c.dir); got != c.want {
			t.Errorf("ignored(%q, dir %v) = %v, want %v", c.rel, c.dir, got, c.want)
		}
	}
}

func TestRuneIndices(t *testing.T) {
	got := runeIndices("é/f.txt", []int{3, 5})
	if len(got) != 2 || got[0] != 2 || got[1] != 4 {
		t.Fatalf("got %v", got)
	}
}
