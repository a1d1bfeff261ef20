package patch

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestStreamParserLikeTheReference(t *testing.T) {
	// patch-streaming-turn.jsonl: the add shows first with an empty diff,
	// then with its line.
	sp := NewStreamParser()
	if sp.Push("*** Begin Patch\n*** Add File: hel") {
		t.Error("a partial header changed the preview")
	}
	if !sp.Push("lo.txt\n+hello") {
		t.Error("a complete header did not change the preview")
	}
	want := []FileChange{{Path: "hello.txt", Kind: KindAdd, Diff: ""}}
	if got := sp.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
	if !sp.Push(" world\n*** End Patch") {
		t.Error("a complete line did not change the preview")
	}
	want[0].Diff = "hello world\n"
	if got := sp.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
	if sp.Finish() {
		t.Error("'*** End Patch' changed the preview")
	}
}

func TestStreamParserUpdatePreview(t *testing.T) {
	sp := NewStreamParser()
	sp.Push("noise before\n*** Begin Patch\n*** Update File: a.go\n*** Move to: b.go\n@@ func f() {\n x\n\n-y\n+z\n\n\n*** End of File\n*** Delete File: c\n*** End Patch\n*** Add File: after-end\n")
	want := []FileChange{
		{Path: "a.go", Kind: KindUpdate, MovePath: "b.go", Diff: "@@ func f() {\n x\n \n-y\n+z\n \n \n*** End of File\n"},
		{Path: "c", Kind: KindDelete},
	}
	if got := sp.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot = %+v\nwant %+v", got, want)
	}
}

// TestStreamParserPrefixes feeds every valid patch in random chunks and
// checks each snapshot extends the one before, and that the end result
// agrees with Parse.
func TestStreamParserPrefixes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range validCorpus {
		t.Run(c.name, func(t *testing.T) {
			for round := range 20 {
				sp := NewStreamParser()
				var prev []FileChange
				text := c.patch
				for text != "" {
					n := 1 + rng.IntN(8)
					if round == 0 {
						n = 1 // byte by byte
					}
					n = min(n, len(text))
					changed := sp.Push(text[:n])
					text = text[n:]
					cur := sp.Snapshot()
					checkGrowth(t, prev, cur)
					if changed != !reflect.DeepEqual(prev, cur) && !(len(prev) == 0 && len(cur) == 0) {
						t.Fatalf("Push reported changed=%v, snapshots %+v → %+v", changed, prev, cur)
					}
					prev = cur
				}
				sp.Finish()
				final := sp.Snapshot()
				checkGrowth(t, prev, final)
				p := mustParse(t, c.patch)
				if len(final) != len(p.Ops) {
					t.Fatalf("final preview has %d files, Parse %d", len(final), len(p.Ops))
				}
				for i, op := range p.Ops {
					f := final[i]
					if f.Path != op.Path || f.Kind != op.Kind || f.MovePath != op.MoveTo {
						t.Errorf("file %d = %+v, want %s %s → %q", i, f, op.Kind, op.Path, op.MoveTo)
					}
					if op.Kind == KindAdd && f.Diff != op.Content {
						t.Errorf("added %s preview = %q, want %q", op.Path, f.Diff, op.Content)
					}
				}
			}
		})
	}
}

func checkGrowth(t *testing.T, prev, cur []FileChange) {
	t.Helper()
	if len(cur) < len(prev) {
		t.Fatalf("preview lost files: %+v → %+v", prev, cur)
	}
	for i, p := range prev {
		c := cur[i]
		if c.Path != p.Path || c.Kind != p.Kind || (p.MovePath != "" && c.MovePath != p.MovePath) || !strings.HasPrefix(c.Diff, p.Diff) {
			t.Fatalf("preview of file %d shrank or changed: %+v → %+v", i, p, c)
		}
	}
}

func TestStreamParserNeverPanicsOnPrefixesOfAnything(t *testing.T) {
	inputs := []string{"", "\n\n", "*** Begin Patch\n*** Update File:\n*** Add File: \n+x\n@@\n", "*** Begin Patch\r\n*** Update File: a\r\n\r\n \r\n+\r\n"}
	for _, in := range inputs {
		for i := range len(in) + 1 {
			sp := NewStreamParser()
			sp.Push(in[:i])
			sp.Finish()
			sp.Snapshot()
		}
	}
}
