package rollout

import (
	"context"
	"testing"
	"time"
)

// A Store keeps a large thread it read without history, and answers the
// next such read from it while the file stays as it was: the turns are
// the same ones, not parsed again. Once the file grows, the next read
// parses it again and has the new turn. A read with the history, or
// with another running turn, is not answered from it; the name comes
// from the index at every read.
func TestStoreReadCache(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	r, _ := s.Create(testMeta("t-cache", baseTime))
	for i := range 200 {
		recordRichTurn(t, r, i)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := stateOf(r.Path()); st.size < readCacheMinFile {
		t.Fatalf("the file is %d bytes, below the cache's minimum", st.size)
	}
	read := func(opts ReadOptions) *Thread {
		t.Helper()
		th, err := s.Read(ctx, "t-cache", opts)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	turns := ReadOptions{SkipHistory: true}
	a, b := read(turns), read(turns)
	if len(a.Turns) != 200 || &a.Turns[0] != &b.Turns[0] {
		t.Fatalf("second read not from the cache: %d turns, shared %v", len(a.Turns), &a.Turns[0] == &b.Turns[0])
	}
	full := read(ReadOptions{})
	if &full.Turns[0] == &a.Turns[0] || len(full.History) == 0 {
		t.Fatal("a read with the history came from the cache")
	}
	// What it parsed is kept, without the history.
	if kept := read(turns); &kept.Turns[0] != &full.Turns[0] || kept.History != nil {
		t.Fatalf("after a read with the history: shared %v, %d history items", &kept.Turns[0] == &full.Turns[0], len(kept.History))
	}
	a = read(turns)
	if running := read(ReadOptions{SkipHistory: true, RunningTurnID: "turn-0199"}); &running.Turns[0] == &a.Turns[0] {
		t.Fatal("a read with a running turn came from the cache of one without")
	}
	if err := s.SetName(ctx, "t-cache", "renamed"); err != nil {
		t.Fatal(err)
	}
	if c := read(turns); c.Name != "renamed" || &c.Turns[0] != &a.Turns[0] {
		t.Fatalf("after a rename: name %q, shared %v", c.Name, &c.Turns[0] == &a.Turns[0])
	}

	recordRichTurn(t, r, 200)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := read(turns)
	if len(c.Turns) != 201 || &c.Turns[0] == &a.Turns[0] || c.Turns[200].ID != "turn-0200" {
		t.Fatalf("after the file grew: %d turns, shared %v", len(c.Turns), &c.Turns[0] == &a.Turns[0])
	}
	if d := read(turns); &d.Turns[0] != &c.Turns[0] {
		t.Fatal("the grown file's read was not cached")
	}

	// Archived, the file moves: read from its new place, then cached
	// there.
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Archive("t-cache"); err != nil {
		t.Fatal(err)
	}
	e := read(turns)
	if !e.Archived || len(e.Turns) != 201 || &e.Turns[0] == &c.Turns[0] {
		t.Fatalf("archived: %v, %d turns, shared %v", e.Archived, len(e.Turns), &e.Turns[0] == &c.Turns[0])
	}
	if f := read(turns); !f.Archived || &f.Turns[0] != &e.Turns[0] {
		t.Fatalf("archived, from the cache: %v, shared %v", f.Archived, &f.Turns[0] == &e.Turns[0])
	}
	// Other limits are another read.
	if g := read(ReadOptions{SkipHistory: true, Limits: Limits{MaxLineBytes: 1 << 20}}); &g.Turns[0] == &e.Turns[0] {
		t.Fatal("a read with other limits came from the cache")
	}
}

// The cache keeps within its budget, dropping the least recently used
// entry, skips small files, and empties once unused for readCacheIdle.
func TestReadCacheBudgetAndIdle(t *testing.T) {
	c := newReadCache()
	defer c.clear()
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	th := &Thread{Turns: []Turn{{ID: "x"}}}
	size := int64(readCacheBudget / 4)
	key := func(i int) readKey { return readKey{path: string(rune('a' + i))} }
	state := func(i int) fileState { return fileState{ino: uint64(i), size: size} }
	for i := range 4 {
		c.put(key(i), state(i), th)
		now = now.Add(time.Second)
	}
	if _, ok := c.get(key(0), state(0)); !ok { // 0 is now the most recent
		t.Fatal("entry 0 missing")
	}
	now = now.Add(time.Second)
	c.put(key(4), state(4), th)
	if _, ok := c.get(key(1), state(1)); ok {
		t.Fatal("the least recently used entry was kept past the budget")
	}
	for _, i := range []int{0, 2, 3, 4} {
		if _, ok := c.get(key(i), state(i)); !ok {
			t.Fatalf("entry %d dropped", i)
		}
	}
	if c.bytes != 4*size {
		t.Fatalf("bytes %d", c.bytes)
	}
	if _, ok := c.get(key(2), fileState{ino: 2, size: size + 1}); ok {
		t.Fatal("an entry answered for a file that changed")
	}
	c.put(key(9), fileState{size: readCacheMinFile - 1}, th)
	if _, ok := c.entries[key(9)]; ok {
		t.Fatal("a small file was cached")
	}
	// An entry unused for readCacheIdle goes at the next use of another,
	// and all of them once the cache is unused.
	now = now.Add(readCacheIdle - time.Second)
	if _, ok := c.get(key(3), state(3)); !ok {
		t.Fatal("entry 3 missing")
	}
	now = now.Add(2 * time.Second)
	if _, ok := c.get(key(3), state(3)); !ok {
		t.Fatal("entry 3 missing")
	}
	if _, ok := c.entries[key(0)]; ok || len(c.entries) != 1 || c.bytes != size {
		t.Fatalf("entries unused for %v kept while another was used: %d left, %d bytes", readCacheIdle, len(c.entries), c.bytes)
	}
	now = now.Add(readCacheIdle + time.Second)
	c.expire()
	if len(c.entries) != 0 || c.bytes != 0 {
		t.Fatalf("after %v unused: %d entries, %d bytes", readCacheIdle, len(c.entries), c.bytes)
	}
}
