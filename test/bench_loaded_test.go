package test

import (
	"runtime"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// loadedBenchThreads is how many threads one op of
// BenchmarkLoadedIdleThreads loads.
const loadedBenchThreads = 200

// liveMemory is what the Go runtime holds for live objects and
// goroutines, after collections and once the goroutines that end have
// ended.
type liveMemory struct {
	heap, stack uint64
	goroutines  int
}

// settledMemory collects garbage until the number of goroutines stops
// falling (a thread's goroutines return shortly after its turn ends;
// at most a second), then reads the heap and stacks in use.
func settledMemory() liveMemory {
	last := -1
	for range 100 {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n == last {
			break
		}
		last = n
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return liveMemory{heap: ms.HeapInuse, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// BenchmarkLoadedIdleThreads: the memory a loaded, idle thread costs the
// daemon (issue 17: 1,000 of them under 100 MiB). Each op starts
// loadedBenchThreads threads on an in-process server, over one loopback
// WebSocket client subscribed to all of them, and runs one short turn on
// each (the mock model answers a message); the threads stay loaded, and
// ns/op is the time that takes.
// heapB/thread and stackB/thread divide the Go heap and the goroutine
// stacks in use afterwards, less before, by the threads (the client's
// share included, so they are an upper bound); goroutines/thread is what
// each idle thread keeps running. The load harness's "loaded threads"
// scenario measures the same as process RSS (docs/performance.md).
func BenchmarkLoadedIdleThreads(b *testing.B) {
	m := mockmodel.New(b, mockmodel.DropRequests()) // kept, they would count as the daemon's
	s, home := inprocServer(b, m)
	c := inprocWS(b, s, home)
	c.initialize()
	cwd := b.TempDir()
	var heap, stack, goroutines float64
	for b.Loop() {
		b.StopTimer()
		before := settledMemory()
		b.StartTimer()
		loadIdleThreads(b, s, m, c, cwd)
		b.StopTimer()
		after := settledMemory()
		b.StartTimer()
		heap += float64(int64(after.heap-before.heap)) / loadedBenchThreads
		stack += float64(int64(after.stack-before.stack)) / loadedBenchThreads
		goroutines += float64(after.goroutines-before.goroutines) / loadedBenchThreads
	}
	n := float64(b.N)
	b.ReportMetric(heap/n, "heapB/thread")
	b.ReportMetric(stack/n, "stackB/thread")
	b.ReportMetric(goroutines/n, "goroutines/thread")
}

// loadIdleThreads starts loadedBenchThreads threads on s and runs one
// short turn on each.
func loadIdleThreads(b *testing.B, _ *rpc.Server, m *mockmodel.Server, c *benchClient, cwd string) {
	for range loadedBenchThreads {
		m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "idle now")))
		id := c.startThread(cwd)
		c.request("turn/start", map[string]any{"threadId": id, "input": textInput("go")})
		if status, text := c.turnCompleted(); status != "completed" || text != "idle now" {
			b.Fatalf("turn %s with %q", status, text)
		}
	}
}
