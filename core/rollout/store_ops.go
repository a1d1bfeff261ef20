package rollout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

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
	payload, err := model.MarshalNoEscape(wireThreadName{Name: name})
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
