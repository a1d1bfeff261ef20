package rollout

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// The read cache keeps the threads a Store read without their history
// (thread/read, thread/turns/list, thread/items/list, the resume of a
// loaded thread), for as long as their files stay as they were: a client
// that pages through a long thread, or polls it, makes the store parse
// the file once rather than at every request. A file is "as it was" when
// its device, inode, size and modification time are: rollouts only grow,
// and a file moved (archived) or replaced has another path or inode.
// Reads with the history (loading a thread, forking it) are not answered
// from it, their history going on to a session that appends to it; what
// they parsed is kept without the history.
const (
	// readCacheMinFile is the smallest file kept: a smaller one is
	// parsed faster than a cache is worth.
	readCacheMinFile = 256 << 10
	// readCacheBudget bounds the sizes of the files kept, together.
	// The parsed turns take about as much memory as their file.
	readCacheBudget = 32 << 20
	// readCacheIdle is how long an entry lasts once unused: an idle
	// daemon gives its memory back.
	readCacheIdle = 30 * time.Second
)

// fileState is what a cached read was made from.
type fileState struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

// stateOf returns path's fileState; ok is false when it has none (gone,
// or a system without inodes).
func stateOf(path string) (fileState, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileState{}, false
	}
	return fileState{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
}

// readKey is what a cached read answers: the file, and the options that
// change what is read from it.
type readKey struct {
	path          string
	runningTurnID string
	limits        Limits
}

type readEntry struct {
	state fileState
	t     *Thread
	used  time.Time
}

// readCache holds parsed threads by readKey, within readCacheBudget.
type readCache struct {
	mu      sync.Mutex
	entries map[readKey]*readEntry
	bytes   int64
	// idle sweeps the cache readCacheIdle after its last use (get and
	// put sweep it too).
	idle *time.Timer
	// now is time.Now; tests replace it.
	now func() time.Time
}

func newReadCache() *readCache {
	return &readCache{entries: map[readKey]*readEntry{}, now: time.Now}
}

// get returns a copy of the thread cached for k if its file is still in
// state st; the copy shares the thread's turns, which no caller changes.
func (c *readCache) get(k readKey, st fileState) (*Thread, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	if e.state != st {
		c.dropLocked(k, e)
		return nil, false
	}
	e.used = c.now()
	c.sweepLocked()
	c.armLocked()
	t := *e.t
	return &t, true
}

// put caches t, read from a file in state st, when the file is large
// enough and fits the budget, dropping the least recently used entries
// to make room.
func (c *readCache) put(k readKey, st fileState, t *Thread) {
	if st.size < readCacheMinFile || st.size > readCacheBudget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[k]; ok {
		c.dropLocked(k, old)
	}
	for c.bytes+st.size > readCacheBudget {
		var oldest readKey
		var oe *readEntry
		for k, e := range c.entries {
			if oe == nil || e.used.Before(oe.used) {
				oldest, oe = k, e
			}
		}
		c.dropLocked(oldest, oe)
	}
	cp := *t
	cp.History = nil
	c.entries[k] = &readEntry{state: st, t: &cp, used: c.now()}
	c.bytes += st.size
	c.sweepLocked()
	c.armLocked()
}

// sweepLocked drops the entries unused for readCacheIdle: the idle timer
// only fires once the whole cache is unused, and an entry whose file is
// gone, moved or grown is never asked for again.
func (c *readCache) sweepLocked() {
	cutoff := c.now().Add(-readCacheIdle)
	for k, e := range c.entries {
		if !e.used.After(cutoff) {
			c.dropLocked(k, e)
		}
	}
}

func (c *readCache) dropLocked(k readKey, e *readEntry) {
	delete(c.entries, k)
	c.bytes -= e.state.size
}

// armLocked (re)starts the idle timer.
func (c *readCache) armLocked() {
	if c.idle == nil {
		c.idle = time.AfterFunc(readCacheIdle, c.expire)
		return
	}
	c.idle.Reset(readCacheIdle)
}

// expire drops what was not used for readCacheIdle.
func (c *readCache) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked()
	if len(c.entries) > 0 {
		c.idle.Reset(readCacheIdle)
	}
}

// clear drops every entry and stops the idle timer.
func (c *readCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.bytes = 0
	if c.idle != nil {
		c.idle.Stop()
	}
}
