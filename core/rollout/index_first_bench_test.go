package rollout

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFirstPageCached: a page served from the names again, before
// the index is built, at 10,000 threads (the directories' listings and
// the files' summaries kept from the first walk).
func BenchmarkFirstPageCached(b *testing.B) {
	home := b.TempDir()
	writeManyThreads(b, home, 10000)
	past := time.Now().Add(-time.Hour)
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Chtimes(p, past, past)
		}
		return nil
	})
	warmUpHeld = true
	defer func() { warmUpHeld = false }()
	s, _ := Open(home, Options{NoGitInfo: true})
	defer s.Close()
	s.idx.windowOnce.Do(func() { s.idx.winLo, s.idx.winHi = 0, int64(time.Second) })
	s.List(ListOptions{})
	b.ResetTimer()
	for b.Loop() {
		s.List(ListOptions{})
	}
}
