package test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
	"github.com/agentd-dev/agentd/test/proc"
)

// turnDeltas is the size of the big turn.
const turnDeltas = 20000

// benchText is a model answer of n words, each streamed as one delta by
// mockmodel.TextN(id, benchText(n), n).
func benchText(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "w%05d ", i%100000)
	}
	return b.String()
}

// turnFigures accumulates the per-op figures of a turn benchmark.
type turnFigures struct {
	wall, turnCPU, totalCPU time.Duration
	selfCPU                 time.Duration // the test process: mock and clients
	maxRSS                  int64
	notifications           int
	ops                     int
}

// timeTurn runs turn with the benchmark's timer on, and records its wall
// time, the daemon's CPU and the test process's.
func (f *turnFigures) timeTurn(b *testing.B, d *Daemon, turn func()) {
	pid := d.Cmd.Process.Pid
	cpu0, err := proc.CPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	self0 := selfCPU()
	b.StartTimer()
	start := time.Now()
	turn()
	f.wall += time.Since(start)
	b.StopTimer()
	f.selfCPU += selfCPU() - self0
	cpu1, err := proc.CPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	f.turnCPU += cpu1 - cpu0
}

// measureExit records the daemon's peak memory, stops it and records the
// CPU time of its whole life.
func (f *turnFigures) measureExit(b *testing.B, d *Daemon, stdio bool) {
	rss, err := procPeakRSS(d.Cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	f.maxRSS = max(f.maxRSS, rss)
	f.totalCPU += exitUsage(b, d, stdio)
}

func (f *turnFigures) report(b *testing.B, deltas int) {
	ops := float64(f.ops)
	b.ReportMetric(float64(f.turnCPU.Milliseconds())/ops, "cpu-ms/op")
	b.ReportMetric(float64(f.totalCPU.Milliseconds())/ops, "proc-cpu-ms/op")
	b.ReportMetric(float64(f.selfCPU.Milliseconds())/ops, "bench-cpu-ms/op")
	b.ReportMetric(float64(f.maxRSS)/(1<<20), "maxrss-MB")
	b.ReportMetric(float64(deltas)*ops/f.wall.Seconds(), "deltas/s")
	b.ReportMetric(float64(f.notifications)/ops, "notifs/op")
}

// selfCPU is the CPU time (user+sys) of the test process so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTurn20kStdio is issue 5: one turn of 20,000 text deltas from
// the mock model to one stdio client, through the real binary. One op is
// one turn in a fresh daemon; ns/op is the turn's wall time (turn/start
// sent to turn/completed read). cpu-ms/op is agentd's CPU (user+sys)
// during the turn (/proc, 10 ms ticks), proc-cpu-ms/op over its whole life
// (start and exit included), bench-cpu-ms/op the test process's CPU during
// the turn (mock model and client: on 2 cores they compete with agentd),
// maxrss-MB its peak resident memory up to the
// turn's end (VmHWM; the largest over the ops), notifs/op the delta notifications the client received
// (fewer than 20,000 when deltas were coalesced). The client checks that
// the joined deltas are the model's text.
func BenchmarkTurn20kStdio(b *testing.B) {
	text := benchText(turnDeltas)
	var f turnFigures
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		m := mockmodel.New(b)
		m.Enqueue(mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", text, turnDeltas)))
		d := Start(b, Options{ConfigTOML: benchConfig(m.URL())})
		c := benchStdio(b, d, false)
		c.initialize()
		threadID := c.startThread(b.TempDir())
		var status, final string
		f.timeTurn(b, d, func() {
			c.request("turn/start", map[string]any{"threadId": threadID, "input": textInput("go")})
			status, final = c.turnCompleted()
		})
		if status != "completed" || final != text {
			b.Fatalf("turn %s, final text of %d bytes", status, len(final))
		}
		c.checkText(text)
		f.notifications += c.deltas
		f.measureExit(b, d, true)
		f.ops++
		b.StartTimer()
	}
	f.report(b, turnDeltas)
}

// wsSubscribers is the fan-out: one client starts the thread, the
// others join it.
const wsSubscribers = 50

// BenchmarkTurn20kWS50 is BenchmarkTurn20kStdio with 50 WebSocket
// subscribers on one thread: one starts it, 49 join with thread/resume
// {excludeTurns: true}. Every client must get the model's whole text
// (coalesced deltas are fine, loss is not). ns/op ends when the last
// client has read turn/completed; notifs/op is per client (mean).
func BenchmarkTurn20kWS50(b *testing.B) {
	text := benchText(turnDeltas)
	var f turnFigures
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		m := mockmodel.New(b)
		m.Enqueue(mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", text, turnDeltas)))
		d := Start(b, Options{Listen: []string{"ws://127.0.0.1:0"}, ConfigTOML: benchConfig(m.URL())})
		clients := make([]*benchClient, wsSubscribers)
		for k := range clients {
			clients[k] = benchWS(b, d, fmt.Sprintf("ws%d", k))
			clients[k].initialize()
		}
		threadID := clients[0].startThread(b.TempDir())
		for _, c := range clients[1:] {
			c.call("thread/resume", map[string]any{"threadId": threadID, "excludeTurns": true})
		}
		finals := make([]string, len(clients))
		statuses := make([]string, len(clients))
		f.timeTurn(b, d, func() {
			clients[0].request("turn/start", map[string]any{"threadId": threadID, "input": textInput("go")})
			for k, c := range clients {
				statuses[k], finals[k] = c.turnCompleted()
			}
		})
		for k, c := range clients {
			if statuses[k] != "completed" || finals[k] != text {
				b.Fatalf("%s: turn %s, final text of %d bytes", c.name, statuses[k], len(finals[k]))
			}
			c.checkText(text)
			f.notifications += c.deltas
		}
		f.measureExit(b, d, false)
		f.ops++
		b.StartTimer()
	}
	f.report(b, turnDeltas)
	b.ReportMetric(float64(f.notifications)/float64(f.ops)/wsSubscribers, "notifs/client")
}
