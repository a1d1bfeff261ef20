package rollout

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// indexCacheName is the index cache file under the home. It is only a
// cache: deleting it costs one full scan.
const indexCacheName = "rollout-index.v2.gob"

// oldIndexCacheName is the cache of agentd versions that wrote format 1;
// its summaries did not read the reference's threads, so it is dropped.
const oldIndexCacheName = "rollout-index.v1.gob"

const indexCacheVersion = 2

type cacheFile struct {
	Version int
	Home    string
	Entries []entry
	Dirs    []cacheDir
}

// cacheDir is a saved directory listing: a directory whose mtime has not
// changed is not listed again at start.
type cacheDir struct {
	Path          string
	ModNs, ReadNs int64
	Files, Dirs   []string
}

// load reads the cache file, if any. Entries it brings are checked like any
// other on the first refresh (which re-stats every file).
func (x *index) load() {
	x.loaded = true
	if x.cachePath == "" {
		return
	}
	f, err := os.Open(x.cachePath)
	if err != nil {
		return
	}
	defer f.Close()
	var c cacheFile
	if err := gob.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&c); err != nil || c.Version != indexCacheVersion || c.Home != x.home {
		if err != nil && x.warn != nil {
			x.warn(fmt.Sprintf("rollout index cache %s unreadable, rebuilding it: %v", x.cachePath, err))
		}
		return
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Sum == nil || !x.inRoots(e.Path) {
			continue
		}
		x.put(e)
	}
	for _, d := range c.Dirs {
		if x.inRoots(d.Path) || d.Path == filepath.Join(x.home, SessionsDir) || d.Path == filepath.Join(x.home, ArchivedDir) {
			x.dirs[d.Path] = &dirState{modNs: d.ModNs, readNs: d.ReadNs, files: d.Files, dirs: d.Dirs}
		}
	}
	// The first refresh starts a re-stat of every file it brought (the
	// files may have grown since the cache was written).
	x.lastFull = time.Time{}
}

// cacheSaver writes the cache in the background, at most every
// saveInterval, so that a List that changed the index does not pay for
// writing it.
type cacheSaver struct {
	x      *index
	signal chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

const saveInterval = 2 * time.Second

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
		_ = c.x.save()
		select {
		case <-time.After(saveInterval):
		case <-c.stop:
			return
		}
	}
}

// close stops the saver and saves once more if anything is pending.
func (x *index) close() error {
	x.mu.Lock()
	x.closed = true
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
	unsaved := x.unsaved
	x.mu.Unlock()
	if !unsaved {
		return nil
	}
	return x.save()
}

// save writes the cache atomically (temporary file, rename).
func (x *index) save() error {
	x.mu.Lock()
	c := cacheFile{Version: indexCacheVersion, Home: x.home, Entries: make([]entry, 0, len(x.entries))}
	for _, e := range x.entries {
		c.Entries = append(c.Entries, *e)
	}
	for p, d := range x.dirs {
		c.Dirs = append(c.Dirs, cacheDir{Path: p, ModNs: d.modNs, ReadNs: d.readNs, Files: d.files, Dirs: d.dirs})
	}
	x.unsaved = false
	x.mu.Unlock()
	tmp, err := os.CreateTemp(filepath.Dir(x.cachePath), ".rollout-index-*")
	if err != nil {
		x.markUnsaved()
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = gob.NewEncoder(bw).Encode(&c)
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
		_ = os.Remove(filepath.Join(filepath.Dir(x.cachePath), oldIndexCacheName))
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
