package rollout

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readLines(t *testing.T, p string) []line {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []line
	for _, raw := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		l, err := parseLine(raw, nil)
		if err != nil {
			t.Fatalf("bad line %q: %v", raw, err)
		}
		l.Payload = append([]byte(nil), l.Payload...)
		l.Timestamp = append([]byte(nil), l.Timestamp...)
		out = append(out, l)
	}
	return out
}

func TestDeferredMaterialization(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, err := s.Create(testMeta("01a2298a-92b9-7252-86f8-84ac05ceba1c", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.Path(), "/sessions/2026/11/29/rollout-2026-11-29T23-01-17-01a2298a-92b9-7252-86f8-84ac05ceba1c.jsonl") {
		t.Fatalf("path %s", r.Path())
	}
	// Records that are not a user turn do not create the file.
	r.RecordItem("", model.NewTextMessage("", "developer", "injected"))
	r.RecordEvent(core.Event{Msg: core.Warning{Message: "w"}})
	if err := r.SetName(ctx, "early name"); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if fileExists(r.Path()) || r.Materialized() {
		t.Fatal("file created before the first turn")
	}
	if _, err := s.Find(r.ThreadID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find before materialization: %v", err)
	}
	recordTurn(t, r, turnScript{id: "turn-1", prompt: "first prompt", end: "completed"})
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if !fileExists(r.Path()) || !r.Materialized() {
		t.Fatal("file not created by the first turn")
	}
	lines := readLines(t, r.Path())
	if lines[0].Type != LineSessionMeta {
		t.Fatalf("first line is %s", lines[0].Type)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	th, err := s.Read(ctx, r.ThreadID(), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if th.Name != "early name" || th.Preview != "first prompt" || len(th.Turns) != 1 {
		t.Fatalf("rebuilt %+v", th.Summary())
	}
	// The injected item recorded before the turn is in the history.
	if th.History[0].Role() != "developer" {
		t.Fatalf("history[0] = %s", th.History[0].Raw())
	}
}

func TestThreadWithoutTurnsLeavesNoFile(t *testing.T) {
	s, home := openStore(t, Options{})
	ctx := testCtx(t)
	r, err := s.Create(testMeta("t-empty", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	r.RecordTurnContext("", TurnContext{Model: "m"})
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if fileExists(r.Path()) {
		t.Fatal("a thread without turns left a file")
	}
	entries, _ := os.ReadDir(home + "/sessions")
	if len(entries) != 0 {
		t.Fatalf("sessions/ has %d entries", len(entries))
	}
}

func TestPersistCreatesFileAtOnce(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, err := s.Create(testMeta("t-persist", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	if err := r.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, r.Path())
	if len(lines) != 1 || lines[0].Type != LineSessionMeta {
		t.Fatalf("lines %+v", lines)
	}
	loc, err := s.Find("t-persist")
	if err != nil || loc.Path != r.Path() {
		t.Fatalf("Find: %v %v", loc, err)
	}
	// A persisted thread without turns is readable but not listed.
	page, _, _, err := s.List(ListOptions{})
	if err != nil || len(page) != 0 {
		t.Fatalf("listed %d, %v", len(page), err)
	}
}

func TestRecorderAfterCloseDropsAndReportsClosed(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, err := s.Create(testMeta("t-closed", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t1", prompt: "p", end: "completed"})
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	before, _ := os.ReadFile(r.Path())
	r.RecordItem("t1", model.NewTextMessage("", "user", "late"))
	r.RecordEvent(core.Event{TurnID: "t1", Msg: core.TurnStarted{}})
	if err := r.Flush(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if err := r.SetName(ctx, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetName after Close: %v", err)
	}
	after, _ := os.ReadFile(r.Path())
	if !bytes.Equal(before, after) {
		t.Fatal("file changed after Close")
	}
	// The store forgot the recorder: a new one may be opened.
	r2, err := s.Reopen("t-closed")
	if err != nil {
		t.Fatal(err)
	}
	r2.Close(ctx)
}

func TestSecondRecorderForOpenThreadRefused(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, err := s.Create(testMeta("t-dup", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	recordTurn(t, r, turnScript{id: "t1", prompt: "p", end: "completed"})
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reopen("t-dup"); !errors.Is(err, ErrThreadOpen) {
		t.Fatalf("Reopen of an open thread: %v", err)
	}
	if _, err := s.Create(testMeta("t-dup", baseTime)); err == nil {
		t.Fatal("Create over an existing thread succeeded")
	}
}

func TestRecordsKeepOrderAndDroppedEventsAreNotWritten(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-order", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "p", end: "completed", withCommand: true})
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range readLines(t, r.Path()) {
		k := l.Type
		if l.Type == LineEventMsg {
			k, _ = peekType(l.Payload)
		}
		kinds = append(kinds, k)
	}
	// Messages are recorded once complete; a command's start too, so that
	// a crash in the middle of it leaves it shown.
	want := []string{LineSessionMeta, LineTurnContext, evTaskStarted, LineResponseItem, evUserMessage,
		LineResponseItem, evExecBegin, LineResponseItem, evExecEnd,
		LineResponseItem, evAgentMessage, evTokenCountRef, evTaskComplete}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("records:\n got %v\nwant %v", kinds, want)
	}
}

// flakyFile fails its first failures writes and then works.
type flakyFile struct {
	*os.File
	failures *atomic.Int32
}

func (f flakyFile) Write(b []byte) (int, error) {
	if f.failures.Add(-1) >= 0 {
		// Half of the bytes land, as with a full disk.
		n, _ := f.File.Write(b[:len(b)/2])
		return n, errors.New("injected: no space left on device")
	}
	return f.File.Write(b)
}

func TestWriteErrorKeepsRecordsAndRetriesAtNextBarrier(t *testing.T) {
	var w warnings
	s, _ := openStore(t, Options{OnWarning: w.add})
	ctx := testCtx(t)
	var failures atomic.Int32
	failures.Store(2)
	s.cfg.open = func(path string, create bool) (appendFile, error) {
		f, err := openAppend(path, create)
		if err != nil {
			return nil, err
		}
		return flakyFile{File: f.(*os.File), failures: &failures}, nil
	}
	r, err := s.Create(testMeta("t-flaky", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t1", prompt: "first", end: "completed"})
	// The writer's own attempt and this barrier fail.
	for failures.Load() > 0 {
		if err := r.Flush(ctx); err == nil {
			t.Fatal("Flush succeeded while writes fail")
		}
	}
	if !w.contains("write failed") {
		t.Fatalf("no warning: %v", w.list())
	}
	recordTurn(t, r, turnScript{id: "t2", prompt: "second", end: "completed"})
	if err := r.Sync(ctx); err != nil {
		t.Fatalf("Sync after recovery: %v", err)
	}
	if !w.contains("writes succeed again") {
		t.Fatalf("no recovery notice: %v", w.list())
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	th := mustRead(t, r.Path(), ReadOptions{})
	if len(th.Warnings) != 0 {
		t.Fatalf("damaged file: %v", th.Warnings)
	}
	if got := turnStatuses(th); len(got) != 2 || got[0] != TurnCompleted || got[1] != TurnCompleted {
		t.Fatalf("turns %v", got)
	}
	if len(th.History) != 4 {
		t.Fatalf("history has %d items", len(th.History))
	}
}

func TestCloseGivesUpWhenWritesNeverRecover(t *testing.T) {
	var w warnings
	s, _ := openStore(t, Options{OnWarning: w.add})
	s.cfg.open = func(string, bool) (appendFile, error) { return nil, errors.New("injected: read-only file system") }
	r, err := s.Create(testMeta("t-ro", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t1", prompt: "p", end: "completed"})
	if err := r.Sync(testCtx(t)); err == nil {
		t.Fatal("Sync succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := r.Close(ctx); err == nil {
		t.Fatal("Close succeeded")
	}
	if !w.contains("closing with") {
		t.Fatalf("no loss warning: %v", w.list())
	}
}

func TestOutputCappedInRolloutOnly(t *testing.T) {
	s, _ := openStore(t, Options{MaxItemOutput: 1024})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-cap", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "p"})
	big := strings.Repeat("x", 10_000)
	r.RecordItem("t1", model.NewFunctionCallOutput("", "c", big))
	r.RecordEvent(core.Event{TurnID: "t1", Msg: core.ItemCompleted{Item: core.CommandExecutionItem{
		ID: "c", Status: core.StatusCompleted, AggregatedOutput: &big}}})
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	th := mustRead(t, r.Path(), ReadOptions{})
	items := th.Turns[0].Items
	cmd := items[len(items)-1].(core.CommandExecutionItem)
	if n := len(*cmd.AggregatedOutput); n > 1200 {
		t.Fatalf("item output %d bytes", n)
	}
	// The model history is exact.
	if last := th.History[len(th.History)-1]; !strings.Contains(string(last.Raw()), big) {
		t.Fatal("history output was cut")
	}
}

// A thread's rollout warns once as it nears the readers' cap and once as
// it passes it (a file over the cap cannot be read back), in the log and
// to OnSizeWarning with the thread's id; reopened (its thread loaded
// again), it counts what the file holds and warns again.
func TestSizeWarningOnce(t *testing.T) {
	var w warnings
	type call struct {
		id   string
		over bool
	}
	var mu sync.Mutex
	var calls []call
	opts := Options{OnWarning: w.add, SizeWarning: 4096, Limits: Limits{MaxFileBytes: 32 << 10},
		OnSizeWarning: func(id string, size, limit int64, over bool) {
			mu.Lock()
			defer mu.Unlock()
			if limit != 32<<10 || size <= 4096 || over != (size > limit) {
				t.Errorf("OnSizeWarning(%s, %d, %d, %v)", id, size, limit, over)
			}
			calls = append(calls, call{id, over})
		}}
	s, _ := openStore(t, opts)
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-big", baseTime))
	turns := func(r *Recorder, n int) {
		for i := range n {
			recordTurn(t, r, turnScript{id: "t" + string(rune('a'+i)), prompt: strings.Repeat("p", 500), end: "completed"})
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	turns(r, 4)
	r.Close(ctx)
	count := func(sub string) int {
		n := 0
		for _, m := range w.list() {
			if strings.Contains(m, sub) {
				n++
			}
		}
		return n
	}
	if count("has grown past 4096 bytes; a file over 32768 bytes cannot be read back") != 1 || count("cannot be resumed once unloaded") != 0 {
		t.Fatalf("warnings: %v", w.list())
	}
	// Reopened, under the cap: told again at its first write; then past
	// the cap: told once.
	r, err := s.Reopen("t-big")
	if err != nil {
		t.Fatal(err)
	}
	turns(r, 1)
	if count("has grown past 4096 bytes") != 2 {
		t.Fatalf("warnings: %v", w.list())
	}
	turns(r, 40)
	r.Close(ctx)
	if count("has grown past 4096 bytes") != 2 || count("cannot be resumed once unloaded") != 1 {
		t.Fatalf("warnings: %v", w.list())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []call{{"t-big", false}, {"t-big", false}, {"t-big", true}}; !slices.Equal(calls, want) {
		t.Fatalf("OnSizeWarning calls %v, want %v", calls, want)
	}
}

func TestTurnEndIsFsyncedWithoutExplicitSync(t *testing.T) {
	s, _ := openStore(t, Options{})
	var syncs atomic.Int32
	s.cfg.open = func(path string, create bool) (appendFile, error) {
		f, err := openAppend(path, create)
		if err != nil {
			return nil, err
		}
		return countingSync{File: f.(*os.File), n: &syncs}, nil
	}
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-autosync", baseTime))
	defer r.Close(ctx)
	recordTurn(t, r, turnScript{id: "t1", prompt: "p", end: "completed"})
	// Flush is only a write barrier; the writer fsynced for the turn end
	// on its own before (or while) handling it.
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syncs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if syncs.Load() == 0 {
		t.Fatal("turn end not fsynced")
	}
}

type countingSync struct {
	*os.File
	n *atomic.Int32
}

func (c countingSync) Sync() error { c.n.Add(1); return c.File.Sync() }

func TestReopenAppendsAfterTornTail(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-torn", baseTime))
	recordTurn(t, r, turnScript{id: "t1", prompt: "one", end: "completed"})
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A crash cut the next record in half.
	f, _ := os.OpenFile(r.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"timestamp":"2026-11-29T23:02:00.000Z","type":"event_msg","turnId":"t2","payload":{"type":"turnSta`)
	f.Close()
	r2, err := s.Reopen("t-torn")
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r2, turnScript{id: "t3", prompt: "three", end: "completed"})
	if err := r2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	th := mustRead(t, r.Path(), ReadOptions{})
	if got := turnStatuses(th); len(got) != 2 || got[1] != TurnCompleted || th.Turns[1].ID != "t3" {
		t.Fatalf("turns %v", got)
	}
	if len(th.Warnings) != 1 {
		t.Fatalf("warnings %v", th.Warnings)
	}
	// Every line but the torn one is whole.
	sc := bufio.NewScanner(bytes.NewReader(must(os.ReadFile(r.Path()))))
	sc.Buffer(nil, 1<<20)
	bad := 0
	for sc.Scan() {
		if _, err := parseLine(sc.Bytes(), nil); err != nil || !strings.HasSuffix(sc.Text(), "}") {
			bad++
		}
	}
	if bad != 1 {
		t.Fatalf("%d bad lines", bad)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// writerParked waits until r's writer goroutine has stopped (the queue
// empty, everything written) and reports the queue's capacity then.
func writerParked(t *testing.T, r *Recorder) int {
	t.Helper()
	ctx := testCtx(t)
	for {
		r.qmu.Lock()
		running, c := r.running, cap(r.q)
		r.qmu.Unlock()
		if !running {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatal("the writer never stopped")
		case <-time.After(time.Millisecond):
		}
	}
}

// An idle recorder holds no writer goroutine, no queue array and no
// buffer; the next record starts a writer again, and every record of
// both turns reaches the file in order. A queue of two commands makes
// the turn's records wait for room.
func TestIdleWriterStopsAndRestarts(t *testing.T) {
	s, _ := openStore(t, Options{QueueSize: 2})
	ctx := testCtx(t)
	r, err := s.Create(testMeta("01a2298a-92b9-7252-86f8-84ac05ceba1d", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	if c := writerParked(t, r); c != 0 {
		t.Fatalf("a new recorder holds a queue of %d", c)
	}
	for i, id := range []string{"turn-1", "turn-2"} {
		recordTurn(t, r, turnScript{id: id, prompt: "prompt " + id, end: "completed", withCommand: true})
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if c := writerParked(t, r); c != 0 {
			t.Fatalf("after turn %d the idle queue keeps an array of %d", i+1, c)
		}
		// The writer has stopped: its state is ours to read.
		if r.w.buf != nil || r.w.spare != nil {
			t.Fatalf("after turn %d the idle writer keeps a buffer of %d bytes and a spare queue of %d", i+1, cap(r.w.buf), cap(r.w.spare))
		}
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	th := mustRead(t, r.Path(), ReadOptions{})
	if got := turnStatuses(th); len(got) != 2 || got[0] != TurnCompleted || got[1] != TurnCompleted {
		t.Fatalf("turns %v", got)
	}
	if len(th.History) != 8 {
		t.Fatalf("history of %d items, want 8 (four a turn)", len(th.History))
	}
}
