package rollout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

type genThread struct {
	id       string
	created  time.Time
	provider string
	cwd      string
	source   string
	name     string
	path     string
}

// generate writes n threads with varied metadata. Every fifth shares its
// creation time with the previous one, to exercise the id tie-break.
func generate(t testing.TB, home string, n int) []genThread {
	t.Helper()
	var out []genThread
	at := baseTime
	for i := range n {
		if i%5 != 4 {
			at = at.Add(time.Duration(1+i%3) * time.Minute)
		}
		g := genThread{
			id:       uuid7At(at, i),
			created:  at,
			provider: []string{"openai", "mock", "local"}[i%3],
			cwd:      fmt.Sprintf("/work/p%d", i%4),
			source:   []string{"vscode", "cli", "exec", "subAgentReview"}[i%4],
		}
		if i%10 == 0 {
			g.name = fmt.Sprintf("Named %d", i)
		}
		m := testMeta(g.id, g.created)
		m.ModelProvider, m.Cwd, m.Source = g.provider, g.cwd, g.source
		g.path = writeThreadFile(t, home, m, 1+i%3, g.name)
		out = append(out, g)
	}
	return out
}

func ids(page []ThreadSummary) []string {
	var out []string
	for _, s := range page {
		out = append(out, s.ID)
	}
	return out
}

func sortedIDs(gs []genThread, desc bool, key func(genThread) time.Time) []string {
	gs = slices.Clone(gs)
	slices.SortFunc(gs, func(a, b genThread) int {
		c := cmpKey(key(a).UnixNano(), a.id, key(b).UnixNano(), b.id)
		if desc {
			return -c
		}
		return c
	})
	var out []string
	for _, g := range gs {
		out = append(out, g.id)
	}
	return out
}

func listAll(t *testing.T, s *Store, opts ListOptions) ([]string, int) {
	t.Helper()
	var all []string
	pages := 0
	for {
		page, next, _, err := s.List(opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, ids(page)...)
		if next == "" {
			return all, pages
		}
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		opts.Cursor = next
	}
}

func TestListPaginationBothDirections(t *testing.T) {
	s, home := openStore(t, Options{})
	gs := generate(t, home, 300)
	created := func(g genThread) time.Time { return g.created }

	got, pages := listAll(t, s, ListOptions{Limit: 7})
	if diff := cmp.Diff(sortedIDs(gs, true, created), got); diff != "" {
		t.Fatalf("desc (-want +got):\n%s", diff)
	}
	if pages != 43 {
		t.Fatalf("%d pages", pages)
	}
	got, _ = listAll(t, s, ListOptions{Limit: 11, Direction: SortAsc})
	if diff := cmp.Diff(sortedIDs(gs, false, created), got); diff != "" {
		t.Fatalf("asc (-want +got):\n%s", diff)
	}

	// A backwards cursor, used with the other direction, returns what
	// came before the page, nearest first.
	p1, next, _, _ := s.List(ListOptions{Limit: 10})
	p2, _, back, err := s.List(ListOptions{Limit: 10, Cursor: next})
	if err != nil || len(p2) != 10 {
		t.Fatal(err)
	}
	before, _, _, err := s.List(ListOptions{Limit: 10, Cursor: back, Direction: SortAsc})
	if err != nil {
		t.Fatal(err)
	}
	rev := ids(p1)
	slices.Reverse(rev)
	if diff := cmp.Diff(rev, ids(before)); diff != "" {
		t.Fatalf("backwards page (-want +got):\n%s", diff)
	}
	// The first page's backwards cursor is a watermark: nothing is newer
	// yet; a thread added later is.
	_, _, back1, _ := s.List(ListOptions{Limit: 10})
	if newer, _, _, _ := s.List(ListOptions{Cursor: back1, Direction: SortAsc}); len(newer) != 0 {
		t.Fatalf("%d newer threads", len(newer))
	}
	late := testMeta(uuid7At(baseTime.Add(1000*time.Hour), 9999), baseTime.Add(1000*time.Hour))
	writeThreadFile(t, home, late, 1, "")
	if newer, _, _, _ := s.List(ListOptions{Cursor: back1, Direction: SortAsc}); len(newer) != 1 || newer[0].ID != late.ID {
		t.Fatalf("newer %v", ids(newer))
	}
}

func TestListSortByUpdated(t *testing.T) {
	s, home := openStore(t, Options{})
	gs := generate(t, home, 40)
	// Updated order is the reverse of creation order, with the file mtime.
	mod := map[string]time.Time{}
	for i, g := range gs {
		m := baseTime.Add(time.Duration(len(gs)-i) * time.Hour)
		if err := os.Chtimes(g.path, m, m); err != nil {
			t.Fatal(err)
		}
		mod[g.id] = m
	}
	got, _ := listAll(t, s, ListOptions{Limit: 9, SortKey: SortUpdatedAt})
	want := sortedIDs(gs, true, func(g genThread) time.Time { return mod[g.id] })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("updated desc (-want +got):\n%s", diff)
	}
	page, _, _, _ := s.List(ListOptions{Limit: 1, SortKey: SortUpdatedAt})
	if !page[0].UpdatedAt.Equal(mod[page[0].ID]) {
		t.Fatalf("updatedAt %v", page[0].UpdatedAt)
	}
}

func TestListFilters(t *testing.T) {
	s, home := openStore(t, Options{})
	gs := generate(t, home, 120)
	count := func(pred func(genThread) bool) int {
		n := 0
		for _, g := range gs {
			if pred(g) {
				n++
			}
		}
		return n
	}
	cases := []struct {
		name string
		opts ListOptions
		pred func(genThread) bool
	}{
		{"provider", ListOptions{ModelProviders: []string{"mock", "local"}}, func(g genThread) bool { return g.provider != "openai" }},
		{"cwd", ListOptions{Cwd: []string{"/work/p1"}}, func(g genThread) bool { return g.cwd == "/work/p1" }},
		{"source", ListOptions{SourceKinds: []string{"vscode", "cli"}}, func(g genThread) bool { return g.source == "vscode" || g.source == "cli" }},
		{"search name", ListOptions{SearchTerm: "Named 1"}, func(g genThread) bool { return strings.Contains(g.name, "Named 1") }},
		{"search preview", ListOptions{SearchTerm: "prompt 0 of " + gs[7].id}, func(g genThread) bool { return g.id == gs[7].id }},
		{"search is case-sensitive", ListOptions{SearchTerm: "named"}, func(genThread) bool { return false }},
		{"combined", ListOptions{ModelProviders: []string{"mock"}, Cwd: []string{"/work/p1", "/work/p3"}},
			func(g genThread) bool { return g.provider == "mock" && (g.cwd == "/work/p1" || g.cwd == "/work/p3") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := listAll(t, s, withLimit(c.opts, 100))
			if want := count(c.pred); len(got) != want {
				t.Fatalf("%d threads, want %d", len(got), want)
			}
			for _, id := range got {
				i := slices.IndexFunc(gs, func(g genThread) bool { return g.id == id })
				if !c.pred(gs[i]) {
					t.Fatalf("%s does not match", id)
				}
			}
		})
	}
	page, _, _, _ := s.List(ListOptions{SearchTerm: "Named 10"})
	if len(page) != 2 || page[0].Name == "" { // "Named 10" and "Named 100"
		t.Fatalf("name search %v", page)
	}
}

func withLimit(o ListOptions, n int) ListOptions { o.Limit = n; return o }

func TestListSummaryFieldsAndLimits(t *testing.T) {
	s, home := openStore(t, Options{})
	generate(t, home, 130)
	page, next, _, err := s.List(ListOptions{Limit: 500})
	if err != nil || len(page) != MaxListLimit || next == "" {
		t.Fatalf("clamped page: %d %q %v", len(page), next, err)
	}
	if page, _, _, _ := s.List(ListOptions{}); len(page) != DefaultListLimit {
		t.Fatalf("default page %d", len(page))
	}
	e := page[0]
	if e.Preview == "" || e.Cwd == "" || e.ModelProvider == "" || e.Model != "gpt-test" || e.Source == "" ||
		e.Originator != "acceptance" || e.CLIVersion == "" || e.CreatedAt.IsZero() || e.UpdatedAt.IsZero() ||
		!filepath.IsAbs(e.Path) || e.TurnCount == 0 || e.Archived {
		t.Fatalf("summary %+v", e)
	}
	for _, bad := range []string{"garbage", "2026-11-29T23:06:19Z|", "x|y"} {
		_, _, _, err := s.List(ListOptions{Cursor: bad})
		var ic *InvalidCursorError
		if !errors.As(err, &ic) || !errors.Is(err, ErrInvalidCursor) || err.Error() != "invalid cursor: "+bad {
			t.Fatalf("cursor %q: %v", bad, err)
		}
	}
	if _, _, _, err := s.List(ListOptions{SortKey: "sideways"}); err == nil {
		t.Fatal("bad sort key accepted")
	}
	if _, _, _, err := s.List(ListOptions{Direction: "up"}); err == nil {
		t.Fatal("bad direction accepted")
	}
}

func TestListStatusNameAndZeroTurnThreads(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	recordThread(t, s, "t-ok", turnScript{id: "a", prompt: "fine", end: "completed"})
	recordThread(t, s, "t-failed", turnScript{id: "a", prompt: "broken", end: "failed"})
	r, _ := s.Create(testMeta("t-zero", baseTime))
	r.Persist(ctx)
	r.Close(ctx)
	s.SetName(ctx, "t-ok", "My thread")
	page, _, _, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ThreadSummary{}
	for _, e := range page {
		got[e.ID] = e
	}
	if len(got) != 2 {
		t.Fatalf("listed %v", ids(page))
	}
	if !got["t-failed"].LastTurnFailed || got["t-ok"].LastTurnFailed {
		t.Fatal("failed status wrong")
	}
	if got["t-ok"].Name != "My thread" || got["t-ok"].Preview != "fine" {
		t.Fatalf("t-ok %+v", got["t-ok"])
	}
	// The zero-turn thread is readable, just not listed.
	if sum, err := s.Summary("t-zero"); err != nil || sum.TurnCount != 0 {
		t.Fatalf("Summary: %+v %v", sum, err)
	}
	// Archived threads are listed only when asked for.
	s.Archive("t-ok")
	live, _, _, _ := s.List(ListOptions{})
	arch, _, _, _ := s.List(ListOptions{Archived: true})
	if len(live) != 1 || len(arch) != 1 || arch[0].ID != "t-ok" || !arch[0].Archived || arch[0].Name != "My thread" {
		t.Fatalf("live %v archived %v", ids(live), ids(arch))
	}
}

func TestIndexFollowsChangesBehindItsBack(t *testing.T) {
	s, home := openStore(t, Options{IndexRevalidate: time.Hour})
	gs := generate(t, home, 20)
	if got, _ := listAll(t, s, ListOptions{}); len(got) != 20 {
		t.Fatalf("%d", len(got))
	}
	// Added by someone else.
	extra := testMeta("added-behind", baseTime.Add(-time.Hour))
	writeThreadFile(t, home, extra, 2, "")
	if got, _ := listAll(t, s, ListOptions{}); len(got) != 21 || !slices.Contains(got, "added-behind") {
		t.Fatalf("added: %d", len(got))
	}
	// Moved to the archive by hand.
	dst := filepath.Join(home, ArchivedDir, filepath.Base(gs[3].path))
	os.MkdirAll(filepath.Dir(dst), 0o700)
	if err := os.Rename(gs[3].path, dst); err != nil {
		t.Fatal(err)
	}
	live, _ := listAll(t, s, ListOptions{})
	arch, _ := listAll(t, s, ListOptions{Archived: true})
	if len(live) != 20 || slices.Contains(live, gs[3].id) || len(arch) != 1 || arch[0] != gs[3].id {
		t.Fatalf("moved: live %d archived %v", len(live), arch)
	}
	if loc, err := s.Find(gs[3].id); err != nil || loc.Path != dst || !loc.Archived {
		t.Fatalf("Find moved: %+v %v", loc, err)
	}
	// Deleted, including a whole day directory.
	os.Remove(gs[5].path)
	os.RemoveAll(filepath.Dir(gs[9].path))
	live, _ = listAll(t, s, ListOptions{})
	if slices.Contains(live, gs[5].id) || slices.Contains(live, gs[9].id) {
		t.Fatal("deleted threads still listed")
	}
}

func TestIndexRechecksFilesCaughtMidWrite(t *testing.T) {
	s, home := openStore(t, Options{IndexRevalidate: time.Hour})
	p := writeThreadFile(t, home, testMeta("t-midwrite", baseTime), 2, "Complete")
	full := must(os.ReadFile(p))
	// Another process is writing the file when the index first reads it.
	half := strings.Index(string(full), `"turnId":"t-midwrite-t1"`)
	os.WriteFile(p, full[:half], 0o600)
	if sum, err := s.Summary("t-midwrite"); err != nil || sum.TurnCount != 1 {
		t.Fatalf("half: %+v %v", sum, err)
	}
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(full[half:])
	f.Close()
	if sum, err := s.Summary("t-midwrite"); err != nil || sum.TurnCount != 2 || sum.Name != "Complete" {
		t.Fatalf("completed file: %+v %v", sum, err)
	}
}

func TestIndexSeesAppendsByOtherProcesses(t *testing.T) {
	s, home := openStore(t, Options{IndexRevalidate: -1})
	gs := generate(t, home, 5)
	s.List(ListOptions{})
	// Another process names a thread: the file grows in place.
	if err := appendRecord(gs[2].path, appendLine(nil, time.Now(), LineThreadName, "", []byte(`{"name":"renamed elsewhere"}`))); err != nil {
		t.Fatal(err)
	}
	sum, err := s.Summary(gs[2].id)
	if err != nil || sum.Name != "renamed elsewhere" {
		t.Fatalf("summary %+v %v", sum, err)
	}
}

func TestIndexBackgroundRevalidationFindsAppends(t *testing.T) {
	s, home := openStore(t, Options{IndexRevalidate: time.Nanosecond})
	gs := generate(t, home, 5)
	s.List(ListOptions{})
	if err := appendRecord(gs[1].path, appendLine(nil, time.Now(), LineThreadName, "", []byte(`{"name":"seen later"}`))); err != nil {
		t.Fatal(err)
	}
	// List does not wait for the re-stat of every file; a background pass
	// marks the grown file and a later call reads it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		sum, err := s.Summary(gs[1].id)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Name == "seen later" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("append never noticed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIndexSeesOwnRecorderWritesAtOnce(t *testing.T) {
	s, _ := openStore(t, Options{IndexRevalidate: time.Hour})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-live", baseTime))
	defer r.Close(ctx)
	recordTurn(t, r, turnScript{id: "a", prompt: "first", end: "completed"})
	r.Sync(ctx)
	if page, _, _, _ := s.List(ListOptions{}); len(page) != 1 || page[0].TurnCount != 1 {
		t.Fatalf("page %+v", page)
	}
	recordTurn(t, r, turnScript{id: "b", prompt: "second", end: "failed"})
	r.SetName(ctx, "renamed")
	r.Flush(ctx)
	page, _, _, _ := s.List(ListOptions{})
	if len(page) != 1 || page[0].TurnCount != 2 || page[0].Name != "renamed" || !page[0].LastTurnFailed {
		t.Fatalf("page %+v", page)
	}
}

func TestIncrementalSummaryEqualsFullScan(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := testCtx(t)
	r, _ := s.Create(testMeta("t-inc", baseTime))
	recordTurn(t, r, turnScript{id: "a", prompt: "one", end: "completed"})
	recordTurn(t, r, turnScript{id: "b", prompt: "two", end: "completed"})
	r.Sync(ctx)
	first, off, err := scanSummary(r.Path(), nil, 0, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	r.Rollback(ctx, 2)
	recordTurn(t, r, turnScript{id: "c", prompt: "three", end: "failed"})
	r.SetName(ctx, "n")
	r.Close(ctx)
	inc, off2, err := scanSummary(r.Path(), first, off, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	full, off3, err := scanSummary(r.Path(), nil, 0, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(full, inc, cmpopts.IgnoreUnexported(summary{})); diff != "" || off2 != off3 {
		t.Fatalf("incremental differs (-full +inc):\n%s", diff)
	}
	if len(first.Turns) != 2 {
		t.Fatal("the earlier summary was changed")
	}
	if full.Preview != "three" || len(full.Turns) != 1 || !full.lastTurnFailed() {
		t.Fatalf("summary %+v", full)
	}
	// The rebuild agrees.
	th := mustRead(t, r.Path(), ReadOptions{})
	if th.Preview != full.Preview || len(th.Turns) != len(full.Turns) || th.LastTurnFailed != full.lastTurnFailed() {
		t.Fatalf("rebuild %+v vs summary %+v", th.Summary(), full)
	}
}

func TestIndexCacheIsUsedAcrossRuns(t *testing.T) {
	home := t.TempDir()
	s, err := Open(home, Options{NoGitInfo: true, NoIndexWarmUp: true})
	if err != nil {
		t.Fatal(err)
	}
	gs := generate(t, home, 30)
	if got, _ := listAll(t, s, ListOptions{}); len(got) != 30 {
		t.Fatal(len(got))
	}
	s.Close()
	if !fileExists(filepath.Join(home, indexCacheName)) {
		t.Fatal("no cache file")
	}
	// Change a file's content but not its size, mtime or inode: only a
	// reader of the cache keeps the old preview.
	p := gs[0].path
	st, _ := os.Stat(p)
	b := must(os.ReadFile(p))
	b2 := []byte(strings.Replace(string(b), "prompt 0 of", "PROMPT 0 of", 2))
	f, _ := os.OpenFile(p, os.O_WRONLY, 0)
	f.WriteAt(b2, 0)
	f.Close()
	os.Chtimes(p, st.ModTime(), st.ModTime())

	s2, _ := Open(home, Options{NoGitInfo: true, IndexRevalidate: -1})
	defer s2.Close()
	sum, err := s2.Summary(gs[0].id)
	if err != nil || !strings.HasPrefix(sum.Preview, "prompt 0") {
		t.Fatalf("cache not used: %+v %v", sum.Preview, err)
	}
	// Once the mtime changes the file is read again.
	later := st.ModTime().Add(time.Second)
	os.Chtimes(p, later, later)
	if sum, _ := s2.Summary(gs[0].id); !strings.HasPrefix(sum.Preview, "PROMPT 0") {
		t.Fatalf("stale summary kept: %q", sum.Preview)
	}
}

func TestCorruptIndexCacheIsRebuilt(t *testing.T) {
	var w warnings
	home := t.TempDir()
	generate(t, home, 10)
	os.WriteFile(filepath.Join(home, indexCacheName), []byte("not a gob"), 0o600)
	s, _ := Open(home, Options{NoGitInfo: true, NoIndexWarmUp: true, OnWarning: w.add})
	defer s.Close()
	if got, _ := listAll(t, s, ListOptions{}); len(got) != 10 {
		t.Fatalf("%d", len(got))
	}
	if !w.contains("index cache") {
		t.Fatalf("warnings %v", w.list())
	}
}

// ExcludeIDs leaves threads out before the page is cut, whatever the case
// their meta spells their id in.
func TestListExcludesIDsBeforeTheLimit(t *testing.T) {
	home := t.TempDir()
	upper := strings.ToUpper(uuid7At(baseTime, 1))
	writeThreadFile(t, home, testMeta(upper, baseTime), 1, "")
	var ids []string
	for i := range 3 {
		at := baseTime.Add(time.Duration(i+1) * time.Minute)
		id := uuid7At(at, 2)
		writeThreadFile(t, home, testMeta(id, at), 1, "")
		ids = append(ids, id)
	}
	s, err := Open(home, Options{NoGitInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, _, _, err := s.List(ListOptions{Limit: 2, ExcludeIDs: []string{ids[2]}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != ids[1] || page[1].ID != ids[0] {
		t.Fatalf("page %v, want %s and %s", page, ids[1], ids[0])
	}
	page, _, _, err = s.List(ListOptions{ExcludeIDs: []string{strings.ToLower(upper)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range page {
		if strings.EqualFold(th.ID, upper) {
			t.Fatalf("%s listed though excluded", th.ID)
		}
	}
	if len(page) != 3 {
		t.Fatalf("%d threads listed, want 3", len(page))
	}
}
