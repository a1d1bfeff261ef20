package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// turn starts a turn with text and returns its id once answered.
func turn(ctx context.Context, c *client, thread, text string) (string, error) {
	ch, err := c.startTurn(ctx, thread, text)
	if err != nil {
		return "", err
	}
	rep, err := wait(ctx, ch)
	if err != nil {
		return "", fmt.Errorf("%s: turn/start: %v", c.name, err)
	}
	if rep.err != nil {
		return "", fmt.Errorf("%s: turn/start: %w", c.name, rep.err)
	}
	return turnID(rep.result)
}

// shortTurn runs one short turn and waits for its turn/completed: a
// thread the reference can resume has a turn.
func shortTurn(ctx context.Context, d *daemon, c *client, thread string) error {
	want := c.completed.Load() + 1
	if _, err := turn(ctx, c, thread, prompt("short")); err != nil {
		return err
	}
	return completedOn(ctx, d, []*client{c}, []int64{want})
}

// startThreads starts n threads on c, a few requests at a time, and runs
// each through with f (when not nil).
func startThreads(ctx context.Context, c *client, cwd string, n int, f func(i int, thread string) error) ([]string, error) {
	const parallel = 16
	out := make([]string, n)
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			id, err := c.startThread(ctx, cwd)
			if err == nil && f != nil {
				err = f(i, id)
			}
			mu.Lock()
			defer mu.Unlock()
			out[i] = id
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	return out, first
}

// connections: N idle WebSocket connections, each initialized and
// subscribed to one thread.
func (r *run) connections() {
	n := r.sz.conns
	name := fmt.Sprintf("connections: %s idle, subscribed", thousands(int64(n)))
	r.scenario("conns", name, func(ctx context.Context) error {
		d, c0, err := r.startDaemon(ctx, "conns", clientOpts{})
		if err != nil {
			return err
		}
		defer d.stop()
		defer c0.close()
		thread, err := c0.startThread(ctx, d.cwd)
		if err != nil {
			return err
		}
		if err := shortTurn(ctx, d, c0, thread); err != nil {
			return err
		}
		before, err := d.settledRSS()
		if err != nil {
			return err
		}
		cs, took, err := connectMany(ctx, d, n, "c", thread, clientOpts{})
		if err != nil {
			return err
		}
		defer closeAll(cs)
		r.logf("%d connected in %.1f s", n, took.Seconds())
		after, err := d.settledRSS()
		if err != nil {
			return err
		}
		for _, c := range cs {
			if gone, err := c.ended(); gone {
				return fmt.Errorf("%s's connection ended while idle: %v", c.name, err)
			}
		}
		r.add(name, "conns/per", "memory per idle connection", float64(after-before)/float64(n)/1024, "KB")
		r.add(name, "conns/rss", "daemon RSS, all connected", float64(after)/(1<<20), "MB")
		r.add(name, "conns/accept", "time to accept, initialize and subscribe all (32 at a time)", took.Seconds(), "s")
		r.addNote(name, "conns/nofile", "daemon's open files limit", d.openFilesLimit())
		return nil
	})
}

// fanResult is what the subscribers of one stamped turn measured.
type fanResult struct {
	delay  spread
	stamps int // deltas read, counting each merged one
	notes  int // delta notifications read
	wall   time.Duration
	// CPU time during the turn: the daemon's, and the harness's (its
	// clients reading), which shares the machine.
	daemonCPU, harnessCPU time.Duration
}

// fanTurn runs one stamped turn of n deltas at rate on thread, started
// by driver (a subscriber too, not measured), and waits until the driver
// and every subscriber in subs have its turn/completed.
func fanTurn(ctx context.Context, d *daemon, driver *client, thread string, subs []*client, n, rate int) (fanResult, error) {
	all := append([]*client{driver}, subs...)
	want := make([]int64, len(all))
	for i, c := range all {
		want[i] = c.completed.Load() + 1
	}
	notes := make([]int64, len(subs))
	for i, c := range subs {
		notes[i] = c.deltas.Load()
	}
	defer stamping(subs)()
	cpu0, err := d.cpu()
	if err != nil {
		return fanResult{}, err
	}
	self0 := selfCPU()
	start := time.Now()
	if _, err := turn(ctx, driver, thread, prompt("fanout", "n", n, "rate", rate)); err != nil {
		return fanResult{}, err
	}
	if err := completedOn(ctx, d, all, want); err != nil {
		return fanResult{}, err
	}
	res := fanResult{wall: time.Since(start), harnessCPU: selfCPU() - self0}
	cpu1, err := d.cpu()
	if err != nil {
		return fanResult{}, err
	}
	res.daemonCPU = cpu1 - cpu0
	var delays []int64
	for i, c := range subs {
		lat, stamps := c.takeLatency()
		delays = append(delays, lat...)
		res.stamps += stamps
		res.notes += int(c.deltas.Load() - notes[i])
	}
	res.delay = percentiles(delays)
	return res, nil
}

// stamping makes subs record the delay of each stamped delta from now on,
// the delays of before forgotten; the function it returns stops it.
func stamping(subs []*client) (stop func()) {
	for _, c := range subs {
		c.takeLatency()
		c.stamping.Store(true)
	}
	return func() {
		for _, c := range subs {
			c.stamping.Store(false)
		}
	}
}

// fanout: S subscribers of one thread at R deltas/s, each delta stamped
// by the mock when it writes it; then again with one more subscriber
// that stops reading. The turns are started by one more connection, the
// driver, which also ran the thread's first turn (the reference resumes
// only a thread with a turn): the subscribers all join after it, so they
// must all see the same events.
func (r *run) fanout(idx int, fc fanoutCase) {
	n := max(int(float64(fc.rate)*r.sz.fanoutSeconds+0.5), 1)
	name := fmt.Sprintf("fan-out: %s subscribers, %s deltas/s, %s deltas", thousands(int64(fc.subs)), thousands(int64(fc.rate)), thousands(int64(n)))
	key := fmt.Sprintf("fanout%d/", idx)
	r.scenario(strings.TrimSuffix(key, "/"), name, func(ctx context.Context) error {
		f, err := r.subscribed(ctx, "fanout", fc.subs, "s")
		if err != nil {
			return err
		}
		defer f.close()
		d, c0, thread, subs := f.d, f.c0, f.thread, f.subs
		free, err := fanTurn(ctx, d, c0, thread, subs, n, fc.rate)
		if err != nil {
			return err
		}
		r.logf("without a staller: %+v", free.delay)
		// One more subscriber, which stops reading: its small receive
		// buffer fills at once and the daemon's queue for it grows.
		st, err := subscriber(ctx, d.url, "staller", thread, clientOpts{rcvbuf: 4096})
		if err != nil {
			return err
		}
		defer st.close()
		st.stall()
		stalled, err := fanTurn(ctx, d, c0, thread, subs, n, fc.rate)
		if err != nil {
			return err
		}
		r.logf("with a staller: %+v", stalled.delay)
		r.verify(name, thread, []*client{c0}, 3)
		r.verify(name, thread, subs, 2)
		r.add(name, key+"p50", "p50 delay, model write → client read", free.delay.p50, "ms")
		r.add(name, key+"p99", "p99 delay", free.delay.p99, "ms")
		r.add(name, key+"max", "max delay", free.delay.max, "ms")
		r.add(name, key+"p99-stalled", "p99 delay of the others, one subscriber stalled", stalled.delay.p99, "ms")
		r.add(name, key+"max-stalled", "max delay of the others, one subscriber stalled", stalled.delay.max, "ms")
		r.add(name, key+"coalesced", "deltas that arrived merged (no staller)", float64(free.stamps-free.notes), "")
		r.add(name, key+"wall", "turn/start → the last subscriber's turn/completed", free.wall.Seconds(), "s")
		r.add(name, key+"cpu", "daemon CPU during that turn", free.daemonCPU.Seconds(), "s")
		r.add(name, key+"harness-cpu", "harness CPU during that turn (its clients reading)", free.harnessCPU.Seconds(), "s")
		if !r.t.ref {
			floor, cpu, err := r.relayFloor(ctx, name, fc.subs, n, fc.rate)
			if err != nil {
				return err
			}
			r.add(name, key+"floor-p50", "p50 delay through a relay that does nothing else", floor.p50, "ms")
			r.add(name, key+"floor-p99", "p99 delay through that relay", floor.p99, "ms")
			r.add(name, key+"floor-cpu", "relay CPU during that turn", cpu.Seconds(), "s")
		}
		return nil
	})
}

// relayFloor runs the same turn through the relay (relay.go) to as many
// clients of its own, after a short one, while the daemon, its turns
// done, idles; and checks what they read as it checks the daemon's
// subscribers.
func (r *run) relayFloor(ctx context.Context, name string, subs, n, rate int) (spread, time.Duration, error) {
	p, err := startRelay(r.t.mockURL)
	if err != nil {
		return spread{}, 0, err
	}
	defer p.stop()
	cs, _, err := openMany(subs, func(i int) (*client, error) {
		return dial(ctx, "ws://"+strings.TrimPrefix(p.url, "http://")+"/ws", fmt.Sprintf("r%d", i), clientOpts{})
	})
	if err != nil {
		return spread{}, 0, fmt.Errorf("relay: %v", err)
	}
	defer closeAll(cs)
	// A short turn first, as the daemon had its first: the relay's
	// connection to the mock and its goroutines are warm for the one
	// measured.
	if _, err := p.run(ctx, cs, 10, 1000); err != nil {
		return spread{}, 0, err
	}
	res, err := p.run(ctx, cs, n, rate)
	if err != nil {
		return spread{}, 0, err
	}
	r.verify(name+" (relay)", relayThread, cs, 2)
	return percentiles(res.delays), res.cpu, nil
}

// turnsOneConn: N threads each start a turn at once, pipelined on one
// connection.
func (r *run) turnsOneConn() {
	n, deltas := r.sz.turns, r.sz.turnDeltas
	name := fmt.Sprintf("turns: %d at once on one connection, %d deltas%s each", n, deltas, r.commandLabel())
	r.scenario("turns1", name, func(ctx context.Context) error {
		d, c0, err := r.startDaemon(ctx, "turns1", clientOpts{})
		if err != nil {
			return err
		}
		defer d.stop()
		defer c0.close()
		threads, err := startThreads(ctx, c0, d.cwd, n, nil)
		if err != nil {
			return err
		}
		cpu0, err := d.cpu()
		if err != nil {
			return err
		}
		start := time.Now()
		chans := make([]<-chan reply, n)
		for i, th := range threads {
			if chans[i], err = c0.startTurn(ctx, th, prompt("turn", "n", deltas, "cmd", r.sz.turnCmd)); err != nil {
				return err
			}
		}
		accepted, refused, err := answers(ctx, chans)
		if err != nil {
			return err
		}
		if err := completedOn(ctx, d, []*client{c0}, []int64{int64(len(accepted))}); err != nil {
			return err
		}
		return r.turnFigures(name, "turns1/", d, cpu0, start, threads, accepted, refused, []*client{c0})
	})
}

// turnsManyConns: N connections, a thread each, all start a turn at once.
func (r *run) turnsManyConns() {
	n, deltas := r.sz.turns, r.sz.turnDeltas
	name := fmt.Sprintf("turns: %d at once on %d connections, %d deltas%s each", n, n, deltas, r.commandLabel())
	r.scenario("turnsN", name, func(ctx context.Context) error {
		d, c0, err := r.startDaemon(ctx, "turnsN", clientOpts{})
		if err != nil {
			return err
		}
		defer d.stop()
		c0.close()
		cs, _, err := connectMany(ctx, d, n, "t", "", clientOpts{})
		if err != nil {
			return err
		}
		defer closeAll(cs)
		threads := make([]string, n)
		for i, c := range cs {
			if threads[i], err = c.startThread(ctx, d.cwd); err != nil {
				return err
			}
		}
		cpu0, err := d.cpu()
		if err != nil {
			return err
		}
		// Every connection sends its turn/start at the same moment.
		chans := make([]<-chan reply, n)
		errs := make([]error, n)
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				chans[i], errs[i] = c.startTurn(ctx, threads[i], prompt("turn", "n", deltas, "cmd", r.sz.turnCmd))
			}()
		}
		start := time.Now()
		close(gate)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		accepted, refused, err := answers(ctx, chans)
		if err != nil {
			return err
		}
		subs := make([]*client, len(accepted))
		want := make([]int64, len(accepted))
		for i, a := range accepted {
			subs[i], want[i] = cs[a], 1
		}
		if err := completedOn(ctx, d, subs, want); err != nil {
			return err
		}
		return r.turnFigures(name, "turnsN/", d, cpu0, start, threads, accepted, refused, cs)
	})
}

func (r *run) commandLabel() string {
	if r.sz.turnCmd == 1 {
		return " and a command"
	}
	return ""
}

// answers waits for every turn/start answer: the indexes accepted, and
// how many were refused with -32001; any other error fails.
func answers(ctx context.Context, chans []<-chan reply) (accepted []int, refused int, err error) {
	for i, ch := range chans {
		rep, err := wait(ctx, ch)
		if err != nil {
			return nil, 0, fmt.Errorf("turn/start %d: %v", i+1, err)
		}
		switch {
		case rep.err == nil:
			accepted = append(accepted, i)
		case rep.err.Code == codeOverloaded:
			refused++
		default:
			return nil, 0, fmt.Errorf("turn/start %d: %v", i+1, rep.err)
		}
	}
	return accepted, refused, nil
}

// turnFigures checks the turns of a turns scenario and records its
// figures. subs[i] is the connection of threads[i] (one for all, or one
// each).
func (r *run) turnFigures(name, key string, d *daemon, cpu0 time.Duration, start time.Time, threads []string, accepted []int, refused int, subs []*client) error {
	wall := time.Since(start)
	cpu1, err := d.cpu()
	if err != nil {
		return err
	}
	commands := 0
	for _, i := range accepted {
		c := subs[min(i, len(subs)-1)]
		r.verify(name, threads[i], []*client{c}, 2)
		c.withCheck(func(ch *Checker, _ error) {
			n, _ := ch.Count(threads[i], "commandExecution")
			commands += n
		})
	}
	deltas := len(accepted) * r.sz.turnDeltas
	r.add(name, key+"wall", "wall time, first turn/start → last turn/completed", wall.Seconds(), "s")
	r.add(name, key+"refused", "turn/starts refused (-32001)", float64(refused), "")
	r.add(name, key+"commands", "commands run", float64(commands), "")
	if deltas > 0 {
		r.add(name, key+"cpu", "daemon CPU per delta (all work of the turns)", float64((cpu1-cpu0).Microseconds())/float64(deltas), "µs")
	}
	return nil
}

// longTurn: one turn of D deltas in M items, after a short turn on
// another thread; RSS before it, at its middle, at its end and settled
// after it.
func (r *run) longTurn() {
	items, deltas := r.sz.longItems, r.sz.longDeltas
	name := fmt.Sprintf("long turn: %s deltas in %s items", thousands(int64(deltas)), thousands(int64(items)))
	if r.sz.longRate > 0 {
		name += fmt.Sprintf(", paced at %s a second", thousands(int64(r.sz.longRate)))
	}
	r.scenario("long", name, func(ctx context.Context) error {
		d, c0, err := r.startDaemon(ctx, "long", clientOpts{})
		if err != nil {
			return err
		}
		defer d.stop()
		defer c0.close()
		// A short turn first, on a thread of its own: the first turn of
		// a daemon's life pages in code and sizes the runtime's pools,
		// which is not growth with a turn's length.
		warm, err := c0.startThread(ctx, d.cwd)
		if err != nil {
			return err
		}
		if err := shortTurn(ctx, d, c0, warm); err != nil {
			return err
		}
		items0, completed0 := c0.itemsDone.Load(), c0.completed.Load()
		thread, err := c0.startThread(ctx, d.cwd)
		if err != nil {
			return err
		}
		mem0, err := d.minMemory(time.Second, time.Second)
		if err != nil {
			return err
		}
		if err := d.saveHeap(ctx, "long-before"); err != nil {
			return err
		}
		start := time.Now()
		if _, err := turn(ctx, c0, thread, prompt("long", "items", items, "n", deltas, "rate", r.sz.longRate)); err != nil {
			return err
		}
		// Early in the turn: a twentieth of the model's items done. The
		// step from the idle daemon to a streaming one is the runtime's
		// heap floor and the turn's buffers, whatever the turn's length;
		// from here on, what grows is what the turn keeps.
		if err := waitFor(ctx, d, "a twentieth of the items", func() (bool, error) {
			return c0.itemsDone.Load() >= items0+int64(1+items/20), nil
		}); err != nil {
			return err
		}
		memEarly, err := d.memory()
		if err != nil {
			return err
		}
		// The middle: half the model's items done (the user's message is
		// one more item).
		if err := waitFor(ctx, d, "half of the items", func() (bool, error) {
			return c0.itemsDone.Load() >= items0+int64(1+items/2), nil
		}); err != nil {
			return err
		}
		memMid, err := d.memory()
		if err != nil {
			return err
		}
		if err := d.saveHeap(ctx, "long-middle"); err != nil {
			return err
		}
		if err := completedOn(ctx, d, []*client{c0}, []int64{completed0 + 1}); err != nil {
			return err
		}
		wall := time.Since(start)
		memEnd, err := d.memory()
		if err != nil {
			return err
		}
		if err := d.saveHeap(ctx, "long-end"); err != nil {
			return err
		}
		peak, err := d.peakRSS()
		if err != nil {
			return err
		}
		// What the daemon keeps once the turn's garbage is collected and
		// its freed pages returned (agentd does both a second after its
		// last turn ends): the lowest reading over the 3 s after the turn.
		memSettled, err := d.minMemory(3*time.Second, 250*time.Millisecond)
		if err != nil {
			return err
		}
		if err := d.saveHeap(ctx, "long-settled"); err != nil {
			return err
		}
		r.verify(name, thread, []*client{c0}, items)
		mb := func(b int64) float64 { return float64(b) / (1 << 20) }
		r.add(name, "long/rss0", "RSS before the turn", mb(mem0.rss), "MB")
		r.add(name, "long/rssE", "RSS early in the turn (a twentieth of the items)", mb(memEarly.rss), "MB")
		r.add(name, "long/rss1", "RSS at the middle", mb(memMid.rss), "MB")
		r.add(name, "long/rss2", "RSS at the end", mb(memEnd.rss), "MB")
		r.add(name, "long/peak", "peak RSS", mb(peak), "MB")
		r.add(name, "long/rss3", "RSS after the turn, settled (lowest in 3 s)", mb(memSettled.rss), "MB")
		// The binary's resident pages are most of a small daemon's RSS,
		// and how many are resident varies with the file system and the
		// page cache; the anonymous part is the daemon's own memory.
		r.add(name, "long/anon0", "anonymous RSS before the turn", mb(mem0.anon), "MB")
		r.add(name, "long/anonE", "anonymous RSS early in the turn", mb(memEarly.anon), "MB")
		r.add(name, "long/anon1", "anonymous RSS at the middle", mb(memMid.anon), "MB")
		r.add(name, "long/anon2", "anonymous RSS at the end", mb(memEnd.anon), "MB")
		r.add(name, "long/anon3", "anonymous RSS after the turn, settled", mb(memSettled.anon), "MB")
		r.add(name, "long/wall", "turn time", wall.Seconds(), "s")
		r.add(name, "long/notes", "delta notifications read (merged ones count once)", float64(c0.deltas.Load()), "")
		return nil
	})
}

// loadedThreads: L threads started and run through one short turn each,
// then idle; the daemon's memory per loaded thread.
func (r *run) loadedThreads() {
	n := r.sz.loaded
	name := fmt.Sprintf("loaded threads: %s, idle after one turn each", thousands(int64(n)))
	r.scenario("loaded", name, func(ctx context.Context) error {
		d, c0, err := r.startDaemon(ctx, "loaded", clientOpts{})
		if err != nil {
			return err
		}
		defer d.stop()
		defer c0.close()
		rss0, err := d.settledRSS()
		if err != nil {
			return err
		}
		threads, err := startThreads(ctx, c0, d.cwd, n, func(_ int, thread string) error {
			_, err := turn(ctx, c0, thread, prompt("short"))
			return err
		})
		if err != nil {
			return err
		}
		if err := completedOn(ctx, d, []*client{c0}, []int64{int64(n)}); err != nil {
			return err
		}
		rss1, err := d.settledRSS()
		if err != nil {
			return err
		}
		if err := d.saveHeap(ctx, "loaded"); err != nil {
			return err
		}
		for _, th := range threads {
			r.verify(name, th, []*client{c0}, 1)
		}
		r.add(name, "loaded/per", "memory per loaded idle thread", float64(rss1-rss0)/float64(n)/1024, "KB")
		r.add(name, "loaded/rss", "daemon RSS", float64(rss1)/(1<<20), "MB")
		return nil
	})
}

// badNetwork: S subscribers of a thread and one more behind a slow,
// distant link; the slow one must get every authoritative event and the
// whole text (coalesced), and the others must not slow down.
// subscription is a daemon whose thread had one short turn on its
// driver connection c0, and subscribers of that thread.
type subscription struct {
	d      *daemon
	c0     *client
	thread string
	subs   []*client
}

// subscribed starts a daemon (named name), a thread with one short turn,
// and n subscribers of it (named prefix0, prefix1, …).
func (r *run) subscribed(ctx context.Context, name string, n int, prefix string) (*subscription, error) {
	d, c0, err := r.startDaemon(ctx, name, clientOpts{})
	if err != nil {
		return nil, err
	}
	f := &subscription{d: d, c0: c0}
	if f.thread, err = c0.startThread(ctx, d.cwd); err == nil {
		err = shortTurn(ctx, d, c0, f.thread)
	}
	if err == nil {
		f.subs, _, err = connectMany(ctx, d, n, prefix, f.thread, clientOpts{})
	}
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func (f *subscription) close() {
	closeAll(f.subs)
	f.c0.close()
	f.d.stop()
}

func (r *run) badNetwork() {
	sz := r.sz
	n := max(int(float64(sz.badRate)*sz.badSeconds+0.5), 1)
	name := fmt.Sprintf("bad network: 1 client at %s B/s and %v latency, %d others, %s deltas/s, %s deltas",
		thousands(int64(sz.badBytesPerSec)), sz.badLatency, sz.badSubs, thousands(int64(sz.badRate)), thousands(int64(n)))
	r.scenario("bad", name, func(ctx context.Context) error {
		f, err := r.subscribed(ctx, "badnet", sz.badSubs, "b")
		if err != nil {
			return err
		}
		defer f.close()
		d, c0, thread, subs := f.d, f.c0, f.thread, f.subs
		free, err := fanTurn(ctx, d, c0, thread, subs, n, sz.badRate)
		if err != nil {
			return err
		}
		p, err := newSlowProxy(strings.TrimPrefix(d.url, "ws://"), sz.badBytesPerSec, sz.badLatency)
		if err != nil {
			return err
		}
		defer p.close()
		slow, err := subscriber(ctx, "ws://"+p.addr(), "slow", thread, clientOpts{})
		if err != nil {
			return err
		}
		defer slow.close()
		slow.stamping.Store(true)
		start := time.Now()
		withSlow, err := fanTurn(ctx, d, c0, thread, subs, n, sz.badRate)
		if err != nil {
			return err
		}
		if err := completedOn(ctx, d, []*client{slow}, []int64{1}); err != nil {
			return err
		}
		slowWall := time.Since(start)
		lat, stamps := slow.takeLatency()
		slowDelay := percentiles(lat)
		r.verify(name, thread, []*client{c0}, 3)
		r.verify(name, thread, subs, 2)
		r.verify(name, thread, []*client{slow}, 1)
		r.sameTail(name, thread, subs[0], slow)
		if stamps != n {
			r.fail("%s: the slow client read %d stamps, the model sent %d", name, stamps, n)
		}
		r.add(name, "bad/p99", "p99 delay of the others, no slow client", free.delay.p99, "ms")
		r.add(name, "bad/p99-slow", "p99 delay of the others, with the slow client", withSlow.delay.p99, "ms")
		r.add(name, "bad/notes", "delta notifications the slow client read", float64(slow.deltas.Load()), "")
		r.add(name, "bad/sent", "deltas the model sent", float64(n), "")
		r.add(name, "bad/slow-max", "the slow client's max delay", slowDelay.max/1000, "s")
		r.add(name, "bad/slow-wall", "the slow client's turn time", slowWall.Seconds(), "s")
		return nil
	})
}

// sameTail checks that late, a subscriber that joined after the earlier
// turns, saw the same authoritative events as full for the turns it saw:
// late's sequence must be the end of full's. (Its checker has made sure
// that it starts with a turn/started, which full has once: the two
// sequences cannot line up wrongly.)
func (r *run) sameTail(name, thread string, full, late *client) {
	full.checkMu.Lock()
	defer full.checkMu.Unlock()
	late.checkMu.Lock()
	defer late.checkMu.Unlock()
	a, b := full.check.Log(thread), late.check.Log(thread)
	if len(b) > len(a) {
		r.fail("%s: %s saw %d authoritative events, more than %s's %d", name, late.name, len(b), full.name, len(a))
		return
	}
	for i, e := range b {
		if want := a[len(a)-len(b)+i]; e != want {
			r.fail("%s: %s saw %q where %s saw %q", name, late.name, e, full.name, want)
			return
		}
	}
}
