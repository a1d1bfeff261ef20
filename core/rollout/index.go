package rollout

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// entry is the index's record of one rollout file. Entries are replaced,
// never changed, once published (the cache saver reads them unlocked),
// except for seen.
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

	// seen is the refresh generation that last found the file.
	seen uint64
}

// dirState caches one directory's listing, valid while its mtime holds.
type dirState struct {
	modNs  int64
	readNs int64
	files  []string
	dirs   []string
	seen   uint64
}

// mtimeSlack is how long after a directory changed its listing is not
// trusted by mtime alone: file systems with coarse timestamps can change a
// directory twice within one tick.
const mtimeSlack = 2 * time.Second

// index keeps a summary of every rollout file under a home, in memory,
// and in a cache file between runs (see the package doc). Each List
// refreshes it: directories whose mtime changed are listed again, files
// this process wrote or that changed recently are stat'ed again, and a
// background pass re-stats all of them every Options.IndexRevalidate.
type index struct {
	home       string
	revalidate time.Duration
	cachePath  string
	warn       func(string)
	lim        Limits

	mu      sync.Mutex
	loaded  bool
	entries map[string]*entry
	byID    map[string]*entry
	byIno   map[uint64]*entry
	dirs    map[string]*dirState
	// changed holds, during a refresh, the paths marked dirty before it.
	changed  map[string]bool
	gen      uint64
	lastFull time.Time
	// revalidating is set while a background re-stat of every file runs.
	revalidating bool
	closed       bool
	bg           sync.WaitGroup
	// unsaved says the entries changed since the cache was written.
	unsaved bool

	// dirtyMu guards dirty, the paths changed since the last refresh. It
	// is not mu: a recorder's writer marks its file without waiting for a
	// refresh in progress.
	dirtyMu sync.Mutex
	dirty   map[string]bool

	saver *cacheSaver
	// names is the session index: thread names, refreshed with the index.
	names *nameIndex
}

func newIndex(home string, opts Options) *index {
	x := &index{
		home:       home,
		revalidate: opts.IndexRevalidate,
		warn:       opts.OnWarning,
		lim:        opts.Limits,
		entries:    map[string]*entry{},
		byID:       map[string]*entry{},
		byIno:      map[uint64]*entry{},
		dirs:       map[string]*dirState{},
		dirty:      map[string]bool{},
		names:      newNameIndex(home, opts.OnWarning),
	}
	if !opts.NoIndexCache {
		x.cachePath = filepath.Join(home, indexCacheName)
		x.saver = newCacheSaver(x)
	}
	return x
}

// warmUp loads the cache and refreshes in the background, so that the
// first List after start finds the index ready (a List that comes first
// waits for it).
func (x *index) warmUp() {
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		x.mu.Lock()
		defer x.mu.Unlock()
		if !x.closed {
			x.refreshLocked()
		}
	}()
}

// touch records that this process changed path.
func (x *index) touch(path string) {
	x.dirtyMu.Lock()
	x.dirty[path] = true
	x.dirtyMu.Unlock()
}

// takeDirty returns the paths marked since the last call.
func (x *index) takeDirty() map[string]bool {
	x.dirtyMu.Lock()
	defer x.dirtyMu.Unlock()
	d := x.dirty
	x.dirty = map[string]bool{}
	return d
}

// pathOf returns the path the index last saw for a thread, "" if none.
// It does not refresh: callers check the path exists.
func (x *index) pathOf(id string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.loaded {
		x.load()
	}
	if e := x.byID[id]; e != nil {
		return e.Path
	}
	return ""
}

// snapshot refreshes the index and returns its entries.
func (x *index) snapshot() []*entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refreshLocked()
	out := make([]*entry, 0, len(x.entries))
	for _, e := range x.entries {
		out = append(out, e)
	}
	return out
}

// lookup refreshes the index and returns one thread's entry.
func (x *index) lookup(id string) *entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refreshLocked()
	return x.byID[id]
}

type scanJob struct {
	path     string
	archived bool
	st       os.FileInfo
	prev     *entry // continue from it when it is the same, grown file
	lim      Limits
	result   *entry
}

func (x *index) refreshLocked() {
	if !x.loaded {
		x.load()
	}
	now := time.Now()
	// Re-stat'ing every file (appends by other processes) costs tens of
	// milliseconds at 10,000 threads; List does not wait for it unless
	// told to (a negative IndexRevalidate): a background pass marks the
	// changed files, and the next refresh reads them.
	full := x.revalidate < 0
	if !full && now.Sub(x.lastFull) >= x.revalidate && !x.revalidating && !x.closed {
		x.lastFull = now
		x.startRevalidation()
	}
	x.gen++
	x.names.refresh()
	x.changed = x.takeDirty()
	var jobs []*scanJob
	x.walk(filepath.Join(x.home, SessionsDir), false, full, now, &jobs)
	x.walk(filepath.Join(x.home, ArchivedDir), true, full, now, &jobs)
	runScans(jobs)
	changed := len(jobs) > 0
	for _, j := range jobs {
		if j.result != nil {
			x.put(j.result)
		}
	}
	for p, e := range x.entries {
		if e.seen != x.gen {
			x.remove(p, e)
			changed = true
		}
	}
	for p, d := range x.dirs {
		if d.seen != x.gen {
			delete(x.dirs, p)
		}
	}
	x.changed = nil
	if changed && x.saver != nil {
		x.unsaved = true
		x.saver.kick()
	}
}

func (x *index) walk(dir string, archived, full bool, now time.Time, jobs *[]*scanJob) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return
	}
	d := x.dirs[dir]
	mod := st.ModTime().UnixNano()
	if d == nil || d.modNs != mod || d.readNs-d.modNs < int64(mtimeSlack) {
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
	}
	d.seen = x.gen
	for _, sub := range d.dirs {
		x.walk(sub, archived, full, now, jobs)
	}
	for _, p := range d.files {
		x.visit(p, archived, full, now, jobs)
	}
}

func (x *index) visit(p string, archived, full bool, now time.Time, jobs *[]*scanJob) {
	e := x.entries[p]
	// A file modified within mtimeSlack may have been read while another
	// process was still writing it: it is checked again until it settles.
	settled := e != nil && now.UnixNano()-e.ModNs >= int64(mtimeSlack)
	if settled && !full && !x.changed[p] {
		e.seen = x.gen
		return
	}
	st, err := os.Stat(p)
	if err != nil {
		return // gone since the listing; dropped with the unseen
	}
	ino, size, mod := inode(st), st.Size(), st.ModTime().UnixNano()
	if e != nil && e.Ino == ino && e.Size == size && e.ModNs == mod {
		e.seen = x.gen
		return
	}
	if e == nil && ino != 0 {
		if m := x.byIno[ino]; m != nil && m.Size == size && m.ModNs == mod {
			// Moved here (archive, unarchive, or by hand): same file.
			moved := *m
			moved.Path, moved.Archived, moved.seen = p, archived, x.gen
			x.put(&moved)
			return
		}
	}
	j := &scanJob{path: p, archived: archived, st: st, lim: x.lim}
	// A file that only grew is read from where the last scan stopped; one
	// rewritten in place (same size, new mtime) is read again whole.
	if e != nil && e.Ino == ino && size > e.Size {
		j.prev = e
	}
	*jobs = append(*jobs, j)
}

// runScans reads the files of jobs, in parallel: a cold index has
// thousands of them.
func runScans(jobs []*scanJob) {
	if len(jobs) == 0 {
		return
	}
	work := make(chan *scanJob)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				j.run()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
}

func (j *scanJob) run() {
	var prev *summary
	var off int64
	if j.prev != nil {
		prev, off = j.prev.Sum, j.prev.Offset
	}
	sum, end, err := scanSummary(j.path, prev, off, j.lim)
	if err != nil {
		return
	}
	j.result = &entry{
		Path: j.path, Archived: j.archived, Size: j.st.Size(), ModNs: j.st.ModTime().UnixNano(),
		Ino: inode(j.st), Offset: end, Sum: sum,
	}
}

// put publishes e (seen in this generation), replacing any entry at its path.
func (x *index) put(e *entry) {
	e.seen = x.gen
	if old := x.entries[e.Path]; old != nil {
		x.unlinkIDs(old)
	}
	x.entries[e.Path] = e
	if id := e.threadID(); id != "" {
		x.byID[id] = e
	}
	if e.Ino != 0 {
		x.byIno[e.Ino] = e
	}
}

func (x *index) remove(p string, e *entry) {
	delete(x.entries, p)
	x.unlinkIDs(e)
}

func (x *index) unlinkIDs(e *entry) {
	if id := e.threadID(); id != "" && x.byID[id] == e {
		delete(x.byID, id)
	}
	if e.Ino != 0 && x.byIno[e.Ino] == e {
		delete(x.byIno, e.Ino)
	}
}

func (e *entry) threadID() string {
	if e.Sum != nil && e.Sum.HasMeta && e.Sum.Meta.ID != "" {
		return e.Sum.Meta.ID
	}
	return threadIDFromFileName(filepath.Base(e.Path))
}

// inRoots reports whether p is a rollout path under the home's roots (a
// cache file from elsewhere is not trusted).
func (x *index) inRoots(p string) bool {
	for _, r := range []string{SessionsDir, ArchivedDir} {
		if strings.HasPrefix(p, filepath.Join(x.home, r)+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

type statKey struct {
	path      string
	size, mod int64
	ino       uint64
}

// startRevalidation re-stats every known file in the background and marks
// the ones that changed. x.mu must be held.
func (x *index) startRevalidation() {
	keys := make([]statKey, 0, len(x.entries))
	for p, e := range x.entries {
		keys = append(keys, statKey{path: p, size: e.Size, mod: e.ModNs, ino: e.Ino})
	}
	x.revalidating = true
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		var changed []string
		for _, k := range keys {
			st, err := os.Stat(k.path)
			if err != nil || st.Size() != k.size || st.ModTime().UnixNano() != k.mod || inode(st) != k.ino {
				changed = append(changed, k.path)
			}
		}
		for _, p := range changed {
			x.touch(p)
		}
		x.mu.Lock()
		x.revalidating = false
		x.mu.Unlock()
	}()
}
