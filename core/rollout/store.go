package rollout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Version is the agentd version written into new threads' meta.
	Version string
	// OnWarning receives write failures, skipped records and size
	// warnings. It may be called from any goroutine and must not block.
	OnWarning func(string)
	// MaxItemOutput caps a command item's aggregated output in the
	// rollout (default DefaultMaxItemOutput; negative: no cap).
	MaxItemOutput int
	// SizeWarning is the file size past which a thread's recorder warns
	// once that the thread should be compacted (default 256 MiB;
	// negative: never).
	SizeWarning int64
	// QueueSize is each recorder's command queue (default
	// DefaultQueueSize).
	QueueSize int
	// NoGitInfo stops Create from reading the cwd's git repository.
	NoGitInfo bool
	// IndexRevalidate is how often List re-stats every rollout file to
	// notice appends made by other processes (default 2 s; negative: on
	// every call). Files added, moved or deleted are noticed on every
	// call regardless, and so are this process's own writes.
	IndexRevalidate time.Duration
	// NoIndexCache keeps the index in memory only.
	NoIndexCache bool
	// NoIndexWarmUp stops Open from building the index in the background
	// (the first List then builds it).
	NoIndexWarmUp bool
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
		opts.SizeWarning = 256 << 20
	}
	if opts.IndexRevalidate == 0 {
		opts.IndexRevalidate = 2 * time.Second
	}
	s := &Store{home: home, opts: opts, open: map[string]*Recorder{}}
	s.idx = newIndex(home, opts)
	s.cfg = recorderConfig{
		warn:          s.warn,
		maxItemOutput: opts.MaxItemOutput,
		sizeWarning:   opts.SizeWarning,
		queueSize:     opts.QueueSize,
		onWrite:       s.idx.touch,
	}
	if !opts.NoIndexWarmUp {
		s.idx.warmUp()
	}
	return s, nil
}

// Home is the store's root directory.
func (s *Store) Home() string { return s.home }

// Close saves the index. Recorders are closed by their owners.
func (s *Store) Close() error { return s.idx.close() }

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

func (s *Store) recorder(id string) *Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[id]
}

func metaLine(meta SessionMeta) ([]byte, error) {
	payload, err := marshal(metaToWire(meta))
	if err != nil {
		return nil, err
	}
	return appendLine(nil, meta.CreatedAt, LineSessionMeta, "", payload), nil
}

// Find locates a thread's rollout file, live or archived. A thread whose
// file does not exist yet is not found.
func (s *Store) Find(threadID string) (Location, error) {
	if validThreadID(threadID) != nil {
		return Location{}, notFound(threadID)
	}
	if r := s.recorder(threadID); r != nil && r.Materialized() {
		if _, err := os.Stat(r.Path()); err == nil {
			return Location{Path: r.Path(), Archived: s.isArchivedPath(r.Path())}, nil
		}
	}
	if p := s.idx.pathOf(threadID); p != "" {
		if _, err := os.Stat(p); err == nil {
			return Location{Path: p, Archived: s.isArchivedPath(p)}, nil
		}
	}
	suffix := "-" + threadID + fileSuffix
	// A UUIDv7 says when the thread was made: look in that day's
	// directory (and its neighbours, for a creation near midnight) first.
	if t, ok := uuidV7Time(threadID); ok {
		for _, d := range []time.Time{t, t.Add(-24 * time.Hour), t.Add(24 * time.Hour)} {
			if p := globOne(datedDir(s.home, d), suffix); p != "" {
				return Location{Path: p}, nil
			}
		}
	}
	if p := globOne(filepath.Join(s.home, ArchivedDir), suffix); p != "" {
		return Location{Path: p, Archived: true}, nil
	}
	for _, root := range []string{SessionsDir, ArchivedDir} {
		if p := walkFind(filepath.Join(s.home, root), suffix); p != "" {
			return Location{Path: p, Archived: root == ArchivedDir}, nil
		}
	}
	return Location{}, notFound(threadID)
}

func (s *Store) isArchivedPath(p string) bool {
	rel, err := filepath.Rel(filepath.Join(s.home, ArchivedDir), p)
	return err == nil && !strings.HasPrefix(rel, "..")
}

func globOne(dir, suffix string) string {
	m, _ := filepath.Glob(filepath.Join(dir, filePrefix+"*"+suffix))
	if len(m) > 0 {
		return m[0]
	}
	return ""
}

func walkFind(root, suffix string) string {
	var found string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), filePrefix) && strings.HasSuffix(d.Name(), suffix) {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// Read rebuilds a stored thread. When the thread has an open recorder,
// what it has queued is written first, so the rebuild sees every record.
func (s *Store) Read(ctx context.Context, threadID string, opts ReadOptions) (*Thread, error) {
	if r := s.recorder(threadID); r != nil {
		if err := r.Flush(ctx); err != nil && !errors.Is(err, ErrClosed) {
			return nil, err
		}
	}
	loc, err := s.Find(threadID)
	if err != nil {
		return nil, err
	}
	t, err := ReadThread(loc.Path, opts)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notFound(threadID)
		}
		return nil, err
	}
	t.Archived = loc.Archived
	for _, w := range t.Warnings {
		s.warn(w)
	}
	return t, nil
}

// Archive moves a thread's file to archived_sessions/, keeping its name.
// The thread's recorder must be closed.
func (s *Store) Archive(threadID string) (string, error) {
	loc, err := s.findClosed(threadID)
	if err != nil {
		return "", err
	}
	if loc.Archived {
		return "", fmt.Errorf("%w: %s", ErrAlreadyArchived, threadID)
	}
	dst := filepath.Join(s.home, ArchivedDir, filepath.Base(loc.Path))
	if err := moveFile(loc.Path, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// Unarchive moves an archived thread back under sessions/ (in the dated
// directory its file name says) and marks it updated now.
func (s *Store) Unarchive(threadID string) (string, error) {
	loc, err := s.findClosed(threadID)
	if err != nil {
		return "", err
	}
	if !loc.Archived {
		return "", fmt.Errorf("%w: %s", ErrNotArchived, threadID)
	}
	name := filepath.Base(loc.Path)
	created, ok := timeFromFileName(name)
	if !ok {
		created = time.Now()
	}
	dst := filepath.Join(datedDir(s.home, created), name)
	if err := moveFile(loc.Path, dst); err != nil {
		return "", err
	}
	now := time.Now()
	if err := os.Chtimes(dst, now, now); err != nil {
		return "", err
	}
	return dst, nil
}

// Delete removes a thread's file. The thread's recorder must be closed.
func (s *Store) Delete(threadID string) error {
	loc, err := s.findClosed(threadID)
	if err != nil {
		return err
	}
	if err := os.Remove(loc.Path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notFound(threadID)
		}
		return err
	}
	return syncDir(filepath.Dir(loc.Path))
}

func (s *Store) findClosed(threadID string) (Location, error) {
	loc, err := s.Find(threadID)
	if err != nil {
		return loc, err
	}
	if s.recorder(threadID) != nil {
		return loc, fmt.Errorf("%w: %s", ErrThreadOpen, threadID)
	}
	return loc, nil
}

// moveFile renames src to dst (creating dst's directory) and makes both
// directory entries durable.
func moveFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("rollout: %s already exists", dst)
	}
	if err := os.Rename(src, dst); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	return syncDir(filepath.Dir(src))
}

// SetName records a thread's name ("" clears it). A thread with an open
// recorder is named through it; a stored one gets the record appended.
// It returns once the record is durable.
func (s *Store) SetName(ctx context.Context, threadID, name string) error {
	if r := s.recorder(threadID); r != nil {
		return r.SetName(ctx, name)
	}
	loc, err := s.Find(threadID)
	if err != nil {
		return err
	}
	payload, err := marshal(wireThreadName{Name: name})
	if err != nil {
		return err
	}
	if err := appendRecord(loc.Path, appendLine(nil, time.Now(), LineThreadName, "", payload)); err != nil {
		return err
	}
	s.idx.touch(loc.Path)
	return nil
}

// appendRecord appends whole records to a closed thread's file in one
// write and fsyncs it. A torn last line (a crash) is ended first so the
// record starts on a line of its own.
func appendRecord(path string, rec []byte) error {
	torn, err := endsTorn(path)
	if err != nil {
		return err
	}
	if torn {
		rec = append([]byte{'\n'}, rec...)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(rec); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
