package rollout

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// entry is the index's record of one rollout file. Entries are replaced,
// never changed, once published (the cache saver and the orders read them
// without x.mu), except for verified.
type entry struct {
	Path     string
	Archived bool
	Size     int64
	ModNs    int64
	Ino      uint64
	// Offset is how far the summary has read: the end of the last
	// complete record.
	Offset int64
	Sum    *summary
	// Partial: the summary has read only the file's first line (its
	// meta: enough to sort it and to filter it by cwd, provider and
	// source); the rest is read when a page needs it, or in the
	// background.
	Partial bool

	// id and createdNs are derived from the rest (finish).
	id        string
	createdNs int64
	// verified says this process has seen the file as the entry says; an
	// entry from the cache is not verified until checked. Guarded by
	// x.mu.
	verified bool
	// fromCache: the entry is in x.loaded; dropped: it is no longer in
	// the index (replaced, or its file gone). Guarded by x.mu.
	fromCache, dropped bool
}

// finish sets the derived fields.
// fileEntry is the entry of the file at path (as k says it was when it
// was read) whose summary, read up to end, is sum.
func fileEntry(path string, archived bool, k statKey, end int64, sum *summary, partial, verified bool) *entry {
	return (&entry{Path: path, Archived: archived, Size: k.size, ModNs: k.mod, Ino: k.ino,
		Offset: end, Sum: sum, Partial: partial, verified: verified}).finish()
}

func (e *entry) finish() *entry {
	e.id = e.threadID()
	e.createdNs = e.computeCreatedNs()
	return e
}

// listable: thread/list may show the entry (a thread with at least one
// turn, or not read far enough to say).
func (e *entry) listable() bool {
	return e.Sum != nil && e.Sum.HasMeta && (e.Partial || len(e.Sum.Turns) > 0)
}

func (e *entry) sameFile(k statKey) bool {
	return e.Ino == k.ino && e.Size == k.size && e.ModNs == k.mod
}

// dirState is one directory's listing, valid while its mtime holds.
// Published states are not changed (the cache saver reads them unlocked).
type dirState struct {
	modNs  int64
	readNs int64
	files  []string // rollout files, full paths, sorted
	dirs   []string // subdirectories, full paths, sorted
}

// errWatchUnsupported: the system has no watcher; the index polls.
var errWatchUnsupported = errors.New("watching directories is not supported on this system")

// mtimeSlack is how long after a directory or a file changed its mtime is
// not trusted alone: file systems with coarse timestamps can change one
// twice within one tick.
const mtimeSlack = 2 * time.Second

// watchRevalidate is how often the index re-stats every file and every
// directory when it watches the home: a safety net for changes the
// watcher cannot see (a network file system written from another host).
const watchRevalidate = 5 * time.Minute

// index keeps a summary of every rollout file under a home, in memory,
// sorted for thread/list, and in a cache file between runs (see the
// package doc).
//
// It is built once, in the background from Open (or by the first call):
// the cache is loaded, directories whose mtime changed since it was saved
// are listed again, and new or changed files are read. After that, a call
// costs the changes since the last one, not the number of threads: the
// home's directories are watched (inotify), and the events, with this
// process's own writes, name the files and directories to look at again.
// Where the home cannot be watched, each call checks the directories'
// mtimes instead (a stat per directory), and a background pass re-stats
// every file every revalidate for appends.
type index struct {
	home  string
	roots [2]string // sessions, archived_sessions
	// prefixes are the roots with a separator: what paths under them
	// start with.
	prefixes   [2]string
	revalidate time.Duration
	cachePath  string
	warn       func(string)
	lim        Limits
	noWatch    bool

	mu    sync.Mutex
	built bool
	// The entries, by path, by thread id and by inode. byID is also
	// guarded by idMu, so that Find does not wait for a refresh.
	entries map[string]*entry
	idMu    sync.RWMutex
	byID    map[string]*entry
	// byIno is built when first needed (a file new to the index, which
	// may be one it knows moved), and kept after; nil until then.
	byIno map[uint64]*entry
	// failed holds the files that are not rollouts (or could not be
	// read), as they were then: read again only once they change.
	failed map[string]statKey
	dirs   map[string]*dirState
	// orders are the listable entries sorted, by [archived][byUpdated];
	// each is built on first use and kept up to date after.
	orders [2][2]*order
	// loaded are the entries the cache brought, in its order (by
	// creation): an order is built from them without sorting.
	loaded []*entry
	// partial holds the entries published partial (some may be complete
	// or dropped since): the background reads the rest of them.
	partial   []*entry
	finishing bool
	// finishNow starts the completion at once (urgeFinish), which
	// otherwise waits finishDelay.
	finishDelay   time.Duration
	warmUpDelay   time.Duration
	finishNow     chan struct{}
	finishNowOnce sync.Once
	// building is set while the build reads the files it found.
	building bool
	// wholeFirst is wholeFirstCount when the index was made.
	wholeFirst int
	// recent holds, when polling, the files modified within mtimeSlack
	// of their reading: checked again at each call until they settle.
	recent map[string]bool

	watch *watcher // nil: polling
	// deepWalk asks the next refresh to check every directory's mtime
	// (the safety net of a watched home); relistAll to list every
	// directory again (the watcher lost events).
	deepWalk, relistAll bool
	// relist holds, during a deep walk, the directories to list again
	// whatever their mtimes say.
	relist map[string]bool

	lastFull     time.Time
	revalidating bool
	// checked is closed once every entry the cache brought has been
	// stat'ed (the first background pass); until then a page checks its
	// own entries, and a listing by modification time waits for it.
	checked     chan struct{}
	checkedDone atomic.Bool
	// passNow starts the first pass at once (urgePass).
	passNow     chan struct{}
	passNowOnce sync.Once

	closed bool
	// closing is closed when close begins.
	closing chan struct{}
	// stopping ends the background passes (close does not wait for them
	// to stat every file).
	stopping atomic.Bool
	bg       sync.WaitGroup
	// unsaved says the entries changed since the cache was written.
	unsaved bool

	// queue is the build's work while it runs in the background; a caller
	// that waits for the build helps with it.
	queue   atomic.Pointer[jobQueue]
	waiting atomic.Int32

	// dirtyMu guards the changes noticed since the last refresh: paths
	// of files (true: a listing found it, a regular file) and of
	// directories. It is not mu: a recorder's writer and the watcher mark
	// changes without waiting for a refresh in progress.
	dirtyMu   sync.Mutex
	dirty     map[string]bool
	dirtyDirs map[string]bool

	saver *cacheSaver
	// names is the session index: thread names, refreshed with the index.
	names *nameIndex

	// warming: the index is built in the background (warmUp); ready:
	// it is built. In between, pages by creation time are served from
	// the file names (index_first.go), and first holds the entries
	// those walks read.
	warming, ready atomic.Bool
	first          firstCache
	// namesFirst: pages may be served from the names (there is no cache,
	// or one that takes longer to load than a walk takes).
	namesFirst bool
	// holdWarm: the build waits (warmUpHeld).
	holdWarm bool
	// The window of creation times around a file name's (firstWindow).
	windowOnce   sync.Once
	winLo, winHi int64
}

func newIndex(home string, opts Options) *index {
	x := &index{
		home:  home,
		roots: [2]string{filepath.Join(home, SessionsDir), filepath.Join(home, ArchivedDir)},
		prefixes: [2]string{filepath.Join(home, SessionsDir) + string(filepath.Separator),
			filepath.Join(home, ArchivedDir) + string(filepath.Separator)},
		revalidate:  opts.IndexRevalidate,
		warn:        opts.OnWarning,
		lim:         opts.Limits,
		noWatch:     opts.NoIndexWatch,
		entries:     map[string]*entry{},
		byID:        map[string]*entry{},
		failed:      map[string]statKey{},
		dirs:        map[string]*dirState{},
		recent:      map[string]bool{},
		checked:     make(chan struct{}),
		passNow:     make(chan struct{}),
		finishNow:   make(chan struct{}),
		closing:     make(chan struct{}),
		finishDelay: finishDelay,
		warmUpDelay: warmUpDelay,
		holdWarm:    warmUpHeld,
		wholeFirst:  wholeFirstCount,
		dirty:       map[string]bool{},
		dirtyDirs:   map[string]bool{},
		names:       newNameIndex(home, opts.OnWarning),
	}
	x.namesFirst = true
	if !opts.NoIndexCache {
		x.cachePath = filepath.Join(home, indexCacheName)
		x.saver = newCacheSaver(x)
		if st, err := os.Stat(x.cachePath); err == nil && st.Size() <= namesFirstCacheBytes {
			x.namesFirst = false
		}
	}
	return x
}

// warmUp builds the index in the background, warmUpDelay after the store
// is opened, so that the first List finds it ready (a List that comes
// first builds it, and one that comes during the build waits for it, and
// helps). The delay leaves the processors to a starting daemon, which
// answers its first clients' handshakes before it reads the home.
func (x *index) warmUp() {
	x.warming.Store(true)
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		start := time.After(x.warmUpDelay)
		if x.holdWarm {
			start = nil
		}
		select {
		case <-start:
		case <-x.closing:
			return
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		if !x.closed && !x.built {
			x.buildLocked(true)
		}
	}()
}

// warmUpDelay is how long after Open the index is built in the
// background.
const warmUpDelay = 100 * time.Millisecond

// warmUpHeld keeps the background build from starting at all (tests that
// build the index when they choose).
var warmUpHeld = false

// lock takes x.mu; while the build runs in the background, the caller
// works on it until it is done.
func (x *index) lock() {
	if !x.mu.TryLock() {
		x.waiting.Add(1)
		if q := x.queue.Load(); q != nil {
			q.work()
		}
		x.mu.Lock()
		x.waiting.Add(-1)
	}
}

// touch records that path changed (this process wrote it, an event named
// it).
func (x *index) touch(path string) {
	x.dirtyMu.Lock()
	if _, ok := x.dirty[path]; !ok {
		x.dirty[path] = false
	}
	x.dirtyMu.Unlock()
}

// moved records that this process moved a file from src to dst (its
// directories' listings changed too).
func (x *index) moved(src, dst string) {
	x.touch(src)
	x.touch(dst)
	x.touchDir(filepath.Dir(src))
	x.touchDir(filepath.Dir(dst))
}

// touchListed records that a directory listing found path, a regular
// file, new.
func (x *index) touchListed(path string) {
	x.dirtyMu.Lock()
	x.dirty[path] = true
	x.dirtyMu.Unlock()
}

// touchDir records that dir's listing changed.
func (x *index) touchDir(dir string) {
	x.dirtyMu.Lock()
	x.dirtyDirs[dir] = true
	x.dirtyMu.Unlock()
}

// takeDirty returns the paths and directories marked since the last call.
func (x *index) takeDirty() (paths, dirs map[string]bool) {
	x.dirtyMu.Lock()
	defer x.dirtyMu.Unlock()
	if len(x.dirty) > 0 {
		paths, x.dirty = x.dirty, map[string]bool{}
	}
	if len(x.dirtyDirs) > 0 {
		dirs, x.dirtyDirs = x.dirtyDirs, map[string]bool{}
	}
	return paths, dirs
}

// takeDirtyPaths returns the paths marked since the last call, and leaves
// the directories for the next refresh.
func (x *index) takeDirtyPaths() map[string]bool {
	x.dirtyMu.Lock()
	defer x.dirtyMu.Unlock()
	if len(x.dirty) == 0 {
		return nil
	}
	paths := x.dirty
	x.dirty = map[string]bool{}
	return paths
}

// pathOf returns the path the index last saw for a thread, "" if none.
// It neither refreshes nor waits for a refresh: callers check the path.
func (x *index) pathOf(id string) string {
	x.idMu.RLock()
	defer x.idMu.RUnlock()
	if e := x.byID[id]; e != nil {
		return e.Path
	}
	return ""
}

// lookup refreshes the index and returns one thread's entry.
func (x *index) lookup(id string) *entry {
	x.lock()
	defer x.mu.Unlock()
	x.refreshLocked()
	x.idMu.RLock()
	e := x.byID[id]
	x.idMu.RUnlock()
	if e != nil && e.Partial {
		x.completeLocked([]*entry{e})
		x.idMu.RLock()
		e = x.byID[id]
		x.idMu.RUnlock()
	}
	return e
}

// archivedPath reports whether p is under archived_sessions.
func (x *index) archivedPath(p string) bool {
	return strings.HasPrefix(p, x.prefixes[1])
}

// inRoots reports whether p is a path under the home's roots (a cache file
// from elsewhere is not trusted).
func (x *index) inRoots(p string) bool {
	return strings.HasPrefix(p, x.prefixes[0]) || strings.HasPrefix(p, x.prefixes[1])
}

// buildLocked builds the index: the cache, then what changed since it
// was saved. background: it runs from warmUp, sharing the machine with a
// starting server, so it uses half the processors unless a caller waits.
func (x *index) buildLocked(background bool) {
	x.built = true
	x.loadCache()
	if !x.noWatch {
		w, err := newWatcher(x)
		if err != nil {
			if x.warn != nil && !errors.Is(err, errWatchUnsupported) {
				x.warn("rollout index: the home cannot be watched, polling it instead: " + err.Error())
			}
		} else {
			x.watch = w
		}
	}
	now := time.Now()
	visited := map[string]bool{}
	for i, r := range x.roots {
		x.walkLocked(r, i == 1, false, true, now, visited)
	}
	x.pruneUnvisitedLocked(visited)
	paths := x.takeDirtyPaths()
	x.building = true
	x.applyLocked(paths, background)
	x.building = false
	unverified := false
	for _, e := range x.entries {
		if !e.verified {
			unverified = true
			break
		}
	}
	x.lastFull = now
	if unverified && !x.closed {
		// Files may have grown while no one watched them.
		x.startPassLocked(true)
	} else {
		x.markChecked()
	}
	if x.saver != nil && x.unsaved {
		x.saver.kick()
	}
	x.ready.Store(true)
	x.dropFirst()
	x.startFinishingLocked()
}

func (x *index) markChecked() {
	if x.checkedDone.CompareAndSwap(false, true) {
		close(x.checked)
	}
}

// refreshLocked brings the index up to date with the files.
func (x *index) refreshLocked() {
	if !x.built {
		x.buildLocked(false)
	}
	x.names.refresh()
	now := time.Now()
	deep := x.watch == nil || x.deepWalk
	relistAll := x.relistAll
	x.deepWalk, x.relistAll = false, false
	if x.watch != nil {
		lost, broken := x.watch.drain()
		if broken != nil {
			x.stopWatchingLocked(broken)
		}
		if lost || broken != nil {
			// Events were lost: list everything again, and re-stat
			// every file.
			deep, relistAll = true, true
			x.lastFull = time.Time{}
		}
	}
	period := x.revalidate
	if x.watch != nil {
		period = max(period, watchRevalidate)
	}
	switch {
	case x.revalidate < 0:
		x.restatAllLocked()
	case now.Sub(x.lastFull) >= period && !x.revalidating && !x.closed:
		x.lastFull = now
		x.startPassLocked(false)
		if x.watch != nil {
			x.deepWalk = true // at the next call, not to delay this one
		}
	}
	paths, dirs := x.takeDirty()
	if deep {
		// The directories named changed are listed again whatever
		// their mtimes say.
		x.relist = dirs
		visited := map[string]bool{}
		for i, r := range x.roots {
			x.walkLocked(r, i == 1, relistAll, true, now, visited)
		}
		x.relist = nil
		x.pruneUnvisitedLocked(visited)
	} else {
		for d := range dirs {
			x.walkChangedLocked(d, now)
		}
	}
	if x.watch == nil {
		for p := range x.recent {
			x.touch(p)
		}
	}
	more := x.takeDirtyPaths()
	if paths == nil {
		paths = more
	} else {
		maps.Copy(paths, more)
	}
	x.applyLocked(paths, false)
	x.startFinishingLocked()
}

// walkChangedLocked lists again a directory an event named (and walks its
// new subdirectories); for the home itself, its roots.
func (x *index) walkChangedLocked(dir string, now time.Time) {
	if dir == x.home {
		for i, r := range x.roots {
			x.walkLocked(r, i == 1, true, false, now, nil)
		}
		return
	}
	if dir != x.roots[0] && dir != x.roots[1] && !x.inRoots(dir) {
		return
	}
	x.walkLocked(dir, x.archivedPath(dir) || dir == x.roots[1], true, false, now, nil)
}

// walkLocked brings dir's listing up to date: it is listed again when
// force, when it is new, or when its mtime says it changed, and the files
// added or removed since are marked. New subdirectories are walked (and
// watched); every subdirectory is when deep. visited, when set, collects
// the directories seen.
func (x *index) walkLocked(dir string, archived, force, deep bool, now time.Time, visited map[string]bool) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		x.pruneLocked(dir)
		return
	}
	if visited != nil {
		visited[dir] = true
	}
	if x.watch != nil && !x.watch.watching(dir) {
		// Watched before it is listed (or its listing trusted), so
		// that nothing added between the two is missed.
		if err := x.watch.add(dir); err != nil {
			x.stopWatchingLocked(err)
		}
	}
	old := x.dirs[dir]
	mod := st.ModTime().UnixNano()
	d := old
	if force || x.relist[dir] || d == nil || d.modNs != mod || d.readNs-d.modNs < int64(mtimeSlack) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		d = &dirState{modNs: mod, readNs: now.UnixNano()}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				d.dirs = append(d.dirs, p)
			case e.Type().IsRegular() && isRolloutName(e.Name()):
				d.files = append(d.files, p)
			}
		}
		x.dirs[dir] = d
		var oldFiles, oldDirs []string
		if old != nil {
			oldFiles, oldDirs = old.files, old.dirs
		}
		diffSorted(oldFiles, d.files, func(p string, added bool) {
			if added {
				x.touchListed(p)
			} else {
				x.touch(p)
			}
		})
		diffSorted(oldDirs, d.dirs, func(sub string, added bool) {
			if !added {
				x.pruneLocked(sub)
			}
		})
		for _, sub := range d.dirs {
			if _, known := x.dirs[sub]; !known {
				x.walkLocked(sub, archived, true, deep, now, visited)
			}
		}
	}
	if deep {
		for _, sub := range d.dirs {
			if visited == nil || !visited[sub] {
				x.walkLocked(sub, archived, force, deep, now, visited)
			}
		}
	}
}

// diffSorted calls fn with each path in only one of the sorted lists a
// (added false) and b (added true).
func diffSorted(a, b []string, fn func(p string, added bool)) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			fn(a[i], false)
			i++
		case i == len(a) || b[j] < a[i]:
			fn(b[j], true)
			j++
		default:
			i++
			j++
		}
	}
}

// pruneLocked forgets dir and everything under it: its files are marked,
// to be dropped once found gone.
func (x *index) pruneLocked(dir string) {
	prefix := dir + string(filepath.Separator)
	for p, d := range x.dirs {
		if p == dir || strings.HasPrefix(p, prefix) {
			for _, f := range d.files {
				x.touch(f)
			}
			delete(x.dirs, p)
			if x.watch != nil {
				x.watch.forget(p)
			}
		}
	}
}

// pruneUnvisitedLocked forgets the directories a deep walk did not find.
func (x *index) pruneUnvisitedLocked(visited map[string]bool) {
	for p := range x.dirs {
		if !visited[p] {
			x.pruneLocked(p)
		}
	}
}

// stopWatchingLocked falls back to polling, for good.
func (x *index) stopWatchingLocked(err error) {
	if x.watch == nil {
		return
	}
	if x.warn != nil {
		x.warn("rollout index: the home cannot be watched any more, polling it instead: " + err.Error())
	}
	x.watch.close()
	x.watch = nil
}

type statKey struct {
	ino       uint64
	size, mod int64
}

func keyOf(st os.FileInfo) statKey {
	return statKey{ino: inode(st), size: st.Size(), mod: st.ModTime().UnixNano()}
}

// scanJob brings one path's entry up to date. It runs without x.mu but
// while its holder waits, so it may read the maps.
type scanJob struct {
	x        *index
	path     string
	archived bool
	// listed: a directory listing gave the path as a regular file.
	listed bool
	// head: a new file's first line only (a cold build reads the rest
	// later); complete: read prev's file on from where it stopped.
	head, complete bool
	prev           *entry
	failed         *statKey

	key    statKey
	gone   bool // no file (or not a regular one)
	same   bool // prev is still right
	moved  *entry
	bad    bool // not a rollout
	result *entry
}

func (j *scanJob) run() {
	if j.complete {
		j.runComplete()
		return
	}
	if j.listed && j.prev == nil && j.failed == nil {
		j.runNew()
		return
	}
	st, err := os.Stat(j.path)
	if err != nil || !st.Mode().IsRegular() {
		j.gone = true
		return
	}
	k := keyOf(st)
	j.key = k
	if j.prev != nil && j.prev.sameFile(k) {
		j.same = true
		return
	}
	if j.movedHere(k) {
		return
	}
	if j.failed != nil && *j.failed == k {
		j.bad = true
		return
	}
	// A file that only grew is read from where the last scan stopped; one
	// rewritten in place (same size, new mtime) is read again whole.
	var prev *summary
	var off int64
	if p := j.prev; p != nil && p.Ino == k.ino && (k.size > p.Size || (p.Partial && k.size == p.Size && k.mod == p.ModNs)) {
		prev, off = p.Sum, p.Offset
	}
	sum, end, err := scanSummary(j.path, prev, off, j.x.lim)
	if err != nil {
		j.bad = true
		return
	}
	j.result = fileEntry(j.path, j.archived, k, end, sum, false, true)
}

// runNew reads a file a listing found, which the index does not know:
// opened first and stat'ed through the descriptor, which saves two stats
// per file in a cold build.
func (j *scanJob) runNew() {
	if j.head && j.runHead() {
		return
	}
	j.gone, j.bad, j.moved = false, false, nil
	f, st, err := openListed(j.path)
	if err != nil {
		j.openFailed(err)
		return
	}
	defer f.Close()
	k := keyOf(st)
	j.key = k
	if j.useFirst(k) || j.movedHere(k) {
		return
	}
	sum, end, err := summarizeFile(f, k.size, j.path, nil, 0, j.x.lim, j.head)
	if err != nil {
		j.bad = true
		return
	}
	j.result = fileEntry(j.path, j.archived, k, end, sum, end < k.size, true)
}

// useFirst takes, for a file new to the index, the entry a page served
// from the file names read whole, when the file is still as it was.
func (j *scanJob) useFirst(k statKey) bool {
	e := j.x.takeFirst(j.path, k)
	if e == nil {
		return false
	}
	c := *e
	c.verified = true
	j.result = &c
	return true
}

// openFailed notes why the job's file could not be opened: gone, or
// unreadable.
func (j *scanJob) openFailed(err error) {
	if errors.Is(err, fs.ErrNotExist) {
		j.gone = true
	} else {
		j.bad = true
	}
}

// runComplete reads the rest of a partial entry's file, from where its
// first line ended (all of it, if the file was replaced since).
func (j *scanJob) runComplete() {
	p := j.prev
	f, st, err := openRegular(j.path)
	if err != nil {
		j.openFailed(err)
		return
	}
	defer f.Close()
	k := keyOf(st)
	j.key = k
	prev, off := p.Sum, p.Offset
	if k.ino != p.Ino || k.size < p.Offset || (k.size == p.Size && k.mod != p.ModNs) {
		prev, off = nil, 0
	}
	sum, end, err := summarizeFile(f, k.size, j.path, prev, off, j.x.lim, false)
	if err != nil {
		j.bad = true
		return
	}
	j.result = fileEntry(j.path, j.archived, k, end, sum, false, true)
}

// movedHere reports whether the file at j.path, new to the index, is one
// it knows at another path (archived, unarchived, or moved by hand): the
// same inode, size and mtime.
func (j *scanJob) movedHere(k statKey) bool {
	if j.prev != nil || k.ino == 0 {
		return false
	}
	if m := j.x.byIno[k.ino]; m != nil && m.Path != j.path && m.Size == k.size && m.ModNs == k.mod {
		j.moved = m
		return true
	}
	return false
}

// jobQueue runs jobs on any goroutine that calls work.
type jobQueue struct {
	jobs []*scanJob
	next atomic.Int64
	wg   sync.WaitGroup
}

func (q *jobQueue) work() {
	for {
		i := int(q.next.Add(1)) - 1
		if i >= len(q.jobs) {
			return
		}
		q.jobs[i].run()
		q.wg.Done()
	}
}

// applyLocked looks at each path again: a file gone is dropped, a changed
// one read (from where its last scan stopped when it only grew), a moved
// one carried over. Many paths are read in parallel.
func (x *index) applyLocked(paths map[string]bool, background bool) {
	if len(paths) == 0 {
		return
	}
	jobs := make([]*scanJob, 0, len(paths))
	// Many new files (a cold build, a copy of many threads) are read
	// their first line only, which is enough to place them: a page reads
	// the rest of its own, the background the others'.
	head := x.building || len(paths) > headBatch
	for p, listed := range paths {
		if !x.inRoots(p) || !isRolloutName(filepath.Base(p)) {
			continue
		}
		j := &scanJob{x: x, path: p, archived: x.archivedPath(p), listed: listed, head: head, prev: x.entries[p]}
		if j.prev == nil && x.byIno == nil {
			x.byIno = make(map[uint64]*entry, len(x.entries))
			for _, e := range x.entries {
				if e.Ino != 0 {
					x.byIno[e.Ino] = e
				}
			}
		}
		if k, ok := x.failed[p]; ok {
			j.failed = &k
		}
		jobs = append(jobs, j)
	}
	if head {
		wholeFirst(jobs, x.wholeFirst)
	}
	x.runJobs(jobs, background)
	x.publishLocked(jobs)
}

// wholeFirstCount is how many of the newest new files a build reads
// whole: a full page, and one more.
var wholeFirstCount = MaxListLimit + 1

// wholeFirst makes the jobs of the n newest live threads (by the time in
// their file names) read their files whole, and puts them first: the
// first page after a build most likely shows them, and a long one is then
// read while the other workers read first lines, not after.
func wholeFirst(jobs []*scanJob, n int) {
	stamp := func(j *scanJob) string {
		base := filepath.Base(j.path)
		return base[len(filePrefix) : len(filePrefix)+len(fileTimeLayout)]
	}
	// The newest n, kept sorted newest first: jobs[:len(top)] as a
	// selection, swapped into place.
	top := make([]int, 0, n)
	for i, j := range jobs {
		if j.archived || j.prev != nil {
			continue
		}
		st := stamp(j)
		if len(top) == n && st <= stamp(jobs[top[n-1]]) {
			continue
		}
		k, _ := slices.BinarySearchFunc(top, st, func(t int, st string) int { return strings.Compare(st, stamp(jobs[t])) })
		if len(top) == n {
			top = top[:n-1]
		}
		top = slices.Insert(top, k, i)
	}
	for _, i := range top {
		jobs[i].head = false
	}
	// Moved to the front, in that order.
	for k, i := range top {
		if i != k {
			jobs[k], jobs[i] = jobs[i], jobs[k]
			for m := k + 1; m < len(top); m++ {
				if top[m] == k {
					top[m] = i
				}
			}
		}
	}
}

// headBatch is the most new files a refresh reads whole: past it, it
// reads their first lines only (as a build does).
const headBatch = 256

// publishLocked applies the results of jobs to the index.
func (x *index) publishLocked(jobs []*scanJob) {
	now := time.Now().UnixNano()
	changed := false
	for _, j := range jobs {
		switch {
		case j.gone:
			if j.prev != nil {
				x.removeLocked(j.prev)
				changed = true
			}
			delete(x.failed, j.path)
			delete(x.recent, j.path)
			continue
		case j.same:
			j.prev.verified = true
		case j.moved != nil:
			e := *j.moved
			e.Path, e.Archived, e.verified, e.fromCache, e.dropped = j.path, j.archived, true, false, false
			x.putLocked(&e)
			changed = true
			if e.Partial {
				x.partial = append(x.partial, &e)
			}
		case j.bad:
			if j.prev != nil {
				x.removeLocked(j.prev)
				changed = true
			}
			x.failed[j.path] = j.key
		case j.result != nil:
			delete(x.failed, j.path)
			x.putLocked(j.result)
			changed = true
			if j.result.Partial {
				x.partial = append(x.partial, j.result)
			}
		}
		// A file modified within mtimeSlack may have been read while
		// another process was still writing it: when polling, it is
		// checked again until it settles.
		if x.watch == nil && now-j.key.mod < int64(mtimeSlack) {
			x.recent[j.path] = true
		} else {
			delete(x.recent, j.path)
		}
	}
	if changed {
		x.unsaved = true
		if x.saver != nil && x.built {
			x.saver.kick()
		}
	}
}

// completeLocked reads the rest of the files of partial entries, in
// parallel.
func (x *index) completeLocked(es []*entry) {
	jobs := make([]*scanJob, 0, len(es))
	for _, e := range es {
		if !e.dropped && e.Partial {
			jobs = append(jobs, &scanJob{x: x, path: e.Path, archived: e.Archived, prev: e, complete: true})
		}
	}
	x.runJobs(jobs, false)
	x.publishLocked(jobs)
}

// finishDelay is how long the background waits before it completes the
// partial entries.
var finishDelay = time.Second

// urgeFinish makes the background complete the partial entries now.
func (x *index) urgeFinish() {
	x.finishNowOnce.Do(func() { close(x.finishNow) })
}

// finishBatch is how many partial entries the background completes
// between two takings of x.mu.
const finishBatch = 64

// startFinishingLocked completes the partial entries in the background,
// one file at a time, resting as long as it works: after a cold build, a
// search soon finds every thread read whole.
func (x *index) startFinishingLocked() {
	if x.finishing || len(x.partial) == 0 || x.closed {
		return
	}
	x.finishing = true
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		// A moment later: the first page after a build reads its own.
		select {
		case <-time.After(x.finishDelay):
		case <-x.finishNow:
		}
		for {
			x.mu.Lock()
			var batch []*scanJob
			for len(x.partial) > 0 && len(batch) < finishBatch {
				e := x.partial[len(x.partial)-1]
				x.partial = x.partial[:len(x.partial)-1]
				if !e.dropped && e.Partial {
					batch = append(batch, &scanJob{x: x, path: e.Path, archived: e.Archived, prev: e, complete: true})
				}
			}
			if len(batch) == 0 || x.stopping.Load() {
				x.finishing = false
				x.mu.Unlock()
				return
			}
			x.mu.Unlock()
			start := time.Now()
			for _, j := range batch {
				j.run() // reads only j.prev, which is not changed once published
			}
			// Half of one processor at most: the daemon serves meanwhile.
			select {
			case <-time.After(min(time.Since(start), 100*time.Millisecond)):
			case <-x.closing:
			}
			x.mu.Lock()
			// An entry replaced meanwhile (its file changed) is not.
			current := batch[:0]
			for _, j := range batch {
				if !j.prev.dropped && x.entries[j.path] == j.prev {
					current = append(current, j)
				}
			}
			x.publishLocked(current)
			x.mu.Unlock()
		}
	}()
}

// runJobs runs jobs, in parallel when there are many (a cold index has
// thousands). In the background build it leaves half the processors to
// the server, until a caller waits for it.
func (x *index) runJobs(jobs []*scanJob, background bool) {
	if len(jobs) == 0 {
		return
	}
	q := &jobQueue{jobs: jobs}
	q.wg.Add(len(jobs))
	workers := runtime.GOMAXPROCS(0)
	if len(jobs) < 8 {
		workers = 1
	}
	if background {
		x.queue.Store(q)
		defer x.queue.Store(nil)
		if x.waiting.Load() == 0 {
			workers = max(1, workers/2)
		}
	}
	for range workers - 1 {
		go q.work()
	}
	q.work()
	q.wg.Wait()
}

// putLocked publishes e, replacing any entry at its path.
func (x *index) putLocked(e *entry) {
	if old := x.entries[e.Path]; old != nil {
		x.removeLocked(old)
	}
	x.entries[e.Path] = e
	if e.id != "" {
		x.idMu.Lock()
		x.byID[e.id] = e
		x.idMu.Unlock()
	}
	if e.Ino != 0 && x.byIno != nil {
		x.byIno[e.Ino] = e
	}
	if e.listable() {
		a := boolIndex(e.Archived)
		for _, o := range x.orders[a] {
			if o != nil {
				o.insert(e)
			}
		}
	}
}

func (x *index) removeLocked(e *entry) {
	if x.entries[e.Path] == e {
		delete(x.entries, e.Path)
		e.dropped = true
	}
	if e.id != "" && x.byID[e.id] == e {
		x.idMu.Lock()
		delete(x.byID, e.id)
		x.idMu.Unlock()
	}
	if e.Ino != 0 && x.byIno[e.Ino] == e {
		delete(x.byIno, e.Ino)
	}
	if e.listable() {
		for _, o := range x.orders[boolIndex(e.Archived)] {
			if o != nil {
				o.remove(e)
			}
		}
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// orderLocked returns the listable entries of one listing sorted by one
// key, building the order on first use.
func (x *index) orderLocked(archived, byUpdated bool) *order {
	a, u := boolIndex(archived), boolIndex(byUpdated)
	if o := x.orders[a][u]; o != nil {
		return o
	}
	o := newOrder(createdKey)
	if byUpdated {
		o = newOrder(updatedKey)
	}
	var es []*entry
	if x.loaded != nil {
		// The cache's entries, in its order, are the start (most of
		// them still there, few changed): sorted already, or nearly.
		es = make([]*entry, 0, len(x.loaded))
		for _, e := range x.loaded {
			if !e.dropped && e.Archived == archived && e.listable() {
				es = append(es, e)
			}
		}
		for _, e := range x.entries {
			if !e.fromCache && e.Archived == archived && e.listable() {
				es = append(es, e)
			}
		}
	} else {
		for _, e := range x.entries {
			if e.Archived == archived && e.listable() {
				es = append(es, e)
			}
		}
	}
	o.reset(es)
	x.orders[a][u] = o
	return o
}

func (e *entry) threadID() string {
	if e.Sum != nil && e.Sum.HasMeta && e.Sum.Meta.ID != "" {
		return e.Sum.Meta.ID
	}
	return threadIDFromFileName(filepath.Base(e.Path))
}

// restatAllLocked re-stats every file now, marking the changed ones (a
// negative Options.IndexRevalidate).
func (x *index) restatAllLocked() {
	for p, e := range x.entries {
		st, err := os.Stat(p)
		if err != nil || !e.sameFile(keyOf(st)) {
			x.touch(p)
		} else {
			e.verified = true
		}
	}
}

// startPassLocked re-stats every known file in the background and marks
// the ones that changed, for the next refresh to read. first: the pass
// after the build, which closes x.checked; it starts passDelay later (a
// first call is answered without it), or as soon as a call waits for it.
func (x *index) startPassLocked(first bool) {
	x.revalidating = true
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		if first {
			select {
			case <-time.After(passDelay):
			case <-x.passNow:
			}
		}
		x.mu.Lock()
		keys := make([]fileKey, 0, len(x.entries))
		for p, e := range x.entries {
			keys = append(keys, fileKey{p, statKey{ino: e.Ino, size: e.Size, mod: e.ModNs}})
		}
		x.mu.Unlock()
		for _, k := range keys {
			if x.stopping.Load() {
				break
			}
			st, err := os.Stat(k.path)
			if err != nil || keyOf(st) != k.k {
				x.touch(k.path)
			}
		}
		x.mu.Lock()
		x.revalidating = false
		if first {
			// Every entry is now either the file's or marked to be
			// read again.
			for _, e := range x.entries {
				e.verified = true
			}
			x.markChecked()
		}
		x.mu.Unlock()
	}()
}

// passDelay is how long after the build the first pass starts.
var passDelay = time.Second

type fileKey struct {
	path string
	k    statKey
}

// urgePass starts the first pass now if it is still waiting.
func (x *index) urgePass() {
	x.passNowOnce.Do(func() { close(x.passNow) })
}
