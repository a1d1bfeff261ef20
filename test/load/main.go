// Command agentd-load is agentd's load harness (issue 17): it starts
// agentd, and the reference when given, and the mock model as real
// processes, drives real WebSocket connections through the scenarios
// below, and prints one table of figures.
//
//	connections   N idle connections, each initialized and subscribed
//	fan-out       S subscribers of one thread at R deltas/s; one stalls;
//	              then the same turn through a relay that does nothing
//	              else (relay.go), for the machine's floor
//	turns         256 turns at once, on one connection and on 256
//	history       K stored threads: list, read, resume, start
//	long turn     one turn of D deltas in M items: RSS over time
//	loaded        memory of L loaded, idle threads
//	bad network   one client at 10 KB/s and 200 ms, the others unslowed
//	soak          C cycles of start, turn, read, fork, resume: RSS, open
//	              files and OS threads over them (agentd only)
//
// It never fails on a number. It fails (exit 1) when agentd loses,
// duplicates or reorders an authoritative event (turn/started,
// item/started, item/completed, turn/completed) or when a text does not
// arrive whole (an item's agentMessage deltas, joined, differ from its
// item/completed text), for any subscriber; and on harness errors (a
// daemon that dies, a request that fails). Run it with `make load`;
// `agentd-load -h` lists the sizes.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "mock" {
		os.Exit(runMock())
	}
	if len(os.Args) > 2 && os.Args[1] == "relay" {
		os.Exit(runRelay(os.Args[2]))
	}
	os.Exit(runHarness(os.Args[1:]))
}

// fanoutCase is one fan-out configuration: subscribers at a delta rate.
type fanoutCase struct{ subs, rate int }

func (f fanoutCase) String() string { return fmt.Sprintf("%d@%d", f.subs, f.rate) }

// sizes are every scenario's sizes; flags set them.
type sizes struct {
	conns         int
	fanout        []fanoutCase
	fanoutSeconds float64
	turns         int
	turnDeltas    int
	turnCmd       int // 1: each turn runs a command
	threads       int
	historyItems  int
	// historyHome keeps agentd's history homes (one per size) between
	// runs; "" writes a new one each run.
	historyHome    string
	longDeltas     int
	longItems      int
	longRate       int
	loaded         int
	soak           int
	badSubs        int
	badRate        int
	badSeconds     float64
	badBytesPerSec int
	badLatency     time.Duration
}

// full are the sizes (-full).
var full = sizes{conns: 10_000, fanout: []fanoutCase{{1000, 100}, {1000, 1000}, {100, 200}}, turns: 256,
	threads: 100_000, longDeltas: 200_000, longItems: 2_000, loaded: 1_000, soak: 5_000}

// scaled returns the sizes with every count multiplied by f (rates,
// durations and per-turn sizes kept), for the reference, which is slower.
func (s sizes) scaled(f float64) sizes {
	if f == 1 {
		return s
	}
	n := func(v, least int) int { return max(int(float64(v)*f+0.5), least) }
	out := s
	out.conns = n(s.conns, 10)
	out.fanout = nil
	for _, c := range s.fanout {
		out.fanout = append(out.fanout, fanoutCase{n(c.subs, 2), c.rate})
	}
	out.turns = n(s.turns, 2)
	out.threads = n(s.threads, 10)
	out.longDeltas = n(s.longDeltas, 100)
	out.longItems = n(s.longItems, 1)
	out.loaded = n(s.loaded, 10)
	out.soak = n(s.soak, 10)
	out.badSubs = n(s.badSubs, 2)
	return out
}

var allScenarios = []string{"conns", "fanout", "turns", "history", "long", "loaded", "badnet", "soak"}

func runHarness(args []string) int {
	fs := flag.NewFlagSet("agentd-load", flag.ContinueOnError)
	var sz sizes
	agentdBin := fs.String("agentd", "bin/agentd", "the agentd binary")
	refBin := fs.String("reference", "", "the reference binary (codex); when set, the scenarios run against it too and the table has ratios")
	refScale := fs.Float64("ref-scale", 0.25, "multiply every count by this for the reference, which is slower (agentd runs again at those sizes, for the ratios; 1: the same sizes)")
	only := fs.String("scenarios", strings.Join(allScenarios, ","), "the scenarios to run, from "+strings.Join(allScenarios, ","))
	fullSizes := fs.Bool("full", false, "the issue's sizes: 10,000 connections, fan-out 1000@100,1000@1000,100@200, 100,000 threads, a 200,000-delta turn")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound on each scenario")
	keep := fs.Bool("keep", false, "keep the homes, workspaces and logs")
	verbose := fs.Bool("v", false, "progress on stderr")
	cpuProfile := fs.String("cpuprofile", "", "write the harness's own CPU profile here (is the client the bottleneck?)")
	heapProfiles := fs.String("heapprofile", "", "write agentd's heap profiles into this directory (loaded: when idle; long: before, at the middle, at the end and settled); agentd runs with --debug-pprof")
	fs.IntVar(&sz.conns, "conns", 2000, "connections: idle WebSocket connections")
	fanout := fs.String("fanout", "1000@100,100@200", "fan-out: subscribers@deltas-per-second, comma-separated")
	fs.Float64Var(&sz.fanoutSeconds, "fanout-seconds", 3, "fan-out: seconds of deltas per turn")
	fs.IntVar(&sz.turns, "turns", 256, "turns: turns started at once")
	fs.IntVar(&sz.turnDeltas, "turn-deltas", 200, "turns: deltas per turn")
	turnCommand := fs.Bool("turn-command", true, "turns: each turn runs a short command (exec_command)")
	fs.IntVar(&sz.threads, "threads", 10_000, "history: stored threads")
	fs.IntVar(&sz.historyItems, "history-items", 5_000, "history: items of the thread read and resumed")
	fs.StringVar(&sz.historyHome, "history-home", "", "history: keep agentd's stored threads under this directory (one home per size) and use them again in later runs, instead of writing them each run (its index cache is removed before the first start)")
	fs.IntVar(&sz.longDeltas, "long-deltas", 20_000, "long turn: deltas")
	fs.IntVar(&sz.longItems, "long-items", 200, "long turn: items")
	fs.IntVar(&sz.longRate, "long-rate", 0, "long turn: deltas a second (the mock waits 1/rate between them, at least its timer's resolution); 0: unpaced, as fast as the daemon reads")
	fs.IntVar(&sz.loaded, "loaded", 1_000, "loaded: idle loaded threads")
	fs.IntVar(&sz.soak, "soak", 500, "soak: cycles of start, turn, read, fork and resume (agentd only)")
	fs.IntVar(&sz.badSubs, "bad-subs", 50, "bad network: subscribers besides the slow one")
	fs.IntVar(&sz.badRate, "bad-rate", 1000, "bad network: deltas per second")
	fs.Float64Var(&sz.badSeconds, "bad-seconds", 1, "bad network: seconds of deltas per turn")
	fs.IntVar(&sz.badBytesPerSec, "bad-bandwidth", 10*1024, "bad network: the slow client's bytes per second")
	fs.DurationVar(&sz.badLatency, "bad-latency", 200*time.Millisecond, "bad network: the slow client's latency")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *turnCommand {
		sz.turnCmd = 1
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	if sz.fanout, err = parseFanout(*fanout); err != nil {
		fmt.Fprintf(os.Stderr, "agentd-load: -fanout: %v\n", err)
		return 2
	}
	if *fullSizes {
		sz = applyFull(sz, set)
	}
	scen := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if !slices.Contains(allScenarios, s) {
			fmt.Fprintf(os.Stderr, "agentd-load: unknown scenario %q (known: %s)\n", s, strings.Join(allScenarios, ","))
			return 2
		}
		scen[s] = true
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentd-load: -cpuprofile: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	h, err := newHarness(*agentdBin, *refBin, *keep)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentd-load: %v\n", err)
		return 2
	}
	defer h.close()
	h.agentd.heapDir = *heapProfiles
	if err := warmUp(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "agentd-load: warming the client up: %v\n", err)
		return 2
	}
	fails := &failures{}
	date := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	agentd := h.runTarget(h.agentd, sz, scen, fails, *timeout, *verbose)
	agentdAtRef, ref := agentd, (*results)(nil)
	if h.ref != nil {
		rs := sz.scaled(*refScale)
		if *refScale != 1 {
			agentdAtRef = h.runTarget(h.agentd, rs, scen, fails, *timeout, *verbose)
		}
		ref = h.runTarget(h.ref, rs, scen, fails, *timeout, *verbose)
	}
	fmt.Printf("agentd-load %s, %d CPUs, open files limit %d (daemons inherit it)\n\n", date, runtime.NumCPU(), h.nofile)
	printTable(os.Stdout, agentd, agentdAtRef, ref)
	if len(fails.lines) > 0 {
		fmt.Fprintln(os.Stderr)
		for _, l := range fails.lines {
			fmt.Fprintln(os.Stderr, "FAIL: "+l)
		}
	}
	if fails.fatal {
		fmt.Fprintln(os.Stderr, "agentd-load: agentd lost, duplicated or reordered events, or a text did not arrive whole, or a scenario failed (above)")
		return 1
	}
	return 0
}

// applyFull sets the sizes for every size flag not given.
func applyFull(sz sizes, set map[string]bool) sizes {
	if !set["conns"] {
		sz.conns = full.conns
	}
	if !set["fanout"] {
		sz.fanout = full.fanout
	}
	if !set["threads"] {
		sz.threads = full.threads
	}
	if !set["long-deltas"] {
		sz.longDeltas = full.longDeltas
	}
	if !set["long-items"] {
		sz.longItems = full.longItems
	}
	if !set["soak"] {
		sz.soak = full.soak
	}
	return sz
}

func parseFanout(s string) ([]fanoutCase, error) {
	var out []fanoutCase
	for _, part := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), "@")
		subs, err1 := strconv.Atoi(a)
		rate, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || subs < 1 || rate < 1 {
			return nil, fmt.Errorf("%q is not subscribers@rate", part)
		}
		out = append(out, fanoutCase{subs, rate})
	}
	return out, nil
}

// harness holds what all runs share: the mock model process and the
// targets.
type harness struct {
	agentd, ref *target
	mock        *child
	dirs        []string
	keep        bool
	nofile      uint64
}

func newHarness(agentdBin, refBin string, keep bool) (*harness, error) {
	h := &harness{keep: keep}
	// Every connection is a descriptor here and one in the daemon.
	lim, err := raiseOpenFiles(1 << 16)
	if err != nil {
		return nil, fmt.Errorf("raising the open files limit: %v", err)
	}
	h.nofile = lim
	if _, err := os.Stat(agentdBin); err != nil {
		return nil, fmt.Errorf("the agentd binary: %v (run make build, or pass -agentd)", err)
	}
	url, err := h.startMock()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "agentd-load-")
	if err != nil {
		h.close()
		return nil, err
	}
	h.dirs = append(h.dirs, root)
	abs, _ := filepath.Abs(agentdBin)
	h.agentd = &target{name: "agentd", bin: abs, root: root, mockURL: url}
	if refBin != "" {
		if _, err := os.Stat(refBin); err != nil {
			h.close()
			return nil, fmt.Errorf("the reference binary: %v", err)
		}
		// The reference wants its home outside /tmp.
		home, _ := os.UserHomeDir()
		refRoot, err := os.MkdirTemp(home, "agentd-load-ref-")
		if err != nil {
			h.close()
			return nil, err
		}
		h.dirs = append(h.dirs, refRoot)
		h.ref = &target{name: "reference", bin: refBin, ref: true, root: refRoot, mockURL: url}
	}
	return h, nil
}

// startMock starts this program as the mock model and reads its URL.
func (h *harness) startMock() (string, error) {
	mock, err := startChild("the mock model", "mock")
	if err != nil {
		return "", err
	}
	h.mock = mock
	return mock.url, nil
}

// child is this program run as a helper process (the mock model, the
// relay) that serves on a loopback port until its stdin closes.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	url string // its base URL, the first line it printed
}

// startChild starts this program with args and reads its URL.
func startChild(what string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %v", what, err)
	}
	c := &child{cmd: cmd, in: in}
	line, _ := bufio.NewReader(out).ReadString('\n')
	c.url = strings.TrimSpace(line)
	if !strings.HasPrefix(c.url, "http://") {
		c.stop()
		return nil, fmt.Errorf("%s did not say its URL (said %q)", what, line)
	}
	return c, nil
}

// stop closes the child's stdin, which ends it, and waits for it (killing
// it after 5 s).
func (c *child) stop() {
	_ = c.in.Close()
	done := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

func (h *harness) close() {
	if h.mock != nil {
		h.mock.stop()
	}
	for _, d := range h.dirs {
		if h.keep {
			fmt.Fprintf(os.Stderr, "agentd-load: kept %s\n", d)
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// runTarget runs the chosen scenarios against one target.
func (h *harness) runTarget(t *target, sz sizes, scen map[string]bool, fails *failures, timeout time.Duration, verbose bool) *results {
	r := &run{t: t, sz: sz, res: &results{target: t.name}, fails: fails, timeout: timeout, verbose: verbose}
	if scen["conns"] {
		r.connections()
	}
	if scen["fanout"] {
		for i, c := range sz.fanout {
			r.fanout(i, c)
		}
	}
	if scen["turns"] {
		r.turnsOneConn()
		r.turnsManyConns()
	}
	if scen["history"] {
		r.history()
	}
	if scen["long"] {
		r.longTurn()
	}
	if scen["loaded"] {
		r.loadedThreads()
	}
	if scen["badnet"] {
		r.badNetwork()
	}
	if scen["soak"] {
		r.soak()
	}
	return r.res
}
