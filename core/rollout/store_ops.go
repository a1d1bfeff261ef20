package rollout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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
	s.idx.moved(loc.Path, dst)
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
	s.idx.moved(loc.Path, dst)
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
	s.idx.touch(loc.Path)
	return syncDirFunc(filepath.Dir(loc.Path))
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
	if err := syncDatedDir(filepath.Dir(dst)); err != nil {
		return err
	}
	return syncDirFunc(filepath.Dir(src))
}

// SetName records a thread's name ("" clears it) in the session index,
// where the reference keeps names too. It returns once the name is
// durable.
func (s *Store) SetName(ctx context.Context, threadID, name string) error {
	if r := s.recorder(threadID); r != nil {
		return r.SetName(ctx, name)
	}
	if _, err := s.Find(threadID); err != nil {
		return err
	}
	return s.idx.names.set(threadID, name)
}
