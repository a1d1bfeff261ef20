package rollout

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// holdWarmUp keeps the index from being built in the background: pages
// are served from the file names until the test builds it (buildIndex).
func holdWarmUp(t *testing.T) {
	warmUpHeld = true
	t.Cleanup(func() { warmUpHeld = false })
}

// openHeld opens the store on home with the build held and the window of
// creation times around a name's pinned (lo, hi).
func openHeld(t *testing.T, home string, lo, hi time.Duration) *Store {
	t.Helper()
	holdWarmUp(t)
	s, err := Open(home, Options{NoGitInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.idx.windowOnce.Do(func() { s.idx.winLo, s.idx.winHi = int64(lo), int64(hi) })
	return s
}

// buildIndex builds the index now.
func buildIndex(s *Store) {
	s.idx.lock()
	s.idx.refreshLocked()
	s.idx.mu.Unlock()
}

// countOpens records the rollout files the store opens from now on.
func countOpens(t *testing.T) func() []string {
	var mu sync.Mutex
	var paths []string
	f := func(p string) {
		mu.Lock()
		paths = append(paths, p)
		mu.Unlock()
	}
	onOpen.Store(&f)
	t.Cleanup(func() { onOpen.Store(nil) })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := paths
		paths = nil
		return out
	}
}

// firstListings are the listings by creation time a first page serves
// from the names, with filters that most threads match.
var firstListings = []ListOptions{
	{},
	{Limit: 7},
	{Limit: 7, Direction: SortAsc},
	{Limit: 100},
	{Limit: 4, Archived: true},
	{Limit: 4, Archived: true, Direction: SortAsc},
	{Limit: 5, ModelProviders: []string{"mock", "openai"}},
	{Limit: 5, SourceKinds: []string{"vscode", "cli", "exec"}, Direction: SortAsc},
	{Limit: 3, Cwd: []string{"/work/project", "/work/p1"}},
	{Limit: 3, SearchTerm: "prompt 0 of"},
}

// writeVariedHome writes n threads one minute apart (writeManyThreads)
// and, around the newest, threads with varied metadata, ties, a thread
// with no turn, names, and some archived.
func writeVariedHome(t *testing.T, home string, n int) {
	writeManyThreads(t, home, n)
	// Among the newest: generate's threads start a minute after
	// baseTime; these start after the many.
	at := baseTime.Add(time.Duration(n) * time.Minute)
	for i := range 40 {
		if i%5 != 4 {
			at = at.Add(time.Duration(200+i*7) * time.Millisecond)
		}
		m := testMeta(uuid7At(at, 500_000+i), at)
		m.ModelProvider = []string{"openai", "mock", "local"}[i%3]
		m.Source = []string{"vscode", "cli", "exec", "subAgentReview"}[i%4]
		if i%4 == 1 {
			m.Cwd = "/work/p1"
		}
		name := ""
		if i%6 == 0 {
			name = fmt.Sprintf("Named %d", i)
		}
		p := writeThreadFile(t, home, m, i%3, name) // i%3 == 0: no turn
		if i%9 == 2 {
			dst := filepath.Join(home, ArchivedDir, filepath.Base(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p, dst); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFirstPagesAreTheIndexPages: before the index is built, pages by
// creation time are served from the file names; each equals, cursors
// included, what a scan of every file gives, and so do the index's pages
// once it is built, from the first pages' cursors on.
func TestFirstPagesAreTheIndexPages(t *testing.T) {
	home := t.TempDir()
	writeVariedHome(t, home, 3000)
	s := openHeld(t, home, 0, time.Second)
	f := readFresh(t, home)
	type served struct {
		page       []ThreadSummary
		next, back string
	}
	firsts := map[int]served{}
	for i, opts := range firstListings {
		what := fmt.Sprintf("listing %d (%+v), page 1 from the names", i, opts)
		page, next, back, err := s.List(opts)
		if err != nil {
			t.Fatal(err)
		}
		checkListMatches(t, s, home, f, opts, what)
		firsts[i] = served{page, next, back}
		// Further pages too, through the cursors.
		for p := 2; p <= 3 && next != ""; p++ {
			opts.Cursor = next
			next = checkListMatches(t, s, home, f, opts, fmt.Sprintf("listing %d, page %d from the names", i, p))
		}
		if s.idx.ready.Load() {
			t.Fatalf("%s: the index was built", what)
		}
	}

	buildIndex(s)
	if !s.idx.ready.Load() {
		t.Fatal("the index is not ready")
	}
	for i, opts := range firstListings {
		first := firsts[i]
		page, next, back, err := s.List(opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first.page, page, cmpopts.EquateEmpty()); diff != "" || next != first.next || back != first.back {
			t.Fatalf("listing %d: the index's first page differs (-names +index):\n%s\ncursors %q %q, then %q %q", i, diff, first.next, first.back, next, back)
		}
		// The first page's cursor continues on the index.
		for p := 2; p <= 3 && next != ""; p++ {
			opts.Cursor = next
			next = checkListMatches(t, s, home, f, opts, fmt.Sprintf("listing %d, page %d from the index", i, p))
		}
	}
}

// TestFirstPageReadsOnlyItsFiles: the first page of a home of thousands of
// threads, none of them read yet, opens about as many files as the page
// has, the newest, and a second page asked for before the index is built
// opens none again.
func TestFirstPageReadsOnlyItsFiles(t *testing.T) {
	home := t.TempDir()
	const n = 2000
	writeManyThreads(t, home, n)
	opened := countOpens(t)
	s := openHeld(t, home, 0, time.Second)
	page, next, _, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	paths := opened()
	if len(page) != DefaultListLimit || next == "" {
		t.Fatalf("%d threads, next %q", len(page), next)
	}
	// The page, and the one after it (to know that more follow).
	if len(paths) > DefaultListLimit+1 {
		t.Fatalf("%d files opened for a page of %d (of %d threads)", len(paths), DefaultListLimit, n)
	}
	newest := baseTime.Add(time.Duration(n-DefaultListLimit-2) * time.Minute)
	for _, p := range paths {
		if at, _ := timeFromFileName(filepath.Base(p)); at.Before(newest.Truncate(time.Second)) {
			t.Fatalf("%s opened: not among the newest", p)
		}
	}
	if _, _, _, err := s.List(ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if again := opened(); len(again) != 0 {
		t.Fatalf("the same page again opened %d files", len(again))
	}
	checkListMatches(t, s, home, nil, ListOptions{Cursor: next}, "second page")
	if s.idx.ready.Load() {
		t.Fatal("the index was built")
	}
}

// A thread written a moment ago (a live one) is read once for the pages
// served from the names, not at every page; the build does not take its
// entry (its mtime may not show a change yet), and reads it itself.
func TestFirstPageReadsAFreshThreadOnce(t *testing.T) {
	home := t.TempDir()
	const n = 100
	writeManyThreads(t, home, n)
	newest := baseTime.Add(time.Duration(n+10) * time.Minute)
	fresh := writeThreadFile(t, home, testMeta(uuid7At(newest, 1), newest), 3, "")
	opened := countOpens(t)
	s := openHeld(t, home, 0, time.Second)
	page, _, _, err := s.List(ListOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) == 0 || page[0].Path != fresh {
		t.Fatalf("the fresh thread does not head the page: %v", page)
	}
	if paths := opened(); !slices.Contains(paths, fresh) {
		t.Fatalf("the first page did not read the fresh thread: %v", paths)
	}
	for range 3 {
		if _, _, _, err := s.List(ListOptions{Limit: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if again := opened(); len(again) != 0 {
		t.Fatalf("the same page again opened %v", again)
	}
	st, err := os.Stat(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if e := s.idx.takeFirst(fresh, keyOf(st)); e != nil {
		t.Fatal("the build may take the entry of a file modified a moment ago")
	}
	checkListMatches(t, s, home, nil, ListOptions{Limit: 5}, "page")
}

// writeNamedAt writes a thread created at created (meta) whose file name
// and dated directory say named: the reference names its files in local
// time.
func writeNamedAt(t *testing.T, home string, id string, created, named time.Time, turns int) {
	t.Helper()
	m := testMeta(id, created)
	b, err := metaLine(m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range turns {
		b = append(b, turnRecords(t, id, i, created.Add(time.Duration(4*i)*time.Millisecond))...)
	}
	p := filepath.Join(datedDir(home, named), FileName(named, id))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFirstPagesOfLocalTimeNames: a home shared with the reference holds
// files named in UTC (agentd's) and in local time (the reference's), east
// and west of UTC; pages from the names, within the window of the zone's
// offsets, are the index's.
func TestFirstPagesOfLocalTimeNames(t *testing.T) {
	for _, off := range []time.Duration{2 * time.Hour, -5 * time.Hour} {
		t.Run(off.String(), func(t *testing.T) {
			home := t.TempDir()
			at := baseTime
			for i := range 400 {
				at = at.Add(time.Duration(5+i%13) * time.Minute / 2)
				named := at
				if i%3 == 0 {
					named = at.Add(off) // the reference's local time
				}
				writeNamedAt(t, home, uuid7At(at, i), at, named, 1+i%2)
			}
			lo, hi := nameWindow(time.FixedZone("test", int(off/time.Second)), time.Now())
			s := openHeld(t, home, time.Duration(lo), time.Duration(hi))
			f := readFresh(t, home)
			for i, opts := range []ListOptions{{Limit: 10}, {Limit: 10, Direction: SortAsc}, {Limit: 25}} {
				next := ""
				for p := 1; p <= 4 && (p == 1 || next != ""); p++ {
					opts.Cursor = next
					next = checkListMatches(t, s, home, f, opts, fmt.Sprintf("listing %d, page %d", i, p))
				}
			}
			if s.idx.ready.Load() {
				t.Fatal("the index was built: the names did not serve the pages")
			}
		})
	}
}

// TestNameWindow: the window of creation times around a name's covers
// UTC and the zone's offsets, summer and winter.
func TestNameWindow(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		loc    *time.Location
		lo, hi time.Duration
	}{
		{time.UTC, 0, time.Second},
		{time.FixedZone("east", 2*3600), -2 * time.Hour, time.Second},
		{time.FixedZone("west", -5*3600), 0, 5*time.Hour + time.Second},
	} {
		lo, hi := nameWindow(c.loc, now)
		if time.Duration(lo) != c.lo || time.Duration(hi) != c.hi {
			t.Errorf("%s: window [%v, %v), want [%v, %v)", c.loc, time.Duration(lo), time.Duration(hi), c.lo, c.hi)
		}
	}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		lo, hi := nameWindow(ny, now)
		if time.Duration(lo) != 0 || time.Duration(hi) != 5*time.Hour+time.Second {
			t.Errorf("New York: window [%v, %v), want its winter offset", time.Duration(lo), time.Duration(hi))
		}
	}
}

// TestFirstPageFallsBackToTheIndex: where the names cannot say the order
// (a rollout outside the dated directories, a name that is not its
// thread's creation time, a name dated another day than its directory), a
// listing by modification time, and a filter that matches too few of the
// files read, the page waits for the index, and is right.
func TestFirstPageFallsBackToTheIndex(t *testing.T) {
	newest := baseTime.Add(time.Duration(firstMinReads+100) * time.Minute)
	for _, c := range []struct {
		name string
		prep func(t *testing.T, home string)
		opts ListOptions
	}{
		{"rollout outside the dated directories", func(t *testing.T, home string) {
			p := writeThreadFile(t, home, testMeta(uuid7At(newest, 1), newest), 1, "")
			dst := filepath.Join(home, SessionsDir, "imported", filepath.Base(p))
			os.MkdirAll(filepath.Dir(dst), 0o700)
			if err := os.Rename(p, dst); err != nil {
				t.Fatal(err)
			}
		}, ListOptions{Limit: 5}},
		{"name that is not the creation time", func(t *testing.T, home string) {
			writeNamedAt(t, home, uuid7At(newest, 1), baseTime.Add(-time.Hour), newest, 1)
		}, ListOptions{Limit: 5}},
		{"name dated another day than its directory", func(t *testing.T, home string) {
			p := writeThreadFile(t, home, testMeta(uuid7At(newest, 1), newest), 1, "")
			dst := filepath.Join(datedDir(home, newest.Add(48*time.Hour)), filepath.Base(p))
			os.MkdirAll(filepath.Dir(dst), 0o700)
			if err := os.Rename(p, dst); err != nil {
				t.Fatal(err)
			}
		}, ListOptions{Limit: 5}},
		{"a year whose times do not fit the keys", func(t *testing.T, home string) {
			os.MkdirAll(filepath.Join(home, SessionsDir, "2300", "01", "01"), 0o700)
		}, ListOptions{Limit: 5}},
		{"a file that cannot be opened for want of descriptors", func(t *testing.T, home string) {
			// The first open (the walk's) fails; the index's, later,
			// succeed.
			var failed atomic.Bool
			f := func(string) error {
				if failed.CompareAndSwap(false, true) {
					return syscall.EMFILE
				}
				return nil
			}
			openFault.Store(&f)
			t.Cleanup(func() { openFault.Store(nil) })
		}, ListOptions{Limit: 5}},
		{"by modification time", nil, ListOptions{Limit: 5, SortKey: SortUpdatedAt}},
		{"a filter that matches none", nil, ListOptions{Limit: 5, SearchTerm: "nothing has this"}},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			home := t.TempDir()
			writeManyThreads(t, home, firstMinReads+60)
			if c.prep != nil {
				c.prep(t, home)
			}
			s := openHeld(t, home, 0, time.Second)
			checkListMatches(t, s, home, nil, c.opts, c.name)
			if !s.idx.ready.Load() {
				t.Fatal("served from the names")
			}
		})
	}
}

// TestFirstPageSeesNewFiles: a file that appears, or grows, between two
// pages served from the names is in the second.
func TestFirstPageSeesNewFiles(t *testing.T) {
	home := t.TempDir()
	gs := generate(t, home, 30)
	s := openHeld(t, home, 0, time.Second)
	checkListMatches(t, s, home, nil, ListOptions{Limit: 10}, "before")
	// The newest thread gets a turn; a new thread appears.
	last := gs[len(gs)-1]
	f, err := os.OpenFile(last.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(turnRecords(t, last.id, 7, last.created.Add(time.Second)))
	f.Close()
	later := time.Now().Add(-time.Hour)
	os.Chtimes(last.path, later, later)
	at := last.created.Add(time.Minute)
	writeThreadFile(t, home, testMeta(uuid7At(at, 99), at), 2, "")
	checkListMatches(t, s, home, nil, ListOptions{Limit: 10}, "after")
	if s.idx.ready.Load() {
		t.Fatal("the index was built")
	}
}

// TestFirstPagesDuringTheBuild: pages asked for while the index is built
// in the background (from the names, then from the index, which takes
// the files the pages read) are right throughout.
func TestFirstPagesDuringTheBuild(t *testing.T) {
	home := t.TempDir()
	writeVariedHome(t, home, 3000)
	f := readFresh(t, home)
	s, err := Open(home, Options{NoGitInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fromNames := 0
	for i := 0; i < 1000; i++ {
		ready := s.idx.ready.Load()
		opts := firstListings[i%len(firstListings)]
		next := checkListMatches(t, s, home, f, opts, fmt.Sprintf("call %d", i))
		if next != "" {
			opts.Cursor = next
			checkListMatches(t, s, home, f, opts, fmt.Sprintf("call %d, next page", i))
		}
		if ready {
			break
		}
		fromNames++
	}
	t.Logf("%d calls served before the index was ready", fromNames)
}

// writeCachedHome writes 40 threads into home and the index cache of
// them (a store opened, listed and closed), and returns the cache's size.
func writeCachedHome(t *testing.T, home string) int64 {
	t.Helper()
	generate(t, home, 40)
	s, err := Open(home, Options{NoGitInfo: true, NoIndexWarmUp: true})
	if err != nil {
		t.Fatal(err)
	}
	checkListMatches(t, s, home, nil, ListOptions{Limit: 5}, "building the cache")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(home, indexCacheName))
	if err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	return st.Size()
}

// TestFirstPageWaitsForASmallCache: with an index cache that loads
// sooner than a walk reads a page, the first page is the index's.
func TestFirstPageWaitsForASmallCache(t *testing.T) {
	home := t.TempDir()
	writeCachedHome(t, home)
	s := openHeld(t, home, 0, time.Second)
	checkListMatches(t, s, home, nil, ListOptions{Limit: 5}, "with the cache")
	if !s.idx.ready.Load() {
		t.Fatal("served from the names, with a small cache")
	}
}

// TestFirstPageFromTheNamesPastALargeCache: with an index cache that
// takes longer to load than a walk reads a page, the first page is served
// from the names, and is the index's.
func TestFirstPageFromTheNamesPastALargeCache(t *testing.T) {
	home := t.TempDir()
	size := writeCachedHome(t, home)
	defer func(old int64) { namesFirstCacheBytes = old }(namesFirstCacheBytes)
	namesFirstCacheBytes = size - 1 // this cache counts as large
	s := openHeld(t, home, 0, time.Second)
	checkListMatches(t, s, home, nil, ListOptions{Limit: 5}, "with the cache")
	if s.idx.ready.Load() {
		t.Fatal("the index was loaded for the first page, with a large cache")
	}
}
