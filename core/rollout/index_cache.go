package rollout

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// indexCacheName is the index cache file under the home. It is only a
// cache: deleting it costs one full scan.
const indexCacheName = "rollout-index.v3.bin"

// oldIndexCacheNames are the caches of earlier agentd versions, removed
// when the cache is written: v1 did not read the reference's threads, v2
// was a gob file, slow to load at 100,000 threads.
var oldIndexCacheNames = []string{"rollout-index.v1.gob", "rollout-index.v2.gob"}

// The cache file is:
//
//	magic, then uvarint-prefixed sections:
//	strings: count, each one's length, then their bytes end to end:
//	  every string the rest names, once (a cwd shared by 10,000 threads
//	  is stored once)
//	body: the home, the directories, the entries (their count, then in
//	  parts of cachePartEntries, each part's length first, decoded in
//	  parallel), each string an index into the strings
//	crc32 (IEEE) of everything before it, 4 bytes little-endian
//
// Loading it reads the file and makes one string of the strings' bytes;
// each string is a slice of it. Entries are written sorted by
// creation time, so that sorting them on load finds them in order.
const indexCacheMagic = "agentd-rollout-index\x00v3.1\n"

// load reads the cache file, if any. Its entries are not verified: the
// build checks its directories, and a background pass its files.
func (x *index) loadCache() {
	if x.cachePath == "" {
		return
	}
	b, err := os.ReadFile(x.cachePath)
	if err != nil {
		return
	}
	es, dirs, err := decodeCache(b, x.home)
	if err != nil {
		if x.warn != nil {
			x.warn(fmt.Sprintf("rollout index cache %s unreadable, rebuilding it: %v", x.cachePath, err))
		}
		return
	}
	x.loaded = make([]*entry, 0, len(es))
	for i := range es {
		e := &es[i]
		if e.Sum == nil || !x.inRoots(e.Path) {
			continue
		}
		e.Archived, e.fromCache = x.archivedPath(e.Path), true
		e.finish()
		x.loaded = append(x.loaded, e)
		if e.Partial {
			x.partial = append(x.partial, e)
		}
	}
	// The two maps at once: most of a load is filling them.
	byPath := make(map[string]*entry, len(x.loaded))
	byID := make(map[string]*entry, len(x.loaded))
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, e := range x.loaded {
			byPath[e.Path] = e
		}
	})
	for _, e := range x.loaded {
		if e.id != "" {
			byID[e.id] = e
		}
	}
	wg.Wait()
	x.entries = byPath
	x.idMu.Lock()
	x.byID = byID
	x.idMu.Unlock()
	for p, d := range dirs {
		if x.inRoots(p) || p == x.roots[0] || p == x.roots[1] {
			x.dirs[p] = d
		}
	}
}

// errCacheFormat: the cache file is not one this version wrote whole.
var errCacheFormat = errors.New("not an index cache of this version, or damaged")

type cacheWriter struct {
	body    []byte
	strings map[string]uint64
	table   []string
}

func (w *cacheWriter) uint(v uint64) { w.body = binary.AppendUvarint(w.body, v) }
func (w *cacheWriter) int(v int64)   { w.body = binary.AppendVarint(w.body, v) }

func (w *cacheWriter) str(s string) {
	i, ok := w.strings[s]
	if !ok {
		i = uint64(len(w.table))
		w.strings[s] = i
		w.table = append(w.table, s)
	}
	w.uint(i)
}

func (w *cacheWriter) bool(v bool) {
	if v {
		w.body = append(w.body, 1)
	} else {
		w.body = append(w.body, 0)
	}
}

func (w *cacheWriter) time(t time.Time) {
	w.bool(!t.IsZero())
	if !t.IsZero() {
		w.int(t.UnixNano())
	}
}

// encodeCache writes entries and dirs in the cache format.
func encodeCache(home string, es []*entry, dirs map[string]*dirState) []byte {
	w := &cacheWriter{strings: map[string]uint64{}}
	w.str(home)
	paths := make([]string, 0, len(dirs))
	for p := range dirs {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	w.uint(uint64(len(paths)))
	for _, p := range paths {
		d := dirs[p]
		w.str(p)
		w.int(d.modNs)
		w.int(d.readNs)
		w.uint(uint64(len(d.files)))
		for _, f := range d.files {
			w.str(f)
		}
		w.uint(uint64(len(d.dirs)))
		for _, s := range d.dirs {
			w.str(s)
		}
	}
	// The entries in parts, each preceded by its length, so that they
	// are decoded in parallel.
	w.uint(uint64(len(es)))
	var parts [][]byte
	head := w.body
	for start := 0; start < len(es); start += cachePartEntries {
		w.body = nil
		for _, e := range es[start:min(start+cachePartEntries, len(es))] {
			w.entry(e)
		}
		parts = append(parts, w.body)
	}
	w.body = head
	for _, p := range parts {
		w.uint(uint64(len(p)))
	}
	for _, p := range parts {
		w.body = append(w.body, p...)
	}
	out := append([]byte(nil), indexCacheMagic...)
	out = binary.AppendUvarint(out, uint64(len(w.table)))
	for _, s := range w.table {
		out = binary.AppendUvarint(out, uint64(len(s)))
	}
	for _, s := range w.table {
		out = append(out, s...)
	}
	out = append(out, w.body...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
}

// cachePartEntries is how many entries a part of the cache holds.
const cachePartEntries = 8192

func (w *cacheWriter) entry(e *entry) {
	w.str(e.Path)
	w.int(e.Size)
	w.int(e.ModNs)
	w.uint(e.Ino)
	w.int(e.Offset)
	w.bool(e.Partial)
	s := e.Sum
	m := &s.Meta
	w.bool(s.HasMeta)
	w.str(m.ID)
	w.time(m.CreatedAt)
	for _, f := range []string{m.Cwd, m.ModelProvider, m.Model, m.Effort, m.Source, m.HistoryMode, m.ThreadSource,
		m.Originator, m.CLIVersion, m.ForkedFromID} {
		w.str(f)
	}
	w.bool(m.Git != nil)
	if m.Git != nil {
		w.str(m.Git.SHA)
		w.str(m.Git.Branch)
		w.str(m.Git.OriginURL)
	}
	w.str(s.Name)
	w.str(s.Preview)
	w.uint(uint64(s.PreviewTurn))
	w.str(string(s.Turns))
	w.str(s.LastTurnID)
	w.bool(s.CurOpen)
	w.bool(s.CurExplicit)
	w.str(s.Model)
	w.str(s.Effort)
	w.time(s.FirstAt)
}

type cacheReader struct {
	b     []byte
	table []string
	err   error
}

func (r *cacheReader) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) str() string {
	i := r.uint()
	if i >= uint64(len(r.table)) {
		r.fail()
		return ""
	}
	return r.table[i]
}

func (r *cacheReader) bool() bool {
	if len(r.b) == 0 {
		r.fail()
		return false
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v == 1
}

func (r *cacheReader) time() time.Time {
	if !r.bool() {
		return time.Time{}
	}
	return time.Unix(0, r.int()).UTC()
}

// count reads a count of items of at least min bytes each, refusing one
// the rest of the file cannot hold (a damaged count must not allocate).
func (r *cacheReader) count(minBytes int) int {
	n := r.uint()
	if n > uint64(len(r.b)/minBytes) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *cacheReader) fail() {
	if r.err == nil {
		r.err = errCacheFormat
	}
	r.b = nil
}

// decodeCache reads a cache file written for home.
func decodeCache(b []byte, home string) ([]entry, map[string]*dirState, error) {
	if len(b) < len(indexCacheMagic)+4 || string(b[:len(indexCacheMagic)]) != indexCacheMagic {
		return nil, nil, errCacheFormat
	}
	sum := binary.LittleEndian.Uint32(b[len(b)-4:])
	b = b[:len(b)-4]
	if crc32.ChecksumIEEE(b) != sum {
		return nil, nil, errCacheFormat
	}
	r := &cacheReader{b: b[len(indexCacheMagic):]}
	// The strings' bytes become one string; each is a slice of it.
	n := r.count(1)
	lens := make([]int, n)
	total := 0
	for i := range n {
		l := r.uint()
		if l > uint64(len(r.b)) {
			r.fail()
			break
		}
		lens[i] = int(l)
		total += int(l)
	}
	if r.err != nil || total > len(r.b) {
		return nil, nil, errCacheFormat
	}
	joined := string(r.b[:total])
	r.b = r.b[total:]
	r.table = make([]string, n)
	off := 0
	for i, l := range lens {
		r.table[i] = joined[off : off+l]
		off += l
	}

	if r.str() != home {
		return nil, nil, fmt.Errorf("%w: written for another home", errCacheFormat)
	}
	dirs := map[string]*dirState{}
	for range r.count(4) {
		p := r.str()
		d := &dirState{modNs: r.int(), readNs: r.int()}
		d.files = make([]string, r.count(1))
		for i := range d.files {
			d.files[i] = r.str()
		}
		d.dirs = make([]string, r.count(1))
		for i := range d.dirs {
			d.dirs[i] = r.str()
		}
		dirs[p] = d
	}
	n = r.count(20)
	es := make([]entry, n)
	sums := make([]summary, n)
	nparts := (n + cachePartEntries - 1) / cachePartEntries
	partLens := make([]int, nparts)
	for i := range partLens {
		l := r.uint()
		if l > uint64(len(r.b)) {
			r.fail()
			break
		}
		partLens[i] = int(l)
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	readers := make([]*cacheReader, nparts)
	for i, l := range partLens {
		if l > len(r.b) {
			return nil, nil, errCacheFormat
		}
		readers[i] = &cacheReader{b: r.b[:l], table: r.table}
		r.b = r.b[l:]
	}
	if len(r.b) != 0 {
		return nil, nil, errCacheFormat
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), nparts) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= nparts {
					return
				}
				lo, hi := i*cachePartEntries, min((i+1)*cachePartEntries, n)
				readers[i].entries(es[lo:hi], sums[lo:hi])
			}
		})
	}
	wg.Wait()
	for _, pr := range readers {
		if pr.err != nil || len(pr.b) != 0 {
			return nil, nil, errCacheFormat
		}
	}
	return es, dirs, nil
}

// entries decodes len(es) entries, and their summaries into sums.
func (r *cacheReader) entries(es []entry, sums []summary) {
	// The turns of every entry, end to end: each is a slice of it, whose
	// capacity ends with it (an append copies).
	var turns []byte
	for i := range es {
		e, s := &es[i], &sums[i]
		e.Path, e.Size, e.ModNs, e.Ino, e.Offset = r.str(), r.int(), r.int(), r.uint(), r.int()
		e.Partial = r.bool()
		m := &s.Meta
		s.HasMeta = r.bool()
		m.ID = r.str()
		m.CreatedAt = r.time()
		for _, f := range []*string{&m.Cwd, &m.ModelProvider, &m.Model, &m.Effort, &m.Source, &m.HistoryMode, &m.ThreadSource,
			&m.Originator, &m.CLIVersion, &m.ForkedFromID} {
			*f = r.str()
		}
		if r.bool() {
			m.Git = &GitInfo{SHA: r.str(), Branch: r.str(), OriginURL: r.str()}
		}
		s.Name, s.Preview, s.PreviewTurn = r.str(), r.str(), int(r.uint())
		if t := r.str(); t != "" {
			if cap(turns)-len(turns) < len(t) {
				turns = make([]byte, 0, max(64<<10, len(t)))
			}
			at := len(turns)
			turns = append(turns, t...)
			s.Turns = turns[at:len(turns):len(turns)]
		}
		s.LastTurnID, s.CurOpen, s.CurExplicit = r.str(), r.bool(), r.bool()
		s.Model, s.Effort, s.FirstAt = r.str(), r.str(), r.time()
		e.Sum = s
		if r.err != nil {
			return
		}
	}
}

// cacheSaver writes the cache in the background, a moment after a change
// and at most every saveInterval, so that a List that changed the index
// does not pay for writing it, and a busy daemon does not write it at
// every turn.
type cacheSaver struct {
	x      *index
	signal chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

var (
	saveDelay    = 2 * time.Second
	saveInterval = 30 * time.Second
)

func newCacheSaver(x *index) *cacheSaver {
	return &cacheSaver{x: x, signal: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// kick asks for a save; the saver goroutine starts on the first one.
func (c *cacheSaver) kick() {
	c.once.Do(func() { go c.run() })
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *cacheSaver) run() {
	defer close(c.done)
	for {
		select {
		case <-c.signal:
		case <-c.stop:
			return
		}
		select {
		case <-time.After(saveDelay):
		case <-c.stop:
			return
		}
		_ = c.x.save()
		select {
		case <-time.After(saveInterval):
		case <-c.stop:
			return
		}
	}
}

// close stops the watcher and the saver, and saves once more if anything
// is pending.
func (x *index) close() error {
	if x.stopping.Swap(true) {
		return nil // closed already
	}
	close(x.closing)
	x.urgePass()
	x.urgeFinish()
	x.mu.Lock()
	x.closed = true
	if x.watch != nil {
		x.watch.close()
		x.watch = nil
	}
	x.mu.Unlock()
	x.bg.Wait()
	if x.saver == nil {
		return nil
	}
	started := false
	x.saver.once.Do(func() { close(x.saver.done) }) // never started
	select {
	case <-x.saver.done:
	default:
		started = true
	}
	if started {
		close(x.saver.stop)
		<-x.saver.done
	}
	x.mu.Lock()
	unsaved := x.unsaved && x.built
	x.mu.Unlock()
	if !unsaved {
		return nil
	}
	return x.save()
}

// save writes the cache atomically (temporary file, rename). The entries
// and directory states are taken under x.mu and encoded after: they are
// not changed once published.
func (x *index) save() error {
	x.mu.Lock()
	es := make([]*entry, 0, len(x.entries))
	for _, e := range x.entries {
		es = append(es, e)
	}
	dirs := make(map[string]*dirState, len(x.dirs))
	for p, d := range x.dirs {
		dirs[p] = d
	}
	x.unsaved = false
	x.mu.Unlock()
	// In the order of the listing most often asked for, so that
	// building it on load finds them sorted.
	slices.SortFunc(es, createdOrder.cmp)
	data := encodeCache(x.home, es, dirs)
	tmp, err := os.CreateTemp(filepath.Dir(x.cachePath), ".rollout-index-*")
	if err != nil {
		x.markUnsaved()
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	_, err = bw.Write(data)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), x.cachePath)
	}
	if err == nil {
		for _, old := range oldIndexCacheNames {
			_ = os.Remove(filepath.Join(filepath.Dir(x.cachePath), old))
		}
	}
	if err != nil {
		os.Remove(tmp.Name())
		x.markUnsaved()
	}
	return err
}

func (x *index) markUnsaved() {
	x.mu.Lock()
	x.unsaved = true
	x.mu.Unlock()
}
