package rollout

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindLiveArchivedAndMisplaced(t *testing.T) {
	s, home := openStore(t, Options{})
	at := baseTime
	id := uuid7At(at, 1)
	p := writeThreadFile(t, home, testMeta(id, at), 1, "")
	loc, err := s.Find(id)
	if err != nil || loc.Path != p || loc.Archived {
		t.Fatalf("Find = %+v, %v", loc, err)
	}
	// A file whose directory does not match its id's date (moved by hand)
	// is still found.
	other := filepath.Join(home, SessionsDir, "2020", "01", "01", filepath.Base(p))
	os.MkdirAll(filepath.Dir(other), 0o700)
	if err := os.Rename(p, other); err != nil {
		t.Fatal(err)
	}
	if loc, err := s.Find(id); err != nil || loc.Path != other {
		t.Fatalf("Find misplaced = %+v, %v", loc, err)
	}
	// Ids that are not UUIDs work too.
	p2 := writeThreadFile(t, home, testMeta("plain-id", at), 1, "")
	if loc, err := s.Find("plain-id"); err != nil || loc.Path != p2 {
		t.Fatalf("Find plain = %+v, %v", loc, err)
	}
	for _, bad := range []string{"nope", "../etc", "", "a/b"} {
		var nf *NotFoundError
		if _, err := s.Find(bad); !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) {
			t.Fatalf("Find(%q) = %v", bad, err)
		}
	}
	if _, err := s.Find("nope"); err.Error() != "no rollout found for thread id nope" {
		t.Fatalf("error text %q", err)
	}
}

func TestArchiveUnarchiveDelete(t *testing.T) {
	s, home := openStore(t, Options{})
	ctx := testCtx(t)
	id := uuid7At(baseTime, 2)
	p := recordThread(t, s, id, turnScript{id: "t1", prompt: "p", end: "completed"})
	content := must(os.ReadFile(p))

	archived, err := s.Archive(id)
	if err != nil {
		t.Fatal(err)
	}
	if archived != filepath.Join(home, ArchivedDir, filepath.Base(p)) || fileExists(p) {
		t.Fatalf("archived to %s", archived)
	}
	if loc, err := s.Find(id); err != nil || !loc.Archived || loc.Path != archived {
		t.Fatalf("Find archived = %+v, %v", loc, err)
	}
	if _, err := s.Archive(id); !errors.Is(err, ErrAlreadyArchived) {
		t.Fatalf("second Archive: %v", err)
	}
	if th, err := s.Read(ctx, id, ReadOptions{}); err != nil || !th.Archived || len(th.Turns) != 1 {
		t.Fatalf("Read archived: %v", err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(archived, old, old)

	back, err := s.Unarchive(id)
	if err != nil {
		t.Fatal(err)
	}
	if back != p || !bytes.Equal(must(os.ReadFile(back)), content) {
		t.Fatalf("unarchived to %s", back)
	}
	if st, _ := os.Stat(back); time.Since(st.ModTime()) > time.Minute {
		t.Fatal("unarchive did not mark the thread updated")
	}
	if _, err := s.Unarchive(id); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("second Unarchive: %v", err)
	}

	// An open recorder blocks moves and deletion.
	r, err := s.Reopen(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Archive(id); !errors.Is(err, ErrThreadOpen) {
		t.Fatalf("Archive while open: %v", err)
	}
	if err := s.Delete(id); !errors.Is(err, ErrThreadOpen) {
		t.Fatalf("Delete while open: %v", err)
	}
	r.Close(ctx)

	if err := s.Delete(id); err != nil {
		t.Fatal(err)
	}
	if fileExists(p) {
		t.Fatal("file not deleted")
	}
	for _, op := range []func() error{
		func() error { return s.Delete(id) },
		func() error { _, err := s.Archive(id); return err },
		func() error { _, err := s.Unarchive(id); return err },
		func() error { _, err := s.Read(ctx, id, ReadOptions{}); return err },
		func() error { return s.SetName(ctx, id, "x") },
	} {
		if err := op(); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
	}
	// Archiving a thread that never materialized: not found.
	r2, _ := s.Create(testMeta("t-unmaterialized", baseTime))
	defer r2.Close(ctx)
	if _, err := s.Archive("t-unmaterialized"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Archive unmaterialized: %v", err)
	}
}

func TestSetNameStoredAndLoaded(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	p := recordThread(t, s, "t-name", turnScript{id: "t1", prompt: "p", end: "completed"})
	// A crash left a torn record; the name still lands on its own line.
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"timestamp":"2026`)
	f.Close()
	before := must(os.ReadFile(p))
	if err := s.SetName(ctx, "t-name", "Stored name"); err != nil {
		t.Fatal(err)
	}
	th, err := s.Read(ctx, "t-name", ReadOptions{})
	if err != nil || th.Name != "Stored name" || len(th.Warnings) != 1 {
		t.Fatalf("name %q, warnings %v, %v", th.Name, th.Warnings, err)
	}
	// The name is in the session index, as the reference keeps names; the
	// rollout is not touched.
	if !bytes.Equal(before, must(os.ReadFile(p))) {
		t.Fatal("the rollout changed")
	}
	index := string(must(os.ReadFile(filepath.Join(s.Home(), SessionIndexName))))
	if !strings.Contains(index, `{"id":"t-name","thread_name":"Stored name","updated_at":"`) || strings.Count(index, "\n") != 1 {
		t.Fatalf("session index %q", index)
	}
	// Through the open recorder when the thread is loaded.
	r, _ := s.Reopen("t-name")
	if err := s.SetName(ctx, "t-name", "Loaded name"); err != nil {
		t.Fatal(err)
	}
	// Durable before Close: another store sees it.
	other, err := Open(s.Home(), Options{NoIndexCache: true, NoIndexWarmUp: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if sum, err := other.Summary("t-name"); err != nil || sum.Name != "Loaded name" {
		t.Fatalf("summary %+v %v", sum, err)
	}
	r.Close(ctx)
	if err := r.SetName(ctx, "late"); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetName after Close: %v", err)
	}
	if err := s.SetName(ctx, "t-name", ""); err != nil {
		t.Fatal(err)
	}
	if th, _ := s.Read(ctx, "t-name", ReadOptions{}); th.Name != "" {
		t.Fatalf("name not cleared: %q", th.Name)
	}
	if err := s.SetName(ctx, "t-nobody", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetName of an unknown thread: %v", err)
	}
}

func TestForkCopiesUpToTurn(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	src := uuid7At(baseTime, 3)
	p := recordThread(t, s, src,
		turnScript{id: "t1", prompt: "one", end: "completed"},
		turnScript{id: "t2", prompt: "two", end: "completed", usage: 2},
		turnScript{id: "t3", prompt: "three", end: "completed", usage: 3})
	if err := s.SetName(ctx, src, "Source name"); err != nil {
		t.Fatal(err)
	}
	before := must(os.ReadFile(p))

	fk, err := s.Fork(ctx, ForkOptions{SourceID: src, LastTurnID: "t2", Adjust: func(m *SessionMeta) { m.Originator = "forker" }})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, must(os.ReadFile(p))) {
		t.Fatal("source changed")
	}
	if fk.Meta.ID == src || fk.Meta.ForkedFromID != src || fk.Path == p || fk.Meta.Originator != "forker" {
		t.Fatalf("fork meta %+v at %s", fk.Meta, fk.Path)
	}
	if len(fk.Turns) != 2 || fk.Turns[1].ID != "t2" || fk.Turns[1].Status != TurnCompleted {
		t.Fatalf("fork turns %v", turnStatuses(fk))
	}
	if fk.Name != "Source name" || fk.Preview != "one" {
		t.Fatalf("fork name %q preview %q", fk.Name, fk.Preview)
	}
	if fk.TokenUsage == nil || fk.TokenUsage.TurnID != "t2" {
		t.Fatalf("fork usage %+v", fk.TokenUsage)
	}
	if len(fk.History) != 4 {
		t.Fatalf("fork history %d", len(fk.History))
	}
	if loc, err := s.Find(fk.Meta.ID); err != nil || loc.Path != fk.Path {
		t.Fatalf("fork not found: %v", err)
	}
	// All turns.
	all, err := s.Fork(ctx, ForkOptions{SourceID: src, NewID: "fork-all"})
	if err != nil || len(all.Turns) != 3 || all.Meta.ID != "fork-all" {
		t.Fatalf("fork all: %v %v", err, turnStatuses(all))
	}
	if _, err := s.Fork(ctx, ForkOptions{SourceID: src, LastTurnID: "nope"}); !errors.Is(err, ErrTurnNotFound) {
		t.Fatalf("fork of a missing turn: %v", err)
	}
	if _, err := s.Fork(ctx, ForkOptions{SourceID: "missing"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("fork of a missing thread: %v", err)
	}
}

func TestForkOfRunningTurnRecordsItInterrupted(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-running", baseTime))
	defer r.Close(ctx)
	recordTurn(t, r, turnScript{id: "t1", prompt: "one", end: "completed"})
	recordTurn(t, r, turnScript{id: "t2", prompt: "two", withCommand: true}) // still running
	fk, err := s.Fork(ctx, ForkOptions{SourceID: "t-running"})
	if err != nil {
		t.Fatal(err)
	}
	if got := turnStatuses(fk); len(got) != 2 || got[1] != TurnInterrupted {
		t.Fatalf("fork turns %v", got)
	}
	// Recorded, not only inferred: the fork's file ends the turn.
	lines := readLines(t, fk.Path)
	last := lines[len(lines)-1]
	if typ, _ := peekType(last.Payload); typ != evTurnAbortedRef || last.TurnID != "t2" {
		t.Fatalf("last record %s %s", last.Type, last.Payload)
	}
	// The fork is not rebuilt as running even when asked about t2.
	if th := mustRead(t, fk.Path, ReadOptions{RunningTurnID: "t2"}); th.Turns[1].Status != TurnInterrupted {
		t.Fatalf("fork turn %s", th.Turns[1].Status)
	}
	// A fork up to the completed turn leaves the running one out.
	fk1, err := s.Fork(ctx, ForkOptions{SourceID: "t-running", LastTurnID: "t1"})
	if err != nil || len(fk1.Turns) != 1 || fk1.Turns[0].Status != TurnCompleted {
		t.Fatalf("fork to t1: %v %v", err, turnStatuses(fk1))
	}
}

func TestForkAfterRollbackKeepsRollbackBeforeCut(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-fr", baseTime))
	recordTurn(t, r, turnScript{id: "a", prompt: "a", end: "completed"})
	recordTurn(t, r, turnScript{id: "b", prompt: "b", end: "completed"})
	r.Rollback(ctx, 1)
	recordTurn(t, r, turnScript{id: "c", prompt: "c", end: "completed"})
	recordTurn(t, r, turnScript{id: "d", prompt: "d", end: "completed"})
	r.Rollback(ctx, 1)
	r.Close(ctx)
	fk, err := s.Fork(ctx, ForkOptions{SourceID: "t-fr", LastTurnID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tn := range fk.Turns {
		ids = append(ids, tn.ID)
	}
	if strings.Join(ids, ",") != "a,c" {
		t.Fatalf("fork turns %v", ids)
	}
	if _, err := s.Fork(ctx, ForkOptions{SourceID: "t-fr", LastTurnID: "d"}); !errors.Is(err, ErrTurnNotFound) {
		t.Fatalf("fork to a rolled back turn: %v", err)
	}
}

// gatedFile holds every write until gate is closed.
type gatedFile struct {
	*os.File
	gate chan struct{}
}

func (g gatedFile) Write(b []byte) (int, error) {
	<-g.gate
	return g.File.Write(b)
}

func TestReadOfLoadedThreadSeesQueuedRecords(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	gate := make(chan struct{})
	s.cfg.open = func(path string, create bool) (appendFile, error) {
		f, err := openAppend(path, create)
		if err != nil {
			return nil, err
		}
		return gatedFile{File: f.(*os.File), gate: gate}, nil
	}
	r, _ := s.Create(testMeta("t-queued", baseTime))
	defer r.Close(ctx)
	recordTurn(t, r, turnScript{id: "t1", prompt: "queued", end: "completed"})
	// The writer has created the file but its write is held.
	for !r.Materialized() {
		time.Sleep(time.Millisecond)
	}
	got := make(chan *Thread, 1)
	go func() {
		th, err := s.Read(ctx, "t-queued", ReadOptions{})
		if err != nil {
			t.Error(err)
		}
		got <- th
	}()
	select {
	case th := <-got:
		t.Fatalf("Read returned before the queued records were written: %d turns", len(th.Turns))
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	if th := <-got; th == nil || len(th.Turns) != 1 || th.Preview != "queued" {
		t.Fatalf("Read of a loaded thread: %+v", th)
	}
}

// Create refuses a session_meta longer than MetaLineBytes (instructions
// and threadSource are the client's and unbounded), since no reader would
// take the file as a rollout; one that fits is created.
func TestCreateRefusesMetaPastTheLimit(t *testing.T) {
	s, _ := openStore(t, Options{})
	meta := testMeta(uuid7At(baseTime, 1), baseTime)
	meta.BaseInstructions = strings.Repeat("b", MetaLineBytes)
	if _, err := s.Create(meta); !errors.Is(err, ErrMetaTooLarge) || !strings.Contains(err.Error(), "more than the limit of 1 MiB") {
		t.Fatalf("Create with a 1 MiB instruction = %v, want ErrMetaTooLarge", err)
	}
	meta.BaseInstructions = strings.Repeat("b", MetaLineBytes/2)
	if _, err := s.Create(meta); err != nil {
		t.Fatalf("Create within the limit: %v", err)
	}
}

// A name is kept in session_index.jsonl as it was given (no HTML escapes:
// a name of megabytes of "<" stays within what the index's reader takes),
// and one whose line would be longer than that reader takes is refused
// rather than kept where it would be skipped.
func TestLongNamesInTheSessionIndex(t *testing.T) {
	s, home := openStore(t, Options{})
	ctx := testCtx(t)
	recordThread(t, s, "t-name", turnScript{id: "t1", prompt: "p", end: "completed"})
	name := "<a & b> " + strings.Repeat("<", 12<<20)
	if err := s.SetName(ctx, "t-name", name); err != nil {
		t.Fatal(err)
	}
	index := must(os.ReadFile(filepath.Join(home, SessionIndexName)))
	if len(index) > 13<<20 || !bytes.Contains(index, []byte(`"thread_name":"<a & b> <<<`)) {
		t.Fatalf("session index of %d bytes: %.80s", len(index), index)
	}
	other, err := Open(home, Options{NoIndexCache: true, NoIndexWarmUp: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if th, err := other.Read(ctx, "t-name", ReadOptions{}); err != nil || th.Name != name {
		t.Fatalf("name read back: %d bytes, %v", len(th.Name), err)
	}
	if err := s.SetName(ctx, "t-name", strings.Repeat("n", DefaultMaxLineBytes)); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("a name longer than the index's reader takes: %v", err)
	}
}

// Find takes a thread whose file is named after its id's time (the
// second of it, or the one after, as when the id was made at the end of
// a second) straight from its name; one named otherwise is found by
// going through the day's directory, among many others, the first of
// its names when there are two, and never a file without the rollout
// prefix.
func TestFindByNameAndInACrowdedDay(t *testing.T) {
	s, home := openStore(t, Options{})
	at := baseTime.Truncate(time.Second).Add(999 * time.Millisecond)
	for i := range 300 {
		writeThreadFile(t, home, testMeta(uuid7At(baseTime, 100+i), baseTime), 0, "")
	}
	next := uuid7At(at, 1) // made at .999, its file named a second later
	pNext := writeThreadFile(t, home, testMeta(next, at.Add(time.Millisecond)), 1, "")
	if loc, err := s.Find(next); err != nil || loc.Path != pNext {
		t.Fatalf("Find(a file named the next second) = %+v, %v", loc, err)
	}
	later := uuid7At(baseTime, 2) // its file named an hour later
	pLater := writeThreadFile(t, home, testMeta(later, baseTime.Add(time.Hour)), 1, "")
	if loc, err := s.Find(later); err != nil || loc.Path != pLater {
		t.Fatalf("Find(a file named an hour later) = %+v, %v", loc, err)
	}
	// A second file of the same thread, named earlier, comes first; a
	// name without the prefix is not a rollout.
	earlier := filepath.Join(filepath.Dir(pLater), FileName(baseTime.Add(-time.Hour), later))
	if err := os.WriteFile(earlier, must(os.ReadFile(pLater)), 0o600); err != nil {
		t.Fatal(err)
	}
	if loc, err := s.Find(later); err != nil || loc.Path != earlier {
		t.Fatalf("Find(two files) = %+v, %v; want %s", loc, err, earlier)
	}
	stray := uuid7At(baseTime, 3)
	if err := os.WriteFile(filepath.Join(filepath.Dir(pLater), "copy-"+stray+fileSuffix), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Find(stray); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find(no rollout prefix) = %v", err)
	}
}
