package utility

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// watchDebounce is how long changes are gathered before one fs/changed
// notification reports them (the reference's is about 200 ms).
const watchDebounce = 200 * time.Millisecond

// fsWatch starts watching a directory (its direct children) or a file for
// the connection. A file is watched through its directory, so that it may
// be missing at first and survives being replaced by a rename.
func (u *utility) fsWatch(_ context.Context, r *rpc.Request, p *protocol.FsWatchParams) (*protocol.FsWatchResponse, error) {
	if err := u.roots().check("fs/watch", string(p.Path), true); err != nil {
		return nil, err
	}
	c := r.Conn()
	cu, err := u.forConn(c)
	if err != nil {
		return nil, err
	}
	ws, err := cu.watchSet()
	if err != nil {
		return nil, err
	}
	w, err := ws.add(p.WatchID, string(p.Path))
	if err != nil {
		return nil, err
	}
	return &protocol.FsWatchResponse{Path: protocol.AbsPath(w.path)}, nil
}

// fsUnwatch stops a watch; an unknown id is not an error.
func (u *utility) fsUnwatch(_ context.Context, r *rpc.Request, p *protocol.FsUnwatchParams) (*protocol.Empty, error) {
	c := r.Conn()
	u.mu.Lock()
	cu := u.conns[c]
	u.mu.Unlock()
	if cu != nil {
		cu.mu.Lock()
		ws := cu.watches
		cu.mu.Unlock()
		if ws != nil {
			ws.remove(p.WatchID)
		}
	}
	return &protocol.Empty{}, nil
}

// watchSet is one connection's watches over a single inotify instance
// (instances are a scarce per-user resource; watches are not).
type watchSet struct {
	c *rpc.Conn
	w *fsnotify.Watcher

	// mu guards the fields that follow.
	mu     sync.Mutex
	closed bool
	byID   map[string]*pathWatch
	// dirs counts the watches using each directory.
	dirs map[string]int
}

// pathWatch is one fs/watch.
type pathWatch struct {
	id string
	// path is the canonical path reported back.
	path string
	// dir is the directory watched; file is the watched file's path, ""
	// for a directory watch.
	dir, file string

	// pending and timer are guarded by the set's mu.
	pending map[string]struct{}
	timer   *time.Timer
}

func newWatchSet(c *rpc.Conn) (*watchSet, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fsError(err)
	}
	ws := &watchSet{c: c, w: w, byID: map[string]*pathWatch{}, dirs: map[string]int{}}
	go ws.loop()
	return ws, nil
}

// add starts watch id on path.
func (ws *watchSet) add(id, path string) (*pathWatch, error) {
	ws.mu.Lock()
	_, dup := ws.byID[id]
	ws.mu.Unlock()
	if dup {
		return nil, protocol.InvalidRequest("watchId already exists: %s", protocol.Cut(id))
	}
	pw, err := watchTarget(id, path)
	if err != nil {
		return nil, err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return nil, rpc.ErrConnClosed
	}
	if _, dup := ws.byID[id]; dup {
		return nil, protocol.InvalidRequest("watchId already exists: %s", protocol.Cut(id))
	}
	if ws.dirs[pw.dir] == 0 {
		if err := ws.w.Add(pw.dir); err != nil {
			return nil, fsError(err)
		}
	}
	ws.dirs[pw.dir]++
	ws.byID[id] = pw
	return pw, nil
}

// watchTarget resolves what to watch for path: a directory itself, or a
// file (existing or not, in an existing directory) through its directory.
func watchTarget(id, path string) (*pathWatch, error) {
	pw := &pathWatch{id: id, pending: map[string]struct{}{}}
	if canonical, err := filepath.EvalSymlinks(path); err == nil {
		st, err := os.Stat(canonical)
		if err != nil {
			return nil, fsError(err)
		}
		pw.path = canonical
		if st.IsDir() {
			pw.dir = canonical
		} else {
			pw.dir, pw.file = filepath.Dir(canonical), canonical
		}
		return pw, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fsError(err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil, fsError(err)
	}
	pw.dir = dir
	pw.file = filepath.Join(dir, filepath.Base(path))
	pw.path = pw.file
	return pw, nil
}

// remove stops watch id, if there is one.
func (ws *watchSet) remove(id string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	pw := ws.byID[id]
	if pw == nil {
		return
	}
	delete(ws.byID, id)
	if pw.timer != nil {
		pw.timer.Stop()
	}
	if ws.dirs[pw.dir]--; ws.dirs[pw.dir] <= 0 {
		delete(ws.dirs, pw.dir)
		if !ws.closed {
			// The directory may be gone already, taking its watch.
			_ = ws.w.Remove(pw.dir)
		}
	}
}

// close stops every watch.
func (ws *watchSet) close() {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return
	}
	ws.closed = true
	for _, pw := range ws.byID {
		if pw.timer != nil {
			pw.timer.Stop()
		}
	}
	ws.byID = map[string]*pathWatch{}
	ws.mu.Unlock()
	_ = ws.w.Close()
}

// loop turns kernel events into pending changes until the watcher closes.
func (ws *watchSet) loop() {
	for {
		select {
		case ev, ok := <-ws.w.Events:
			if !ok {
				return
			}
			ws.record(ev.Name, false)
		case err, ok := <-ws.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: every watch may have changed.
				ws.record("", true)
				continue
			}
			ws.c.Logger().Warn("fs/watch", zap.Error(err))
		}
	}
}

// record adds a changed path to the watches it concerns (all of them
// when everything may have changed) and arms their debounce timers.
func (ws *watchSet) record(name string, all bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, pw := range ws.byID {
		changed := name
		switch {
		case all:
			changed = pw.path
		case pw.file != "":
			if name != pw.file {
				continue
			}
		case name != pw.dir && filepath.Dir(name) != pw.dir:
			continue
		}
		pw.pending[changed] = struct{}{}
		if pw.timer == nil {
			pw.timer = time.AfterFunc(watchDebounce, func() { ws.flush(pw) })
		}
	}
}

// flush sends what pw gathered as one fs/changed notification.
func (ws *watchSet) flush(pw *pathWatch) {
	ws.mu.Lock()
	if ws.closed || ws.byID[pw.id] != pw || len(pw.pending) == 0 {
		pw.timer = nil
		ws.mu.Unlock()
		return
	}
	paths := make([]string, 0, len(pw.pending))
	for p := range pw.pending {
		paths = append(paths, p)
	}
	clear(pw.pending)
	pw.timer = nil
	ws.mu.Unlock()
	slices.Sort(paths)
	changed := make(protocol.List[protocol.AbsPath], len(paths))
	for i, p := range paths {
		changed[i] = protocol.AbsPath(p)
	}
	ws.c.Notify("fs/changed", protocol.FsChangedNotification{WatchID: pw.id, ChangedPaths: changed})
}
