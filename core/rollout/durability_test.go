package rollout

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recordSyncs makes syncDirFunc record the directories synced, and fail
// for those fail names.
func recordSyncs(t *testing.T, fail func(dir string) bool) func() []string {
	var mu sync.Mutex
	var synced []string
	old := syncDirFunc
	syncDirFunc = func(dir string) error {
		mu.Lock()
		synced = append(synced, dir)
		mu.Unlock()
		if fail != nil && fail(dir) {
			return errors.New("injected sync failure")
		}
		return old(dir)
	}
	t.Cleanup(func() { syncDirFunc = old })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(synced)
	}
}

// The first thread of a day syncs its dated directories up to sessions/,
// and the first rename syncs the home that holds the new session index:
// without those a power loss could lose the files' names.
func TestNewFilesSyncTheirDirectories(t *testing.T) {
	synced := recordSyncs(t, nil)
	s, home := openStore(t, Options{})
	recordThread(t, s, "t-sync", turnScript{id: "a", prompt: "hi", end: "completed"})
	day := datedDir(home, baseTime)
	for _, dir := range []string{day, filepath.Dir(day), filepath.Dir(filepath.Dir(day)), filepath.Join(home, "sessions")} {
		if !slices.Contains(synced(), dir) {
			t.Fatalf("%s not synced; synced %v", dir, synced())
		}
	}
	if slices.Contains(synced(), home) {
		t.Fatalf("home synced before the session index existed: %v", synced())
	}
	if err := s.SetName(testCtx(t), "t-sync", "named"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(synced(), home) {
		t.Fatalf("the new session index's directory was not synced: %v", synced())
	}
	// A second rename appends to a file that exists: no directory sync.
	n := len(synced())
	if err := s.SetName(testCtx(t), "t-sync", "renamed"); err != nil {
		t.Fatal(err)
	}
	if len(synced()) != n {
		t.Fatalf("an append synced %v", synced()[n:])
	}
}

// A directory sync that fails is an error of the write, not a silent loss.
func TestDirectorySyncFailureIsReported(t *testing.T) {
	s, home := openStore(t, Options{})
	recordSyncs(t, func(dir string) bool { return dir == home })
	recordThread(t, s, "t-fail", turnScript{id: "a", prompt: "hi", end: "completed"})
	err := s.SetName(testCtx(t), "t-fail", "named")
	if err == nil || !strings.Contains(err.Error(), "injected sync failure") {
		t.Fatalf("SetName = %v, want the sync failure", err)
	}
}

// Damaged lines of the session index are skipped with a warning naming
// the file, and the good lines around them are read.
func TestSessionIndexDamagedLinesWarn(t *testing.T) {
	var mu sync.Mutex
	var warnings []string
	s, home := openStore(t, Options{OnWarning: func(w string) {
		mu.Lock()
		warnings = append(warnings, w)
		mu.Unlock()
	}})
	recordThread(t, s, "t-a", turnScript{id: "a", prompt: "hi", end: "completed"})
	index := `{"id":"t-a","thread_name":"first"}` + "\n" + `{"id":` + "\n" + `not json at all` + "\n" + `{"id":"t-a","thread_name":"second"}` + "\n"
	if err := os.WriteFile(filepath.Join(home, SessionIndexName), []byte(index), 0o600); err != nil {
		t.Fatal(err)
	}
	if sum, err := s.Summary("t-a"); err != nil || sum.Name != "second" {
		t.Fatalf("summary %+v %v", sum, err)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, w := range warnings {
		found = found || strings.Contains(w, SessionIndexName) && strings.Contains(w, "2 damaged line(s) skipped") && strings.Contains(w, `{\"id\":`)
	}
	if !found {
		t.Fatalf("warnings %q", warnings)
	}
}
