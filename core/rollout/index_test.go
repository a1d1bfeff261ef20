package rollout

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// indexModes are the two ways the index follows the home: watching it
// (inotify, where available) and polling its directories. Polling sees
// appends by other processes only at its re-stat of every file, made at
// each call here.
var indexModes = []struct {
	name string
	opts Options
}{
	{"watch", Options{IndexRevalidate: time.Hour}},
	{"poll", Options{NoIndexWatch: true, IndexRevalidate: -1}},
}

// freshEntries reads every rollout file under home as a new index would,
// without any state: the truth a listing is compared with.
func freshEntries(t testing.TB, home string) []*entry {
	t.Helper()
	var out []*entry
	for i, root := range []string{SessionsDir, ArchivedDir} {
		_ = filepath.WalkDir(filepath.Join(home, root), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || !isRolloutName(d.Name()) {
				return nil
			}
			st, err := os.Stat(p)
			if err != nil {
				return nil
			}
			sum, end, err := scanSummary(p, nil, 0, Limits{})
			if err != nil {
				return nil
			}
			k := keyOf(st)
			out = append(out, (&entry{Path: p, Archived: i == 1, Size: k.size, ModNs: k.mod, Ino: k.ino, Offset: end, Sum: sum}).finish())
			return nil
		})
	}
	return out
}

// fresh is a home read by freshEntries, and its names.
type fresh struct {
	entries []*entry
	names   *nameIndex
}

func readFresh(t testing.TB, home string) *fresh {
	names := newNameIndex(home, nil)
	names.refresh()
	return &fresh{entries: freshEntries(t, home), names: names}
}

// list is List computed by brute force: every entry filtered, those
// beyond the cursor sorted, the first limit taken.
func (f *fresh) list(t testing.TB, opts ListOptions) (page []ThreadSummary, next, back string) {
	t.Helper()
	names := f.names
	byUpdated, err := sortByUpdated(opts.SortKey)
	if err != nil {
		t.Fatal(err)
	}
	desc := opts.Direction != SortAsc
	key := func(e *entry) int64 {
		if byUpdated {
			return e.ModNs
		}
		return e.createdNs
	}
	var match []*entry
	for _, e := range f.entries {
		names.mu.Lock()
		ok := e.listable() && opts.matches(e, names)
		names.mu.Unlock()
		if !ok {
			continue
		}
		if opts.Cursor != "" {
			c, err := parseCursor(opts.Cursor)
			if err != nil {
				t.Fatal(err)
			}
			r := cmpKey(key(e), e.id, c.key, c.id)
			if (desc && r >= 0) || (!desc && r <= 0) {
				continue
			}
		}
		match = append(match, e)
	}
	slices.SortFunc(match, func(a, b *entry) int {
		c := cmpKey(key(a), a.id, key(b), b.id)
		if c == 0 {
			c = strings.Compare(a.Path, b.Path)
		}
		if desc {
			return -c
		}
		return c
	})
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	n := min(limit, len(match))
	for _, e := range match[:n] {
		page = append(page, e.summary(names))
	}
	if n > 0 {
		back = cursor{key: key(match[0]), id: match[0].id}.String()
		if len(match) > n {
			next = cursor{key: key(match[n-1]), id: match[n-1].id}.String()
		}
	}
	return page, next, back
}

// checkListMatches compares a page and its cursors with a fresh scan's
// (of home, when f is nil).
func checkListMatches(t *testing.T, s *Store, home string, f *fresh, opts ListOptions, what string) (next string) {
	t.Helper()
	page, next, back, err := s.List(opts)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if f == nil {
		f = readFresh(t, home)
	}
	wantPage, wantNext, wantBack := f.list(t, opts)
	if diff := cmp.Diff(wantPage, page, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%s: page (-fresh scan +index):\n%s", what, diff)
	}
	if next != wantNext || back != wantBack {
		t.Fatalf("%s: cursors %q %q, a fresh scan gives %q %q", what, next, back, wantNext, wantBack)
	}
	return next
}

// listingsToCheck are the listings compared after each change.
var listingsToCheck = []ListOptions{
	{Limit: 7},
	{Limit: 7, Direction: SortAsc},
	{Limit: 5, SortKey: SortUpdatedAt},
	{Limit: 5, SortKey: SortUpdatedAt, Direction: SortAsc},
	{Limit: 4, Archived: true},
	{Limit: 4, Archived: true, SortKey: SortUpdatedAt},
	{Limit: 3, ModelProviders: []string{"local"}},
	{Limit: 3, Cwd: []string{"/work/p2"}, SourceKinds: []string{"vscode", "exec"}},
	{Limit: 3, SearchTerm: "Named"},
	{Limit: 3, SearchTerm: "prompt 2 of"},
}

// TestIndexAgreesWithAFreshScan changes a home behind the index's back
// (threads added, with ties, in old and new directories; removed;
// archived and unarchived, by the store and by hand; appended to;
// touched; renamed; written torn and completed) and compares every kind
// of listing, page by page through its cursors, with a brute-force scan
// of the files. The store starts on threads it has never read: its build
// reads their first lines only, and pages read the rest.
func TestIndexAgreesWithAFreshScan(t *testing.T) {
	holdFinishing(t)
	for _, mode := range indexModes {
		t.Run(mode.name, func(t *testing.T) {
			home := t.TempDir()
			gs := generate(t, home, 60)
			opts := mode.opts
			opts.NoGitInfo, opts.NoIndexWarmUp = true, true
			s, err := Open(home, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := testCtx(t)
			checkListMatches(t, s, home, nil, ListOptions{Limit: 3}, "first page")
			if n := s.idx.countPartial(); n == 0 {
				t.Fatal("the build read every file whole")
			}
			rng := rand.New(rand.NewPCG(17, uint64(len(mode.name))))
			pick := func() genThread { return gs[rng.IntN(len(gs))] }
			live := func(g genThread) (string, bool) {
				loc, err := s.Find(g.id)
				return loc.Path, err == nil
			}
			var older string // a cursor from before the last change
			for step := range 40 {
				op := rng.IntN(10)
				switch op {
				case 0, 1: // added by someone else, sometimes tied with another
					at := baseTime.Add(time.Duration(rng.IntN(400)) * time.Minute)
					if op == 1 {
						at = pick().created
					}
					m := testMeta(uuid7At(at, 1000+step), at)
					m.ModelProvider = []string{"openai", "mock", "local"}[rng.IntN(3)]
					m.Cwd = fmt.Sprintf("/work/p%d", rng.IntN(4))
					g := genThread{id: m.ID, created: at, provider: m.ModelProvider, cwd: m.Cwd, source: m.Source}
					g.path = writeThreadFile(t, home, m, 1+rng.IntN(3), "")
					gs = append(gs, g)
				case 2: // deleted by someone else
					if p, ok := live(pick()); ok {
						os.Remove(p)
					}
				case 3: // archived, by the store or by hand
					g := pick()
					if p, ok := live(g); ok && !strings.Contains(p, ArchivedDir) {
						if rng.IntN(2) == 0 {
							if _, err := s.Archive(g.id); err != nil {
								t.Fatal(err)
							}
						} else {
							os.MkdirAll(filepath.Join(home, ArchivedDir), 0o700)
							os.Rename(p, filepath.Join(home, ArchivedDir, filepath.Base(p)))
						}
					}
				case 4: // unarchived
					g := pick()
					if p, ok := live(g); ok && strings.Contains(p, ArchivedDir) {
						if _, err := s.Unarchive(g.id); err != nil {
							t.Fatal(err)
						}
					}
				case 5: // a turn appended by someone else
					if p, ok := live(pick()); ok {
						if err := appendRecord(p, turnRecords(t, threadIDFromFileName(filepath.Base(p)), 10+step, time.Now())); err != nil {
							t.Fatal(err)
						}
					}
				case 6: // touched
					if p, ok := live(pick()); ok {
						at := baseTime.Add(time.Duration(rng.IntN(10_000)) * time.Minute)
						os.Chtimes(p, at, at)
					}
				case 7: // renamed
					g := pick()
					if _, ok := live(g); ok {
						if err := s.SetName(ctx, g.id, fmt.Sprintf("Named again %d", step)); err != nil {
							t.Fatal(err)
						}
					}
				case 8: // a thread being written: its meta, then a torn turn
					at := baseTime.Add(time.Duration(rng.IntN(400)) * time.Minute)
					m := testMeta(uuid7At(at, 2000+step), at)
					p := writeThreadFile(t, home, m, 0, "")
					rec := turnRecords(t, m.ID, 0, at)
					cut := len(rec) / 2
					if err := appendRecord(p, rec[:cut]); err != nil {
						t.Fatal(err)
					}
					checkListMatches(t, s, home, nil, ListOptions{Limit: 100}, fmt.Sprintf("step %d, mid-write", step))
					f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
					f.Write(rec[cut:])
					f.Close()
					gs = append(gs, genThread{id: m.ID, created: at, path: p})
				case 9: // a directory of a day removed whole
					if p, ok := live(pick()); ok && !strings.Contains(p, ArchivedDir) {
						os.RemoveAll(filepath.Dir(p))
					}
				}
				f := readFresh(t, home)
				if older != "" {
					checkListMatches(t, s, home, f, ListOptions{Limit: 6, Cursor: older}, fmt.Sprintf("step %d (op %d), an earlier cursor", step, op))
				}
				for i, o := range listingsToCheck {
					for page := 0; ; page++ {
						next := checkListMatches(t, s, home, f, o, fmt.Sprintf("step %d (op %d), listing %d, page %d", step, op, i, page))
						if page == 0 && i == 0 {
							older = next
						}
						if next == "" {
							break
						}
						o.Cursor = next
					}
				}
			}
		})
	}
}

// TestManyNewThreadsAreReadFirstLinesFirst: a batch of threads copied into
// the home while the store runs (more than a refresh reads whole) is
// listed right, searched right, and read whole in the background.
func TestManyNewThreadsAreReadFirstLinesFirst(t *testing.T) {
	holdFinishing(t)
	s, home := openStore(t, Options{IndexRevalidate: time.Hour, NoIndexWarmUp: true})
	if page, _, _, _ := s.List(ListOptions{}); len(page) != 0 {
		t.Fatal("not empty")
	}
	generate(t, home, headBatch+40)
	next := checkListMatches(t, s, home, nil, ListOptions{Limit: 9}, "first page")
	if s.idx.countPartial() == 0 {
		t.Fatal("every new file was read whole")
	}
	checkListMatches(t, s, home, nil, ListOptions{Limit: 9, Cursor: next}, "second page")
	checkListMatches(t, s, home, nil, ListOptions{Limit: 9, SearchTerm: "prompt 2 of"}, "a search")
	s.idx.urgeFinish()
	deadline := time.Now().Add(10 * time.Second)
	for s.idx.countPartial() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d threads never read whole", s.idx.countPartial())
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkListMatches(t, s, home, nil, ListOptions{Limit: 100, SortKey: SortUpdatedAt}, "once read whole")
}

// TestListSeesThreadsOtherProcessesWrite: a thread another process writes
// into the home (the reference, sharing it) is listed at the next call,
// in a day directory that did not exist, and so is its next turn.
func TestListSeesThreadsOtherProcessesWrite(t *testing.T) {
	for _, mode := range indexModes {
		t.Run(mode.name, func(t *testing.T) {
			s, home := openStore(t, mode.opts)
			generate(t, home, 10)
			if page, _, _, _ := s.List(ListOptions{}); len(page) != 10 {
				t.Fatalf("%d threads", len(page))
			}
			at := time.Now().UTC().Truncate(time.Millisecond)
			src := writeThreadFile(t, t.TempDir(), testMeta(uuid7At(at, 1), at), 1, "")
			dst := filepath.Join(datedDir(home, at), filepath.Base(src))
			if out, err := exec.Command("sh", "-c", `mkdir -p "$(dirname "$2")" && cp "$1" "$2" && touch -d @1690000000 "$2"`, "sh", src, dst).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			page, _, _, _ := s.List(ListOptions{})
			if len(page) != 11 || page[0].ID != uuid7At(at, 1) || page[0].TurnCount != 1 {
				t.Fatalf("after another process wrote a thread: %v", ids(page))
			}
			// The turn's file is dated in the past, as a file last
			// written long ago: its mtime alone says nothing new.
			more := filepath.Join(t.TempDir(), "turn")
			os.WriteFile(more, turnRecords(t, page[0].ID, 1, at), 0o600)
			if out, err := exec.Command("sh", "-c", `cat "$1" >> "$2" && touch -d @1700000000 "$2"`, "sh", more, dst).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if page, _, _, _ := s.List(ListOptions{}); page[0].TurnCount != 2 {
				t.Fatalf("after another process appended a turn: %d turns", page[0].TurnCount)
			}
		})
	}
}

// TestADirectoryRemovedAndMadeAgainIsFollowed: a day's directory removed
// whole, then made again with a thread in it, is listed and followed
// again (its appends seen at once when watching).
func TestADirectoryRemovedAndMadeAgainIsFollowed(t *testing.T) {
	for _, mode := range indexModes {
		t.Run(mode.name, func(t *testing.T) {
			s, home := openStore(t, mode.opts)
			gs := generate(t, home, 10)
			listAll(t, s, ListOptions{})
			day := filepath.Dir(gs[9].path)
			if err := os.RemoveAll(day); err != nil {
				t.Fatal(err)
			}
			checkListMatches(t, s, home, nil, ListOptions{Limit: 100}, "removed")
			m := testMeta(uuid7At(gs[9].created, 77), gs[9].created)
			p := writeThreadFile(t, home, m, 1, "")
			if filepath.Dir(p) != day {
				t.Fatalf("%s is not in %s", p, day)
			}
			checkListMatches(t, s, home, nil, ListOptions{Limit: 100}, "made again")
			if err := appendRecord(p, turnRecords(t, m.ID, 5, time.Now())); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, m.CreatedAt, m.CreatedAt)
			checkListMatches(t, s, home, nil, ListOptions{Limit: 100}, "appended to")
			// Again, with no call between the removal and the making.
			if err := os.RemoveAll(day); err != nil {
				t.Fatal(err)
			}
			m = testMeta(uuid7At(gs[9].created, 78), gs[9].created)
			p = writeThreadFile(t, home, m, 2, "")
			checkListMatches(t, s, home, nil, ListOptions{Limit: 100}, "removed and made again")
			if err := appendRecord(p, turnRecords(t, m.ID, 5, time.Now())); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, m.CreatedAt, m.CreatedAt)
			checkListMatches(t, s, home, nil, ListOptions{Limit: 100}, "appended to again")
		})
	}
}

// TestLostIndexCacheIsRebuilt: without its cache file (deleted, or
// damaged) the index is rebuilt from the rollouts, the same.
func TestLostIndexCacheIsRebuilt(t *testing.T) {
	home := t.TempDir()
	generate(t, home, 40)
	s, err := Open(home, Options{NoGitInfo: true, NoIndexWarmUp: true})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := listAll(t, s, ListOptions{Limit: 9})
	s.Close()
	cache := filepath.Join(home, indexCacheName)
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string]func(){
		"deleted":   func() { os.Remove(cache) },
		"truncated": func() { os.WriteFile(cache, b[:len(b)/2], 0o600) },
		"flipped":   func() { c := slices.Clone(b); c[len(c)/2] ^= 0x55; os.WriteFile(cache, c, 0o600) },
	} {
		damage()
		var w warnings
		s, err := Open(home, Options{NoGitInfo: true, NoIndexWarmUp: true, OnWarning: w.add})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := listAll(t, s, ListOptions{Limit: 9})
		s.Close()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("cache %s (-before +rebuilt):\n%s", name, diff)
		}
		if name != "deleted" && !w.contains("index cache") {
			t.Fatalf("cache %s: no warning (%v)", name, w.list())
		}
		if !fileExists(cache) {
			t.Fatalf("cache %s: not written again", name)
		}
	}
}

// TestIndexCacheFollowsChangesMadeWhileClosed: the threads added, removed,
// archived and appended to while no agentd ran are right in the first
// listing after the next start, by creation and by update time, before
// the background pass that re-stats every file has run.
func TestIndexCacheFollowsChangesMadeWhileClosed(t *testing.T) {
	home := t.TempDir()
	gs := generate(t, home, 30)
	for _, g := range gs {
		os.Chtimes(g.path, g.created, g.created) // written long ago
	}
	opts := Options{NoGitInfo: true, NoIndexWarmUp: true}
	s, err := Open(home, opts)
	if err != nil {
		t.Fatal(err)
	}
	listAll(t, s, ListOptions{})
	s.Close()

	// Appended to, and dated in the past: a file last written long ago.
	newest := gs[len(gs)-1]
	if err := appendRecord(newest.path, turnRecords(t, newest.id, 7, time.Now())); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(newest.path, newest.created, newest.created)
	old := gs[2]
	if err := appendRecord(old.path, turnRecords(t, old.id, 7, time.Now())); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(old.path, later, later)
	os.Remove(gs[len(gs)-2].path)
	os.MkdirAll(filepath.Join(home, ArchivedDir), 0o700)
	os.Rename(gs[len(gs)-3].path, filepath.Join(home, ArchivedDir, filepath.Base(gs[len(gs)-3].path)))
	at := newest.created.Add(time.Minute)
	writeThreadFile(t, home, testMeta(uuid7At(at, 99), at), 1, "")

	s, err = Open(home, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, o := range []ListOptions{{}, {SortKey: SortUpdatedAt, Limit: 3}, {Archived: true}} {
		checkListMatches(t, s, home, nil, o, fmt.Sprintf("first %+v", o))
	}
}

// TestArchivedThreadsMoveBetweenListings: archiving and unarchiving (by
// the store, and by hand) moves a thread from one listing to the other at
// once, carrying its summary over.
func TestArchivedThreadsMoveBetweenListings(t *testing.T) {
	for _, mode := range indexModes {
		t.Run(mode.name, func(t *testing.T) {
			s, home := openStore(t, mode.opts)
			gs := generate(t, home, 12)
			listAll(t, s, ListOptions{})
			if _, err := s.Archive(gs[4].id); err != nil {
				t.Fatal(err)
			}
			live, _ := listAll(t, s, ListOptions{})
			arch, _ := listAll(t, s, ListOptions{Archived: true})
			if len(live) != 11 || slices.Contains(live, gs[4].id) || !slices.Equal(arch, []string{gs[4].id}) {
				t.Fatalf("archived: live %v, archived %v", live, arch)
			}
			if _, err := s.Unarchive(gs[4].id); err != nil {
				t.Fatal(err)
			}
			page, _, _, _ := s.List(ListOptions{SortKey: SortUpdatedAt, Limit: 1})
			if arch, _ := listAll(t, s, ListOptions{Archived: true}); len(arch) != 0 || page[0].ID != gs[4].id || page[0].Archived {
				t.Fatalf("unarchived: archived %v, most recent %v", arch, ids(page))
			}
			// By hand, into the archive and back.
			dst := filepath.Join(home, ArchivedDir, filepath.Base(gs[7].path))
			if err := os.Rename(gs[7].path, dst); err != nil {
				t.Fatal(err)
			}
			if arch, _, _, _ := s.List(ListOptions{Archived: true}); len(arch) != 1 || arch[0].ID != gs[7].id || arch[0].Preview == "" {
				t.Fatalf("archived by hand: %+v", arch)
			}
			if err := os.Rename(dst, gs[7].path); err != nil {
				t.Fatal(err)
			}
			if live, _ := listAll(t, s, ListOptions{}); len(live) != 12 {
				t.Fatalf("unarchived by hand: %d", len(live))
			}
		})
	}
}

// TestOrderKeepsEntriesSorted drives an order with random insertions and
// removals (with ties), checking every position and seek against a sorted
// slice.
func TestOrderKeepsEntriesSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	o := newOrder(createdKey)
	var want []*entry
	mk := func(i int) *entry {
		return &entry{Path: fmt.Sprintf("/p/%06d", i), id: fmt.Sprintf("id-%d", rng.IntN(50)), createdNs: int64(rng.IntN(300))}
	}
	check := func(step int) {
		t.Helper()
		var got []*entry
		for p := o.first(); o.valid(p); p = o.next(p) {
			got = append(got, o.at(p))
		}
		if len(got) != len(want) || o.len() != len(want) {
			t.Fatalf("step %d: %d entries, len %d, want %d", step, len(got), o.len(), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("step %d: entry %d is %+v, want %+v", step, i, *got[i], *want[i])
			}
		}
		var back []*entry
		for p := o.last(); o.valid(p); p = o.prev(p) {
			back = append(back, o.at(p))
		}
		slices.Reverse(back)
		if !slices.Equal(back, want) {
			t.Fatalf("step %d: backwards differs", step)
		}
		key, id := int64(rng.IntN(310)-5), fmt.Sprintf("id-%d", rng.IntN(50))
		after := slices.IndexFunc(want, func(e *entry) bool { return cmpKey(e.createdNs, e.id, key, id) > 0 })
		if p := o.after(key, id); (after < 0 && o.valid(p)) || (after >= 0 && (!o.valid(p) || o.at(p) != want[after])) {
			t.Fatalf("step %d: after(%d, %s) wrong", step, key, id)
		}
		before := -1
		for i, e := range want {
			if cmpKey(e.createdNs, e.id, key, id) < 0 {
				before = i
			}
		}
		if p := o.before(key, id); (before < 0 && o.valid(p)) || (before >= 0 && (!o.valid(p) || o.at(p) != want[before])) {
			t.Fatalf("step %d: before(%d, %s) wrong", step, key, id)
		}
	}
	next := 0
	for step := range 3000 {
		if len(want) > 0 && rng.IntN(5) < 2 {
			i := rng.IntN(len(want))
			if !o.remove(want[i]) {
				t.Fatalf("step %d: not removed", step)
			}
			want = slices.Delete(want, i, i+1)
		} else {
			e := mk(next)
			next++
			o.insert(e)
			i, _ := slices.BinarySearchFunc(want, e, o.cmp)
			want = slices.Insert(want, i, e)
		}
		if step%37 == 0 {
			check(step)
		}
	}
	check(-1)
	// Built at once, the same.
	o2 := newOrder(createdKey)
	o2.reset(slices.Clone(want))
	for p, i := o2.first(), 0; o2.valid(p); p, i = o2.next(p), i+1 {
		if o2.at(p) != want[i] {
			t.Fatalf("reset: entry %d differs", i)
		}
	}
}

// countPartial is how many entries have read their first line only.
func (x *index) countPartial() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, e := range x.entries {
		if e.Partial {
			n++
		}
	}
	return n
}

// holdFinishing keeps the background from completing partial entries
// until urgeFinish, and makes a build read only 5 files whole, for the
// test.
func holdFinishing(t *testing.T) {
	oldDelay, oldWhole := finishDelay, wholeFirstCount
	finishDelay, wholeFirstCount = time.Hour, 5
	t.Cleanup(func() { finishDelay, wholeFirstCount = oldDelay, oldWhole })
}

// TestWholeFirstPicksTheNewest: a build reads the newest live files whole
// and first, the others' first lines only.
func TestWholeFirstPicksTheNewest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 3, 10, 200} {
		var jobs []*scanJob
		for i := range size {
			at := baseTime.Add(time.Duration(rng.IntN(50)) * time.Minute)
			dir := "/h/sessions/d"
			if i%7 == 0 {
				dir = "/h/archived_sessions"
			}
			jobs = append(jobs, &scanJob{path: dir + "/" + FileName(at, fmt.Sprintf("id-%03d", i)), archived: i%7 == 0, head: true})
		}
		orig := slices.Clone(jobs)
		wholeFirst(jobs, 8)
		var live []*scanJob
		for _, j := range orig {
			if !j.archived {
				live = append(live, j)
			}
		}
		slices.SortStableFunc(live, func(a, b *scanJob) int {
			return strings.Compare(filepath.Base(b.path)[8:27], filepath.Base(a.path)[8:27])
		})
		n := min(8, len(live))
		for k := range n {
			if jobs[k].head || jobs[k].archived || filepath.Base(jobs[k].path)[8:27] != filepath.Base(live[k].path)[8:27] {
				t.Fatalf("size %d: job %d is %s (head %v), want the %dth newest %s", size, k, jobs[k].path, jobs[k].head, k, live[k].path)
			}
		}
		whole := 0
		for _, j := range jobs {
			if !j.head {
				whole++
			}
		}
		slices.SortFunc(orig, func(a, b *scanJob) int { return strings.Compare(a.path, b.path) })
		got := slices.Clone(jobs)
		slices.SortFunc(got, func(a, b *scanJob) int { return strings.Compare(a.path, b.path) })
		if whole != n || !slices.Equal(orig, got) {
			t.Fatalf("size %d: %d read whole, want %d; or jobs lost", size, whole, n)
		}
	}
}
