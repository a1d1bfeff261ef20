//go:build linux

package rollout

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// watcher tells the index what changed under the home's roots, with
// inotify: one watch per directory (the home, the roots, every directory
// under them). Events only mark paths and directories for the next refresh
// to look at. fsnotify is not used: a refresh must see every change made
// before it started, so it drains the queue itself (a non-blocking read),
// where fsnotify only delivers events on its own goroutine, later.
//
// A goroutine also drains the queue as events come, so that it does not
// overflow while no one lists (the kernel keeps 16,384 events by
// default); if it does overflow anyway, the index lists everything again.
type watcher struct {
	x    *index
	file *os.File
	rc   syscall.RawConn
	done chan struct{}

	// mu guards the reads of the descriptor and the fields below.
	mu     sync.Mutex
	wds    map[int32]string
	dirs   map[string]int32
	buf    []byte
	lost   bool // events were lost since the last drain
	broken error
	closed bool
}

const (
	watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MODIFY |
		unix.IN_ATTRIB | unix.IN_MOVE_SELF | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK
	// The home is watched only for its roots appearing or going.
	homeWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ONLYDIR
)

func newWatcher(x *index) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &watcher{x: x, file: f, rc: rc, done: make(chan struct{}), wds: map[int32]string{}, dirs: map[string]int32{},
		buf: make([]byte, 64<<10)}
	if err := w.addMask(x.home, homeWatchMask); err != nil {
		f.Close()
		return nil, err
	}
	go w.loop()
	return w, nil
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		err := w.rc.Read(func(fd uintptr) bool { return w.read(int(fd)) })
		w.mu.Lock()
		stop := err != nil || w.broken != nil || w.closed
		w.mu.Unlock()
		if stop {
			return
		}
	}
}

// drain takes the events queued now. lost: events were lost, everything
// must be listed again; broken: the watcher cannot go on.
func (w *watcher) drain() (lost bool, broken error) {
	err := w.rc.Control(func(fd uintptr) { w.read(int(fd)) })
	w.mu.Lock()
	defer w.mu.Unlock()
	lost, w.lost = w.lost, false
	if err != nil && w.broken == nil {
		w.broken = err
	}
	return lost, w.broken
}

// read handles the queued events; it reports whether the loop should
// stop waiting (an error).
func (w *watcher) read(fd int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return true
	}
	for {
		n, err := unix.Read(fd, w.buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return false
		case err != nil:
			w.broken = os.NewSyscallError("read inotify", err)
			return true
		case n <= 0:
			return false
		}
		w.parse(fd, w.buf[:n])
	}
}

func (w *watcher) parse(fd int, b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(b[0:]))
		mask := binary.NativeEndian.Uint32(b[4:])
		nameLen := int(binary.NativeEndian.Uint32(b[12:]))
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(b) {
			return
		}
		name := b[unix.SizeofInotifyEvent:end]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		w.event(fd, wd, mask, string(name))
		b = b[end:]
	}
}

// event marks what one event says changed. w.mu is held.
func (w *watcher) event(fd int, wd int32, mask uint32, name string) {
	x := w.x
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.lost = true
		return
	}
	dir, ok := w.wds[wd]
	if mask&unix.IN_IGNORED != 0 {
		// The watch is gone (its directory deleted or moved): if a
		// directory comes back at that path, it is listed and watched
		// again.
		if ok {
			delete(w.wds, wd)
			if w.dirs[dir] == wd {
				delete(w.dirs, dir)
				x.touchDir(dir)
				x.touchDir(filepath.Dir(dir))
			}
		}
		return
	}
	if !ok {
		return
	}
	switch {
	case name == "":
		// The directory itself moved or went: its parent's listing
		// says where, and a moved directory's watch would report
		// changes under its old name.
		if mask&(unix.IN_MOVE_SELF|unix.IN_DELETE_SELF) != 0 {
			if mask&unix.IN_MOVE_SELF != 0 {
				_, _ = unix.InotifyRmWatch(fd, uint32(wd))
			}
			x.touchDir(dir)
			x.touchDir(filepath.Dir(dir))
		}
	case dir == x.home:
		if mask&unix.IN_ISDIR != 0 && (name == SessionsDir || name == ArchivedDir) {
			x.touchDir(x.home)
		}
	case mask&unix.IN_ISDIR != 0:
		x.touchDir(dir)
	case isRolloutName(name):
		x.touch(filepath.Join(dir, name))
		if mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
			x.touchDir(dir)
		}
	}
}

func (w *watcher) watching(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.dirs[dir]
	return ok
}

// add watches dir. An error (the user's limit of watches reached) means
// the home cannot be watched whole.
func (w *watcher) add(dir string) error { return w.addMask(dir, watchMask) }

func (w *watcher) addMask(dir string, mask uint32) error {
	var wd int
	var err error
	if cerr := w.rc.Control(func(fd uintptr) { wd, err = unix.InotifyAddWatch(int(fd), dir, mask) }); cerr != nil {
		return cerr
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil // gone already: its parent's listing says so
		}
		return os.NewSyscallError("inotify_add_watch "+dir, err)
	}
	w.mu.Lock()
	w.wds[int32(wd)] = dir
	w.dirs[dir] = int32(wd)
	w.mu.Unlock()
	return nil
}

// forget stops watching dir (gone, or no longer under the roots).
func (w *watcher) forget(dir string) {
	w.mu.Lock()
	wd, ok := w.dirs[dir]
	if ok {
		delete(w.dirs, dir)
	}
	w.mu.Unlock()
	if ok {
		_ = w.rc.Control(func(fd uintptr) { _, _ = unix.InotifyRmWatch(int(fd), uint32(wd)) })
	}
}

func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.file.Close()
	<-w.done
}
