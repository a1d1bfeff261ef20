package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// recorderConfig is what a Recorder needs from its Store.
type recorderConfig struct {
	warn          func(string)
	maxItemOutput int
	sizeWarning   int64
	queueSize     int
	// onWrite is called (on the writer goroutine) after bytes reached the
	// file; the store's index uses it to know the file changed.
	onWrite func(path string)
	// setName records a thread's name in the session index.
	setName func(threadID, name string) error
	// open opens the rollout file for appending; tests replace it to
	// inject failures.
	open func(path string, create bool) (appendFile, error)
	// onFailed and onRecovered are Options.OnWriteFailed and
	// OnWriteRecovered; fault is Options.WriteFault.
	onFailed    func(threadID string, err error, first bool)
	onRecovered func(threadID string)
	fault       func() error
	// maxFile and maxLine are the readers' caps (Limits); onSize is
	// Options.OnSizeWarning.
	maxFile, maxLine int64
	onSize           func(threadID string, size, limit int64, over bool)
}

// appendFile is the part of *os.File the writer uses.
type appendFile interface {
	io.Writer
	Sync() error
	Close() error
}

func openAppend(path string, create bool) (appendFile, error) {
	flags := os.O_WRONLY | os.O_APPEND
	if create {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		flags |= os.O_CREATE | os.O_EXCL
	}
	return os.OpenFile(path, flags, 0o600)
}

// maxBatch is how many encoded bytes the writer holds before it writes
// without waiting for the queue to go idle.
const maxBatch = 1 << 20

// writer is the state of a Recorder's writer goroutine; only that goroutine
// touches it.
type writer struct {
	r   *Recorder
	cfg *recorderConfig

	f appendFile
	// buf holds whole encoded records not yet written. A failed write
	// leaves its unwritten suffix here.
	buf []byte
	// spare is the queue array the writer gives the Recorder back when it
	// takes a batch.
	spare []command
	// materialize says the file should exist; created says it does.
	materialize bool
	created     bool
	// existing is set for a recorder opened on a file written before: its
	// tail is checked for a torn line before the first append.
	existing bool
	// syncDue is set when buf holds a turn end: the next write is fsynced.
	syncDue bool
	// inTurn: a turn started and has not ended; the writer then waits for
	// the turn's next records instead of stopping.
	inTurn     bool
	dirSynced  bool
	failing    bool
	size       int64
	sizeWarned bool
	overWarned bool
}

func newRecorder(threadID, path string, cfg *recorderConfig, first []byte, existing bool, size int64) *Recorder {
	qs := cfg.queueSize
	if qs <= 0 {
		qs = DefaultQueueSize
	}
	r := &Recorder{threadID: threadID, path: path, qsize: qs, wake: make(chan struct{}, 1), exited: make(chan struct{}), setName: cfg.setName}
	r.room = sync.NewCond(&r.qmu)
	w := &writer{r: r, cfg: cfg, buf: first, existing: existing, size: size}
	r.w = w
	if existing {
		w.materialize, w.created, w.dirSynced = true, true, true
		r.created.Store(true)
	}
	return r
}

// Retrying a failing rollout by itself: first after retryFirst, then
// twice as late each time, at most every retryMax.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
)

// run is the writer goroutine: it handles the queued commands until the
// queue is empty and everything is written, then stops (Recorder.park),
// unless a turn is under way: it then waits for the turn's next records.
// While writes fail it stays, and a timer retries them even if nothing
// else comes, so that a freed disk is noticed (and said) without waiting
// for the next turn's end.
func (w *writer) run() {
	var retry *time.Timer
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	backoff, armed := retryFirst, false
	for {
		// Drain what is queued before touching the disk, so a burst of
		// records becomes one write (group commit).
		if w.drain() {
			close(w.r.exited)
			return
		}
		if !w.failing {
			w.flushIdle()
		}
		switch {
		case !w.failing:
			backoff = retryFirst
			if armed {
				retry.Stop()
				armed = false
			}
			if !w.inTurn {
				w.release()
				if w.r.park() {
					return
				}
				continue
			}
		case !armed:
			if retry == nil {
				retry = time.NewTimer(backoff)
			} else {
				retry.Reset(backoff)
			}
			armed = true
			backoff = min(2*backoff, retryMax)
		}
		var retryC <-chan time.Time
		if armed {
			retryC = retry.C
		}
		select {
		case <-w.r.wake:
		case <-retryC:
			armed = false
			w.flushIdle()
		}
	}
}

// drain handles the queued commands until there are none; it reports
// whether the writer must stop (Close).
func (w *writer) drain() bool {
	for {
		batch := w.r.take(w.spare)
		if batch == nil {
			return false
		}
		for i, c := range batch {
			if w.handle(c) {
				clear(batch[i:])
				return true
			}
		}
		clear(batch)
		w.spare = batch[:0]
	}
}

// release gives back what an idle writer holds beyond its state: the
// spare queue array and the written buffer's array (records kept in
// memory, before the file exists or while writes fail, stay).
func (w *writer) release() {
	w.spare = nil
	if len(w.buf) == 0 {
		w.buf = nil
	}
}

// flushIdle writes what is buffered, fsyncing when it holds a turn's end.
func (w *writer) flushIdle() {
	if w.syncDue {
		_ = w.sync()
	} else {
		_ = w.write()
	}
}

// handle applies one command and reports whether the writer must stop.
func (w *writer) handle(c command) bool {
	switch c.kind {
	case cmdItem:
		if c.turnID != "" && c.item.Type() == model.TypeMessage && c.item.Role() == "user" {
			w.materialize = true
		}
		start := len(w.buf)
		w.buf = appendLine(w.buf, c.at, LineResponseItem, c.turnID, c.item.Raw())
		w.fit(start)
	case cmdEvent:
		start := len(w.buf)
		w.event(c)
		w.fit(start)
	case cmdLine:
		start := len(w.buf)
		w.buf = appendLine(w.buf, c.at, c.lineType, c.turnID, c.payload)
		w.fit(start)
		if c.durable {
			c.reply <- w.sync()
		}
	case cmdFlush:
		c.reply <- w.write()
	case cmdSync:
		c.reply <- w.sync()
	case cmdPersist:
		w.materialize = true
		c.reply <- w.sync()
	case cmdClose:
		c.reply <- w.close(c.ctx)
		return true
	}
	if len(w.buf) >= maxBatch && !w.failing {
		_ = w.write()
	}
	return false
}

func (w *writer) event(c command) {
	ev := c.ev
	switch m := ev.Msg.(type) {
	case core.TurnStarted:
		w.materialize = true
		w.inTurn = true
	case core.TurnComplete, core.TurnAborted:
		w.syncDue = true
		w.inTurn = false
	case core.ItemStarted:
		if _, ok := m.Item.(core.UserMessageItem); ok {
			w.materialize = true
		}
		ev.Msg = core.ItemStarted{Item: capItem(m.Item, w.cfg.maxItemOutput)}
	case core.ItemCompleted:
		if _, ok := m.Item.(core.UserMessageItem); ok {
			w.materialize = true
		}
		ev.Msg = core.ItemCompleted{Item: capItem(m.Item, w.cfg.maxItemOutput)}
	}
	at := ev.Time
	if at.IsZero() {
		at = c.at
	}
	buf, err := appendEvent(w.buf, w.r.threadID, at, ev)
	if err != nil {
		w.warn(fmt.Sprintf("rollout %s: event not recorded: %v", w.r.path, err))
		return
	}
	w.buf = buf
}

// write sends buf to the file in one write call. Before materialization it
// keeps buf in memory and succeeds.
func (w *writer) write() error {
	if !w.materialize || (len(w.buf) == 0 && w.created) {
		return nil
	}
	if w.f == nil {
		if err := w.open(); err != nil {
			return w.fail(err)
		}
	}
	if len(w.buf) == 0 {
		return nil
	}
	if w.cfg.fault != nil {
		if err := w.cfg.fault(); err != nil {
			return w.fail(err)
		}
	}
	n, err := w.f.Write(w.buf)
	w.size += int64(n)
	// Keep the unwritten suffix; a short write left part of a line in the
	// file and the rest of it is written next, completing it.
	w.buf = append(w.buf[:0], w.buf[n:]...)
	if err == nil && len(w.buf) > 0 {
		err = io.ErrShortWrite
	}
	if err != nil {
		_ = w.f.Close()
		w.f = nil
		return w.fail(err)
	}
	w.ok()
	if w.cfg.onWrite != nil {
		w.cfg.onWrite(w.r.path)
	}
	w.checkSize()
	return nil
}

// fit shortens the lines appended from start that a reader could not
// read back (fitLines).
func (w *writer) fit(start int) {
	w.buf = fitLines(w.buf, start, w.cfg.maxLine, func(msg string) { w.warn("rollout " + w.r.path + ": " + msg) })
}

// checkSize warns, once each, when the file grows past the warning size
// and past the readers' cap: a file over the cap cannot be read back, so
// its thread could not be resumed once it is unloaded.
func (w *writer) checkSize() {
	if w.cfg.maxFile > 0 && w.size > w.cfg.maxFile {
		if !w.overWarned {
			w.overWarned, w.sizeWarned = true, true
			w.warn(fmt.Sprintf("rollout %s is over %s: it cannot be read back, and its thread cannot be resumed once unloaded", w.r.path, byteSize(w.cfg.maxFile)))
			if w.cfg.onSize != nil {
				w.cfg.onSize(w.r.threadID, w.size, w.cfg.maxFile, true)
			}
		}
		return
	}
	if !w.sizeWarned && w.cfg.sizeWarning > 0 && w.size > w.cfg.sizeWarning {
		w.sizeWarned = true
		w.warn(fmt.Sprintf("rollout %s has grown past %s; a file over %s cannot be read back, and its thread could not be resumed",
			w.r.path, byteSize(w.cfg.sizeWarning), byteSize(w.cfg.maxFile)))
		if w.cfg.onSize != nil {
			w.cfg.onSize(w.r.threadID, w.size, w.cfg.maxFile, false)
		}
	}
}

// sync writes and fsyncs. The directory is fsynced once after the file is
// created, so that the file's name survives a crash too.
func (w *writer) sync() error {
	if err := w.write(); err != nil {
		return err
	}
	if w.f == nil {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return w.fail(err)
	}
	w.syncDue = false
	if !w.dirSynced {
		if err := syncDatedDir(filepath.Dir(w.r.path)); err != nil {
			return w.fail(err)
		}
		w.dirSynced = true
	}
	return nil
}

func (w *writer) open() error {
	open := w.cfg.open
	if open == nil {
		open = openAppend
	}
	if w.existing {
		torn, err := endsTorn(w.r.path)
		if err != nil {
			return err
		}
		if torn {
			// A crash left half a record at the end. End it, so our
			// next record starts on a line of its own.
			w.buf = append([]byte{'\n'}, w.buf...)
		}
		w.existing = false
	}
	f, err := open(w.r.path, !w.created)
	if err != nil {
		return err
	}
	w.f = f
	w.created = true
	w.r.created.Store(true)
	return nil
}

func (w *writer) close(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	backoff := 50 * time.Millisecond
	for {
		err := w.sync()
		if err == nil || !w.materialize {
			break
		}
		select {
		case <-ctx.Done():
			w.warn(fmt.Sprintf("rollout %s: closing with %d bytes unwritten: %v", w.r.path, len(w.buf), err))
			w.closeFile()
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	w.closeFile()
	return nil
}

func (w *writer) closeFile() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// fail records a failed attempt to write or sync: the first of a series
// is warned about; every one is reported.
func (w *writer) fail(err error) error {
	first := !w.failing
	if first {
		w.failing = true
		w.r.failing.Store(true)
		w.warn(fmt.Sprintf("rollout %s: write failed, %d bytes kept in memory and retried: %v",
			w.r.path, len(w.buf), err))
	}
	if w.cfg.onFailed != nil {
		w.cfg.onFailed(w.r.threadID, err, first)
	}
	return err
}

func (w *writer) ok() {
	if w.failing {
		w.failing = false
		w.r.failing.Store(false)
		w.warn(fmt.Sprintf("rollout %s: writes succeed again", w.r.path))
		if w.cfg.onRecovered != nil {
			w.cfg.onRecovered(w.r.threadID)
		}
	}
}

func (w *writer) warn(msg string) {
	if w.cfg.warn != nil {
		w.cfg.warn(msg)
	}
}

// endsTorn reports whether the file's last byte is not a newline.
func endsTorn(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false, err
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], st.Size()-1); err != nil {
		return false, err
	}
	return b[0] != '\n', nil
}

// syncDatedDir syncs the dated directory of a new rollout and the three
// above it (sessions/YYYY/MM/DD): MkdirAll may have just made them, and a
// new directory's entry is durable only once its parent is synced.
func syncDatedDir(dir string) error {
	for range 4 {
		if err := syncDirFunc(dir); err != nil {
			return err
		}
		dir = filepath.Dir(dir)
	}
	return nil
}

// syncDirFunc syncs a directory; tests replace it to see which
// directories are synced and to make a sync fail.
var syncDirFunc = syncDir

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
