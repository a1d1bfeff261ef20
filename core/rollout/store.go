package rollout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Version is the agentd version written into new threads' meta.
	Version string
	// OnWarning receives write failures, skipped records and size
	// warnings. It may be called from any goroutine and must not block.
	OnWarning func(string)
	// OnWriteFailed is told of each failed attempt to write or sync a
	// thread's rollout (a full disk, a read-only home); first is set for
	// the first failure after writes worked. OnWriteRecovered is told
	// when a thread's writes succeed again after failures, everything
	// held back written. Both are called on the recorder's writer
	// goroutine and must not block.
	OnWriteFailed    func(threadID string, err error, first bool)
	OnWriteRecovered func(threadID string)
	// WriteFault, when set, is asked before each write of a rollout: an
	// error fails that write as a full disk would (nothing is written).
	// It is a test hook (agentd's AGENTD_TEST_HOOKS); leave it nil.
	WriteFault func() error
	// MaxItemOutput caps a command item's aggregated output in the
	// rollout (default DefaultMaxItemOutput; negative: no cap).
	MaxItemOutput int
	// SizeWarning is the file size past which a thread's recorder warns
	// once that the file nears what readers take (Limits.MaxFileBytes):
	// default 256 MiB or half the cap, whichever is less; negative: never.
	SizeWarning int64
	// OnSizeWarning is told, once each for each recorder (a thread loaded
	// again is told again), when a thread's rollout grows past
	// SizeWarning (over false) and past Limits.MaxFileBytes (over true:
	// the file can no longer be read back). It is called on the
	// recorder's writer goroutine and must not block.
	OnSizeWarning func(threadID string, size, limit int64, over bool)
	// QueueSize is each recorder's command queue (default
	// DefaultQueueSize).
	QueueSize int
	// NoGitInfo stops Create from reading the cwd's git repository.
	NoGitInfo bool
	// IndexRevalidate is how often the index re-stats every rollout file
	// in the background, to notice appends made by other processes where
	// it cannot watch the home (default 2 s; negative: on every call,
	// synchronously). Where it watches the home (inotify), changes are
	// seen as they happen, and the pass runs every 5 minutes at most, as
	// a safety net. This process's own writes are noticed at once
	// regardless, and so are files added, moved or deleted.
	IndexRevalidate time.Duration
	// NoIndexCache keeps the index in memory only.
	NoIndexCache bool
	// NoIndexWatch makes the index poll the home's directories (their
	// mtimes, at each call) instead of watching them.
	NoIndexWatch bool
	// NoIndexWarmUp stops Open from building the index in the background
	// (the first List then builds it).
	NoIndexWarmUp bool
	// Limits bound every read of a rollout file: a read, a fork, ReadFile
	// and the index's scans.
	Limits Limits
}

// Location is where a thread's rollout file is.
type Location struct {
	Path     string
	Archived bool
}

// Store is the rollout files under one home directory (CODEX_HOME's
// layout): live threads under sessions/YYYY/MM/DD/, archived ones flat
// under archived_sessions/ (the file name keeps the creation date, so
// unarchiving restores the dated directory). It is safe for concurrent use.
type Store struct {
	home string
	opts Options
	cfg  recorderConfig
	idx  *index

	// stopped ends when StopReads is called: every read in progress
	// stops with ErrReadsStopped, and so does any later one.
	stopped   context.Context
	stopReads context.CancelCauseFunc

	// reads caches parsed threads (readcache.go).
	reads *readCache

	mu sync.Mutex
	// open holds the recorders this store created and that are not
	// closed yet, by thread id.
	open map[string]*Recorder
}

// Open returns the store rooted at home, creating the directories it needs.
func Open(home string, opts Options) (*Store, error) {
	if home == "" {
		return nil, errors.New("rollout: empty home")
	}
	if err := os.MkdirAll(filepath.Join(home, SessionsDir), 0o700); err != nil {
		return nil, err
	}
	if opts.MaxItemOutput == 0 {
		opts.MaxItemOutput = DefaultMaxItemOutput
	}
	if opts.SizeWarning == 0 {
		opts.SizeWarning = min(256<<20, opts.Limits.maxFile()/2)
	}
	if opts.IndexRevalidate == 0 {
		opts.IndexRevalidate = 2 * time.Second
	}
	s := &Store{home: home, opts: opts, open: map[string]*Recorder{}, reads: newReadCache()}
	s.stopped, s.stopReads = context.WithCancelCause(context.Background())
	s.idx = newIndex(home, opts)
	s.cfg = recorderConfig{
		warn:          s.warn,
		maxItemOutput: opts.MaxItemOutput,
		sizeWarning:   opts.SizeWarning,
		queueSize:     opts.QueueSize,
		onWrite:       s.idx.touch,
		setName:       s.idx.names.set,
		onFailed:      opts.OnWriteFailed,
		onRecovered:   opts.OnWriteRecovered,
		fault:         opts.WriteFault,
		maxFile:       opts.Limits.maxFile(),
		maxLine:       opts.Limits.maxLine(),
		onSize:        opts.OnSizeWarning,
	}
	if !opts.NoIndexWarmUp {
		s.idx.warmUp()
	}
	return s, nil
}

// Home is the store's root directory.
func (s *Store) Home() string { return s.home }

// StopReads stops every read of a rollout file in progress (Read, Fork,
// ReadMeta) and refuses later ones, with ErrReadsStopped: a daemon that
// shuts down never waits on a read. Writes go on.
func (s *Store) StopReads() { s.stopReads(ErrReadsStopped) }

// reading returns ctx, also ended by StopReads, and its release.
func (s *Store) reading(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if s.stopped.Err() != nil {
		// AfterFunc would cancel on another goroutine, a moment later.
		cancel(context.Cause(s.stopped))
		return ctx, func() {}
	}
	stop := context.AfterFunc(s.stopped, func() { cancel(context.Cause(s.stopped)) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// ReadMeta reads the session_meta of the rollout file at path (any path,
// such as one a client gives), within the store's limits.
func (s *Store) ReadMeta(ctx context.Context, path string) (SessionMeta, error) {
	ctx, done := s.reading(ctx)
	defer done()
	return ReadMeta(ctx, path, s.opts.Limits)
}

// Close saves the index. Recorders are closed by their owners.
func (s *Store) Close() error {
	s.reads.clear()
	return s.idx.close()
}

func (s *Store) warn(msg string) {
	if s.opts.OnWarning != nil {
		s.opts.OnWarning(msg)
	}
}

// PathFor is where a thread created at t with id lives until archived.
func (s *Store) PathFor(t time.Time, threadID string) string {
	return filepath.Join(datedDir(s.home, t), FileName(t, threadID))
}

// Create starts the record of a new thread. The file is not created yet:
// it appears with the thread's first turn (or Persist), so a thread that
// never runs a turn leaves nothing behind. meta.CreatedAt defaults to now,
// meta.CLIVersion to Options.Version and meta.Git to the cwd's repository.
func (s *Store) Create(meta SessionMeta) (*Recorder, error) {
	if err := validThreadID(meta.ID); err != nil {
		return nil, err
	}
	if meta.CreatedAt.IsZero() {
		meta.CreatedAt = time.Now()
	}
	meta.CreatedAt = meta.CreatedAt.UTC().Truncate(time.Millisecond)
	if meta.CLIVersion == "" {
		meta.CLIVersion = s.opts.Version
	}
	if meta.Git == nil && !s.opts.NoGitInfo && meta.Cwd != "" {
		meta.Git = ReadGitInfo(meta.Cwd)
	}
	path := s.PathFor(meta.CreatedAt, meta.ID)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("rollout: %s already exists", path)
	}
	first, err := metaLine(meta)
	if err != nil {
		return nil, err
	}
	return s.register(meta.ID, func(cfg *recorderConfig) *Recorder {
		return newRecorder(meta.ID, path, cfg, first, false, 0)
	})
}

// Reopen returns a recorder that appends to a stored thread's file (to
// resume it). An archived thread is appended to where it is.
func (s *Store) Reopen(threadID string) (*Recorder, error) {
	loc, err := s.Find(threadID)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(loc.Path)
	if err != nil {
		return nil, err
	}
	return s.register(threadID, func(cfg *recorderConfig) *Recorder {
		return newRecorder(threadID, loc.Path, cfg, nil, true, st.Size())
	})
}

func (s *Store) register(id string, mk func(*recorderConfig) *Recorder) (*Recorder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[id] != nil {
		return nil, fmt.Errorf("%w: %s", ErrThreadOpen, id)
	}
	cfg := s.cfg
	r := mk(&cfg)
	r.onClose = func() {
		s.mu.Lock()
		if s.open[id] == r {
			delete(s.open, id)
		}
		s.mu.Unlock()
	}
	s.open[id] = r
	return r, nil
}

// Failing is the number of open recorders whose writes fail now.
func (s *Store) Failing() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.open {
		if r.Failing() {
			n++
		}
	}
	return n
}

func (s *Store) recorder(id string) *Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[id]
}

// metaLine is a new rollout's first line, refused (ErrMetaTooLarge) when
// a reader would not take it: the client-given parts (instructions,
// threadSource) are not bounded otherwise.
func metaLine(meta SessionMeta) ([]byte, error) {
	payload, err := model.MarshalNoEscape(metaToWire(meta))
	if err != nil {
		return nil, err
	}
	line := appendLine(nil, meta.CreatedAt, LineSessionMeta, "", payload)
	if n := int64(len(line)) - 1; n > MetaLineBytes { // its newline excluded, as a reader counts
		return nil, fmt.Errorf("%w: would be %s, more than the limit of %s", ErrMetaTooLarge, byteSize(n), byteSize(MetaLineBytes))
	}
	return line, nil
}

// Limits returns the bounds of the store's reads.
func (s *Store) Limits() Limits { return s.opts.Limits }

// Read rebuilds a stored thread. When the thread has an open recorder,
// what it has queued is written first, so the rebuild sees every record.
func (s *Store) Read(ctx context.Context, threadID string, opts ReadOptions) (*Thread, error) {
	ctx, done := s.reading(ctx)
	defer done()
	if r := s.recorder(threadID); r != nil {
		if err := r.Flush(ctx); err != nil && !errors.Is(err, ErrClosed) {
			return nil, err
		}
	}
	loc, err := s.Find(threadID)
	if err != nil {
		return nil, err
	}
	if opts.Limits == (Limits{}) {
		opts.Limits = s.opts.Limits
	}
	// The file's state is taken before it is read: one that grows
	// meanwhile is cached with more than its state says, and read again
	// next time. A read with the history is not answered from the cache,
	// but what it parsed is kept without the history: the pages a client
	// asks for after a resume need no parse of their own.
	key := readKey{path: loc.Path, runningTurnID: opts.RunningTurnID, limits: opts.Limits}
	st, cacheable := stateOf(loc.Path)
	t, hit := (*Thread)(nil), false
	if cacheable && opts.SkipHistory {
		t, hit = s.reads.get(key, st)
	}
	if !hit {
		var err error
		if t, err = ReadThread(ctx, loc.Path, opts); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, notFound(threadID)
			}
			return nil, err
		}
		for _, w := range t.Warnings {
			s.warn(w)
		}
		if cacheable {
			s.reads.put(key, st, t)
		}
	}
	t.Archived = loc.Archived
	s.idx.names.refresh()
	t.Name = s.idx.names.nameOf(threadID, t.Name)
	return t, nil
}
