package rollout

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// BenchmarkList measures thread/list over 10,000 and 100,000 stored
// threads: the first call of a process that has no index cache (every
// file read), the first call of a process that has one, and calls on a
// running store (a page is a seek and a step per entry: the same at any
// size), watching the home or polling it.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) { benchmarkList(b, n) })
	}
}

func benchmarkList(b *testing.B, n int) {
	home := b.TempDir()
	total := writeManyThreads(b, home, n)
	b.Logf("%d threads, %.1f MiB of rollouts", n, float64(total)/(1<<20))
	opts := Options{NoGitInfo: true, NoIndexWarmUp: true}
	first := func(b *testing.B, o Options) {
		for b.Loop() {
			s, _ := Open(home, o)
			if page, _, _, err := s.List(ListOptions{}); err != nil || len(page) != DefaultListLimit {
				b.Fatal(err)
			}
			// Not timed: stopping the background pass the call started.
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	}
	b.Run("first-no-cache", func(b *testing.B) {
		defer reportCPU(b)()
		first(b, Options{NoGitInfo: true, NoIndexCache: true, NoIndexWarmUp: true})
	})
	// Write the cache once.
	s, _ := Open(home, opts)
	s.List(ListOptions{})
	s.Close()
	b.Run("first-after-open", func(b *testing.B) {
		defer reportCPU(b)()
		first(b, opts)
	})
	warm := func(name string, o Options, lo ListOptions) {
		b.Run(name, func(b *testing.B) {
			s, _ := Open(home, o)
			defer s.Close()
			s.List(lo)
			// Not timed: the background re-stat of the files the cache
			// brought, and the reading of the files it has read the first
			// line of only.
			<-s.idx.checked
			s.idx.urgeFinish()
			for s.idx.countPartial() > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			defer reportCPU(b)()
			for b.Loop() {
				if _, _, _, err := s.List(lo); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	warm("warm", opts, ListOptions{})
	warm("warm-poll", Options{NoGitInfo: true, NoIndexWarmUp: true, NoIndexWatch: true}, ListOptions{})
	warm("warm-page-5", opts, ListOptions{Cursor: cursor{key: baseTime.Add(time.Duration(n/2) * time.Minute).UnixNano(), id: "~"}.String()})
	warm("warm-updated-asc-filtered", opts, ListOptions{SortKey: SortUpdatedAt, Direction: SortAsc, ModelProviders: []string{"mock"}, SearchTerm: "prompt 0"})
	warm("warm-search-no-match", opts, ListOptions{SearchTerm: "no thread says this"})
}

// writeManyThreads writes n threads of one to three turns into home's
// sessions, one minute apart from baseTime, half of them of provider
// "mock", and returns their total size. Six templates written once are
// copied with each thread's id and dates, which writes 100,000 threads in
// seconds.
func writeManyThreads(b testing.TB, home string, n int) int64 {
	tmplHome := b.TempDir()
	var tmpls [][]byte
	tmplAt := baseTime
	var tmplIDs []string
	for i := range 6 {
		id := uuid7At(tmplAt, 900_000+i)
		m := testMeta(id, tmplAt)
		m.ModelProvider = []string{"openai", "mock"}[i%2]
		tmpls = append(tmpls, must(os.ReadFile(writeThreadFile(b, tmplHome, m, 1+i%3, ""))))
		tmplIDs = append(tmplIDs, id)
	}
	const layout = "2006-01-02T15:04:05.000Z"
	oldAt := tmplAt.Format(layout)
	var total int64
	dirs := map[string]bool{}
	for i := range n {
		at := baseTime.Add(time.Duration(i) * time.Minute)
		id := uuid7At(at, i)
		k := i % 6
		body := strings.ReplaceAll(string(tmpls[k]), tmplIDs[k], id)
		body = strings.ReplaceAll(body, oldAt, at.Format(layout))
		p := filepath.Join(datedDir(home, at), FileName(at, id))
		if d := filepath.Dir(p); !dirs[d] {
			if err := os.MkdirAll(d, 0o700); err != nil {
				b.Fatal(err)
			}
			dirs[d] = true
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			b.Fatal(err)
		}
		total += int64(len(body))
	}
	return total
}

// recordRichTurn records a turn with reasoning, a command and an answer.
func recordRichTurn(b testing.TB, r *Recorder, i int) {
	id := fmt.Sprintf("turn-%04d", i)
	recordTurn(b, r, turnScript{id: id, prompt: fmt.Sprintf("please look at file %d and fix the bug in it", i), withCommand: true})
	rs := core.ReasoningItem{ID: "rs-" + id, Summary: []string{"Looking at the file to find the bug before changing it."}}
	r.RecordEvent(core.Event{TurnID: id, Msg: core.ItemStarted{Item: core.ReasoningItem{ID: rs.ID}}})
	r.RecordItem(id, model.NewResponseItem(map[string]any{"type": "reasoning", "id": rs.ID,
		"summary": []map[string]string{{"type": "summary_text", "text": rs.Summary[0]}}, "encrypted_content": strings.Repeat("Zm9v", 200)}))
	r.RecordEvent(core.Event{TurnID: id, Msg: core.ItemCompleted{Item: rs}})
	recordTurnEnd(r, id)
}

func recordTurnEnd(r *Recorder, id string) {
	msg := core.AgentMessageItem{ID: "msg-" + id, Text: "I fixed the off-by-one error in the loop bound."}
	r.RecordEvent(core.Event{TurnID: id, Msg: core.ItemStarted{Item: core.AgentMessageItem{ID: msg.ID}}})
	r.RecordItem(id, model.NewTextMessage(msg.ID, "assistant", msg.Text))
	r.RecordEvent(core.Event{TurnID: id, Msg: core.ItemCompleted{Item: msg}})
	u := model.TokenUsage{InputTokens: 1200, OutputTokens: 300, TotalTokens: 1500}
	r.RecordEvent(core.Event{TurnID: id, Msg: core.TokenCount{Info: core.TokenUsageInfo{Total: u, Last: u}}})
	r.RecordEvent(core.Event{TurnID: id, Msg: core.TurnComplete{CompletedAt: time.Now(), Duration: time.Second}})
}

// BenchmarkResume1000Turns rebuilds a thread of 1,000 turns (history,
// turns, items, usage) from its file.
func BenchmarkResume1000Turns(b *testing.B) {
	s, _ := openStore(b, Options{})
	ctx := context.Background()
	r, _ := s.Create(testMeta("t-resume", baseTime))
	for i := range 1000 {
		recordRichTurn(b, r, i)
	}
	if err := r.Close(ctx); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(r.Path())
	th := mustRead(b, r.Path(), ReadOptions{})
	if len(th.Turns) != 1000 || len(th.History) != 5000 {
		b.Fatalf("%d turns, %d history items", len(th.Turns), len(th.History))
	}
	b.Logf("file %.1f MiB, %d history items", float64(st.Size())/(1<<20), len(th.History))
	b.Run("full", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := s.Read(ctx, "t-resume", ReadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("turns-only", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := ReadThread(context.Background(), r.Path(), ReadOptions{SkipHistory: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteThroughput records items (a history item and its completed
// event each) in turns of 10, with Sync (fsync) at each turn end.
func BenchmarkWriteThroughput(b *testing.B) {
	s, _ := openStore(b, Options{})
	ctx := context.Background()
	r, _ := s.Create(testMeta("t-write", baseTime))
	defer r.Close(ctx)
	i := 0
	turn := ""
	start := time.Now()
	for b.Loop() {
		if i%10 == 0 {
			turn = fmt.Sprintf("turn-%d", i/10)
			r.RecordEvent(core.Event{TurnID: turn, Msg: core.TurnStarted{Kind: core.TurnRegular}})
		}
		id := fmt.Sprintf("msg-%d", i)
		text := "a reasonably sized answer paragraph that the model produced for the user in this turn"
		r.RecordItem(turn, model.NewTextMessage(id, "assistant", text))
		r.RecordEvent(core.Event{TurnID: turn, Msg: core.ItemCompleted{Item: core.AgentMessageItem{ID: id, Text: text}}})
		i++
		if i%10 == 0 {
			r.RecordEvent(core.Event{TurnID: turn, Msg: core.TurnComplete{}})
			if err := r.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := r.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(i)/time.Since(start).Seconds(), "items/s")
	_ = filepath.Base(r.Path())
}

// reportCPU adds the process CPU time (user+system, all threads) per
// operation to a benchmark: on a shared, loaded machine it is steadier than
// wall time. Call it as defer reportCPU(b)().
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFindUnindexed finds a thread the index does not know yet (a
// fork's copy, a thread unloaded before any thread/list) in a day of
// 5,000 threads: named after its id's time, and named otherwise (going
// through the directory).
func BenchmarkFindUnindexed(b *testing.B) {
	s, home := openStore(b, Options{})
	for i := range 5000 {
		writeThreadFile(b, home, testMeta(uuid7At(baseTime, 100+i), baseTime), 0, "")
	}
	named := uuid7At(baseTime.Add(time.Minute), 1)
	writeThreadFile(b, home, testMeta(named, baseTime.Add(time.Minute)), 0, "")
	other := uuid7At(baseTime, 2)
	writeThreadFile(b, home, testMeta(other, baseTime.Add(time.Hour)), 0, "")
	for _, bc := range []struct{ name, id string }{{"by-name", named}, {"by-directory", other}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Find(bc.id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
