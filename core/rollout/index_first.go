package rollout

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The first pages of a listing by creation time are served from the file
// names while the index is not built yet (a first start on a home of many
// threads, with no cache, reads every file's first line before the index
// can answer): a file's name carries the second it was created, and the
// dated directories sort the names, so walking them newest (or oldest)
// first, and reading only the files the page reaches, gives the page the
// index would give, in the same order, with the same cursors.
//
// A file's creation time (its meta's timestamp) is trusted to lie within
// a window around the time in its name: agentd names a file after its
// meta's timestamp (UTC); the reference names it in local time, so a file
// of the reference is off by the local zone's offset. The window is that
// of every offset the local zone has had in the last year, and UTC's: a
// file read is placed once no file left to read can come before it. Every
// file read is checked against the window, and so is every name in the
// directories listed (a name dated another day than its directory); a
// directory or a file where the layout does not say, or a page that
// would read too many files (a filter that matches few threads), gives
// up, and the page waits for the index, as does a listing by
// modification time.

// errFirstGiveUp: the names cannot serve the page; the index will.
var errFirstGiveUp = errors.New("rollout: the first page cannot be served from the file names")

// errFirstDone: the page is full.
var errFirstDone = errors.New("rollout: the first page is full")

// firstMinReads is the fewest files a walk may read before it gives up;
// past limit+1 it allows several times the page.
const firstMinReads = 256

// early reports whether a page should be served from the file names: the
// index is being built in the background (or soon will be), is not ready
// yet, and has no cache that loads sooner than a walk reads a page.
func (x *index) early() bool {
	return x.namesFirst && x.warming.Load() && !x.ready.Load() && !x.stopping.Load()
}

// namesFirstCacheBytes is the size of the index cache past which the
// first pages are served from the names all the same. At a daemon's start
// (agentd-load's history scenario, the first page after a restart, 2 vCPUs)
// waiting for the cache took 7 ms at 2,500 threads (a 0.6 MiB cache),
// 9–16 ms at 5,000 (1.2 MiB) and 17–18 ms at 10,000 (2.4 MiB), about
// 3.5 ms and 6 ms a MiB; a walk took 10–12 ms whatever the count. A
// variable for the tests.
var namesFirstCacheBytes int64 = 3 << 19 // 1.5 MiB, about 6,000 threads

// firstWindow returns the bounds, from the time in a file's name, of its
// creation time: [name+lo, name+hi).
func (x *index) firstWindow() (lo, hi int64) {
	x.windowOnce.Do(func() { x.winLo, x.winHi = nameWindow(time.Local, time.Now()) })
	return x.winLo, x.winHi
}

// nameWindow is the window of creation times around the time in a file's
// name (read as UTC) for files named in UTC (agentd's) or in loc's time
// (the reference's) over the year and a bit before now: loc's summer and
// winter times. A file named in a zone east of UTC was created before the
// time its name says.
func nameWindow(loc *time.Location, now time.Time) (lo, hi int64) {
	minOff, maxOff := 0, 0
	for d := 0; d <= 400; d += 10 {
		_, off := now.AddDate(0, 0, -d).In(loc).Zone()
		minOff, maxOff = min(minOff, off), max(maxOff, off)
	}
	return -int64(maxOff) * int64(time.Second), int64(time.Second) - int64(minOff)*int64(time.Second)
}

// firstPage serves a page by creation time from the file names; ok is
// false when it cannot (see above).
func (x *index) firstPage(o *ListOptions, desc bool, after *cursor, limit int) (es []*entry, more, ok bool) {
	g := &firstWalk{x: x, o: o, archived: o.Archived, desc: desc, after: after, limit: limit,
		maxReads: max(firstMinReads, 4*(limit+1))}
	g.lo, g.hi = x.firstWindow()
	x.names.refresh()
	var err error
	if o.Archived {
		err = g.walkFlat(x.roots[1])
	} else {
		err = g.walkDated(x.roots[0])
	}
	switch {
	case errors.Is(err, errFirstDone):
	case err != nil:
		return nil, false, false
	default:
		g.flushAll()
	}
	if len(g.out) > limit {
		return g.out[:limit], true, true
	}
	return g.out, false, true
}

// firstWalk is one page's walk.
type firstWalk struct {
	x        *index
	o        *ListOptions
	archived bool
	desc     bool
	after    *cursor
	limit    int
	lo, hi   int64
	// pending are the entries read that the page wants but that cannot
	// be placed yet, sorted ascending; out is the page so far.
	pending, out []*entry
	reads        int
	maxReads     int
}

// skip reports whether every file whose name's time is within [first,
// last] is before the cursor's position (none is on the page).
func (g *firstWalk) skip(first, last int64) bool {
	switch {
	case g.after == nil:
		return false
	case g.desc:
		return first+g.lo > g.after.key
	default:
		return last+g.hi <= g.after.key
	}
}

// flush moves to the page the pending entries that come before every
// file not read yet, whose names' times are at most (descending) or at
// least (ascending) ns; it reports whether the page is full (and one
// more entry found).
func (g *firstWalk) flush(ns int64) bool {
	for len(g.pending) > 0 {
		if g.desc {
			e := g.pending[len(g.pending)-1]
			if e.createdNs < ns+g.hi {
				break
			}
			g.pending = g.pending[:len(g.pending)-1]
			g.out = append(g.out, e)
		} else {
			e := g.pending[0]
			if e.createdNs >= ns+g.lo {
				break
			}
			g.pending = g.pending[1:]
			g.out = append(g.out, e)
		}
		if len(g.out) > g.limit {
			return true
		}
	}
	return false
}

// flushAll moves every pending entry to the page: no file is left.
func (g *firstWalk) flushAll() {
	for len(g.pending) > 0 && len(g.out) <= g.limit {
		if g.desc {
			g.out = append(g.out, g.pending[len(g.pending)-1])
			g.pending = g.pending[:len(g.pending)-1]
		} else {
			g.out = append(g.out, g.pending[0])
			g.pending = g.pending[1:]
		}
	}
}

// visit takes the next file in the walk's order, whose name says it was
// created in the second ns.
func (g *firstWalk) visit(path string, ns int64) error {
	if g.skip(ns, ns) {
		return nil
	}
	if g.flush(ns) {
		return errFirstDone
	}
	if g.reads++; g.reads > g.maxReads {
		return errFirstGiveUp
	}
	e, err := g.x.readFirst(path, g.archived)
	if err != nil {
		if firstSkips(err) {
			return nil // gone, or not a rollout: the index lists neither
		}
		// Anything else (out of descriptors, an I/O error) may pass: the
		// index, which reads the file again later, answers instead.
		return errFirstGiveUp
	}
	if d := e.createdNs - ns; d < g.lo || d >= g.hi {
		return errFirstGiveUp
	}
	if !e.listable() {
		return nil
	}
	if a := g.after; a != nil {
		c := createdOrder.cmpAt(e, a.key, a.id)
		if (g.desc && c >= 0) || (!g.desc && c <= 0) {
			return nil
		}
	}
	g.x.names.mu.Lock()
	match := g.o.matches(e, g.x.names)
	g.x.names.mu.Unlock()
	if !match {
		return nil
	}
	i, _ := slices.BinarySearchFunc(g.pending, e, createdOrder.cmp)
	g.pending = slices.Insert(g.pending, i, e)
	return nil
}

// dirEnt is an entry of a directory a walk listed.
type dirEnt struct {
	name         string
	dir, regular bool
}

// firstDir is a directory's listing, valid while its mtime holds.
type firstDir struct {
	modNs, readNs int64
	ents          []dirEnt // sorted by name
}

// readDir lists dir, sorted by name (a directory that does not exist is
// empty); the listing is kept for the next walks while the directory's
// mtime says it did not change.
func (x *index) readDir(dir string) ([]dirEnt, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	mod := st.ModTime().UnixNano()
	x.first.mu.Lock()
	d := x.first.dirs[dir]
	x.first.mu.Unlock()
	if d != nil && d.modNs == mod && d.readNs-d.modNs >= int64(mtimeSlack) {
		return d.ents, nil
	}
	now := time.Now().UnixNano()
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]dirEnt, len(ents))
	for i, e := range ents {
		out[i] = dirEnt{name: e.Name(), dir: e.IsDir(), regular: e.Type().IsRegular()}
	}
	x.first.mu.Lock()
	if !x.ready.Load() {
		if x.first.dirs == nil {
			x.first.dirs = map[string]*firstDir{}
		}
		x.first.dirs[dir] = &firstDir{modNs: mod, readNs: now, ents: out}
	}
	x.first.mu.Unlock()
	return out, nil
}

// walkFlat walks a directory of rollout files (archived_sessions).
func (g *firstWalk) walkFlat(dir string) error {
	ents, err := g.x.readDir(dir)
	if err != nil {
		return errFirstGiveUp
	}
	type file struct {
		path string
		ns   int64
	}
	files := make([]file, 0, len(ents))
	for _, e := range ents {
		name := e.name
		switch {
		case e.dir:
			return errFirstGiveUp // the index reads it too
		case !e.regular || !isRolloutName(name):
		default:
			t, ok := timeFromFileName(name)
			if !ok {
				return errFirstGiveUp
			}
			files = append(files, file{filepath.Join(dir, name), t.UnixNano()})
		}
	}
	// Sorted by name already: by the time in it.
	for i := range files {
		f := files[i]
		if g.desc {
			f = files[len(files)-1-i]
		}
		if err := g.visit(f.path, f.ns); err != nil {
			return err
		}
	}
	return nil
}

// walkDated walks the dated directories under root (YYYY/MM/DD), in the
// listing's order, listing only those the page reaches.
func (g *firstWalk) walkDated(root string) error {
	// Years whose times fit in int64 nanoseconds (the keys): any other
	// gives up rather than order a wrapped key.
	years, err := g.datedSubdirs(root, 4, 1678, 2261)
	if err != nil {
		return err
	}
	for _, y := range g.ordered(years) {
		start := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := g.enter(start, start.AddDate(1, 0, 0)); err != nil {
			if err == errSkipDir {
				continue
			}
			return err
		}
		ydir := filepath.Join(root, pad(y, 4))
		months, err := g.datedSubdirs(ydir, 2, 1, 12)
		if err != nil {
			return err
		}
		for _, m := range g.ordered(months) {
			start := time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC)
			if err := g.enter(start, start.AddDate(0, 1, 0)); err != nil {
				if err == errSkipDir {
					continue
				}
				return err
			}
			mdir := filepath.Join(ydir, pad(m, 2))
			days, err := g.datedSubdirs(mdir, 2, 1, 31)
			if err != nil {
				return err
			}
			for _, d := range g.ordered(days) {
				start := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
				if start.Day() != d {
					return errFirstGiveUp // 02/31
				}
				if err := g.enter(start, start.AddDate(0, 0, 1)); err != nil {
					if err == errSkipDir {
						continue
					}
					return err
				}
				if err := g.walkDay(filepath.Join(mdir, pad(d, 2)), start.Format("2006-01-02")); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// errSkipDir: no file of the directory is on the page.
var errSkipDir = errors.New("rollout: skip the directory")

// enter is called before a directory whose files' names are dated within
// [start, end) is listed: errSkipDir when none of them is on the page,
// errFirstDone when the page is full without them.
func (g *firstWalk) enter(start, end time.Time) error {
	first, last := start.UnixNano(), end.UnixNano()-int64(time.Second)
	if g.skip(first, last) {
		return errSkipDir
	}
	ns := last
	if !g.desc {
		ns = first
	}
	if g.flush(ns) {
		return errFirstDone
	}
	return nil
}

// walkDay visits the rollout files of a day's directory, whose names must
// carry its date.
func (g *firstWalk) walkDay(dir, date string) error {
	ents, err := g.x.readDir(dir)
	if err != nil {
		return errFirstGiveUp
	}
	n := len(ents)
	for i := range ents {
		e := ents[i]
		if g.desc {
			e = ents[n-1-i]
		}
		name := e.name
		switch {
		case e.dir:
			return errFirstGiveUp
		case !e.regular || !isRolloutName(name):
			continue
		}
		t, ok := timeFromFileName(name)
		if !ok || name[len(filePrefix):len(filePrefix)+len(date)] != date {
			return errFirstGiveUp
		}
		if err := g.visit(filepath.Join(dir, name), t.UnixNano()); err != nil {
			return err
		}
	}
	return nil
}

// ordered returns ns (ascending) in the walk's order.
func (g *firstWalk) ordered(ns []int) []int {
	if g.desc {
		slices.Reverse(ns)
	}
	return ns
}

// datedSubdirs returns the numbers of dir's subdirectories, each named by
// digits numbers within [lo, hi], ascending. Anything else the index would
// list (another directory, a rollout file) gives up.
func (g *firstWalk) datedSubdirs(dir string, digits, lo, hi int) ([]int, error) {
	ents, err := g.x.readDir(dir)
	if err != nil {
		return nil, errFirstGiveUp
	}
	ns := make([]int, 0, len(ents))
	for _, e := range ents {
		name := e.name
		switch {
		case e.dir:
			n, err := strconv.Atoi(name)
			if len(name) != digits || err != nil || n < lo || n > hi || name[0] == '+' || name[0] == '-' {
				return nil, errFirstGiveUp
			}
			ns = append(ns, n)
		case e.regular && isRolloutName(name):
			return nil, errFirstGiveUp
		}
	}
	// Sorted by name already: fixed-width digits.
	return ns, nil
}

func pad(n, digits int) string {
	s := strconv.Itoa(n)
	for len(s) < digits {
		s = "0" + s
	}
	return s
}

// firstCache holds the entries the walks read, by path, until the index
// is ready: a page asked for again during the build reads no file again.
type firstCache struct {
	mu   sync.Mutex
	m    map[string]firstEntry
	dirs map[string]*firstDir
}

// firstEntry is an entry a walk read. settled: the file's mtime was
// mtimeSlack old when it was read, so the build may take the entry (a
// file modified more recently may change again without its mtime or,
// rollouts being appended to, its size showing it; for the walks, which
// end with the build, a change of size or mtime is enough to see).
type firstEntry struct {
	e       *entry
	settled bool
}

// firstSkips reports whether a walk leaves a file that could not be read
// off its page, as the index does for good: it is gone, or it is not a
// rollout the index lists.
func firstSkips(err error) bool {
	for _, e := range []error{fs.ErrNotExist, ErrNotRollout, ErrFileTooLarge, ErrLineTooLong, ErrNotRegularFile} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// readFirst returns the entry of the file at path, read whole, or why it
// could not be read.
func (x *index) readFirst(path string, archived bool) (*entry, error) {
	x.first.mu.Lock()
	e := x.first.m[path].e
	x.first.mu.Unlock()
	if e != nil {
		if st, err := os.Stat(path); err == nil && e.sameFile(keyOf(st)) {
			return e, nil
		}
	}
	f, st, err := openListed(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	k := keyOf(st)
	sum, end, err := summarizeFile(f, k.size, path, nil, 0, x.lim, false)
	if err != nil {
		return nil, err
	}
	e = fileEntry(path, archived, k, end, sum, false, false)
	// Kept for the next walks (a page asked for again, while a thread
	// that was just written is on it, reads it no more), and for the
	// build when settled.
	x.first.mu.Lock()
	if !x.ready.Load() {
		if x.first.m == nil {
			x.first.m = map[string]firstEntry{}
		}
		x.first.m[path] = firstEntry{e: e, settled: time.Now().UnixNano()-k.mod >= int64(mtimeSlack)}
	}
	x.first.mu.Unlock()
	return e, nil
}

// takeFirst returns the entry a walk read for path when the file is still
// as it was (k), for the build to use instead of reading it.
func (x *index) takeFirst(path string, k statKey) *entry {
	x.first.mu.Lock()
	defer x.first.mu.Unlock()
	if f := x.first.m[path]; f.e != nil && f.settled && f.e.sameFile(k) {
		return f.e
	}
	return nil
}

// dropFirst forgets the walks' entries: the index is ready.
func (x *index) dropFirst() {
	x.first.mu.Lock()
	x.first.m, x.first.dirs = nil, nil
	x.first.mu.Unlock()
}
