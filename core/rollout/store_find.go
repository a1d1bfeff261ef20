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
	// A UUIDv7 says when the thread was made: agentd names the file
	// after the same moment, so try that name (and the seconds around
	// it) first, then look through that day's directory (and its
	// neighbours, for a creation near midnight). A day's directory may
	// hold thousands of threads: the index does not know one made since
	// its last refresh (a fork's copy, a thread unloaded before any
	// thread/list), and going through the directory for each would make
	// each such lookup cost as much as the day's threads.
	if t, ok := uuidV7Time(threadID); ok {
		for _, d := range []time.Duration{0, time.Second, -time.Second} {
			if p := s.PathFor(t.Add(d), threadID); regularFile(p) {
				return Location{Path: p}, nil
			}
		}
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

// globOne returns the first rollout file in dir whose name ends with
// suffix, in name order; "" when none. (filepath.Glob would match a
// pattern against every name, several times slower in a large
// directory.)
func globOne(dir, suffix string) string {
	f, err := os.Open(dir)
	if err != nil {
		return ""
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	first := ""
	for _, name := range names {
		if strings.HasPrefix(name, filePrefix) && strings.HasSuffix(name, suffix) && (first == "" || name < first) {
			first = name
		}
	}
	if first == "" {
		return ""
	}
	return filepath.Join(dir, first)
}

// regularFile reports whether p is a regular file.
func regularFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
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
