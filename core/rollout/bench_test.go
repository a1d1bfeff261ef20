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

// BenchmarkList10k measures thread/list over 10,000 stored threads: a
// process start without the index cache (every file read), a process start
// with it, and calls on a running store.
func BenchmarkList10k(b *testing.B) {
	home := b.TempDir()
	var total int64
	at := baseTime
	for i := range 10_000 {
		at = at.Add(time.Duration(1+i%7) * time.Minute)
		m := testMeta(uuid7At(at, i), at)
		m.ModelProvider = []string{"openai", "mock"}[i%2]
		p := writeThreadFile(b, home, m, 1+i%5, "")
		st, _ := os.Stat(p)
		total += st.Size()
	}
	b.Logf("10000 threads, %.1f MiB of rollouts", float64(total)/(1<<20))
	opts := Options{NoGitInfo: true, NoIndexWarmUp: true}

	b.Run("cold-no-cache", func(b *testing.B) {
		for b.Loop() {
			s, _ := Open(home, Options{NoGitInfo: true, NoIndexCache: true, NoIndexWarmUp: true})
			if page, _, _, err := s.List(ListOptions{}); err != nil || len(page) != DefaultListLimit {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
	// Write the cache once.
	s, _ := Open(home, opts)
	s.List(ListOptions{})
	s.Close()
	b.Run("cold-with-cache", func(b *testing.B) {
		for b.Loop() {
			s, _ := Open(home, opts)
			if page, _, _, err := s.List(ListOptions{}); err != nil || len(page) != DefaultListLimit {
				b.Fatal(err)
			}
			// Not timed: the background re-stat the first call started.
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
	warm := func(name string, o Options, lo ListOptions) {
		b.Run(name, func(b *testing.B) {
			s, _ := Open(home, o)
			defer s.Close()
			s.List(lo)
			defer reportCPU(b)()
			for b.Loop() {
				if _, _, _, err := s.List(lo); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	warm("warm", opts, ListOptions{})
	warm("warm-updated-asc-filtered", opts, ListOptions{SortKey: SortUpdatedAt, Direction: SortAsc, ModelProviders: []string{"mock"}, SearchTerm: "prompt 0"})
	warm("warm-restat-every-file", Options{NoGitInfo: true, NoIndexWarmUp: true, IndexRevalidate: -1}, ListOptions{})
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
