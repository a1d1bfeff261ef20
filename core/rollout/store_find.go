package rollout

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

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
