package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
)

// run is one target's pass through the scenarios at one set of sizes.
type run struct {
	t     *target
	sz    sizes
	res   *results
	fails *failures
	// timeout bounds each scenario.
	timeout time.Duration
	verbose bool
	// cur is the daemon of the scenario running, for the log lines an
	// error message quotes.
	cur *daemon
}

// failures collects correctness violations (lost, duplicated or reordered
// events, texts not whole) and harness errors; any of agentd's fails the
// run.
type failures struct {
	mu    sync.Mutex
	lines []string
	fatal bool
}

func (f *failures) add(fatal bool, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
	f.fatal = f.fatal || fatal
}

func (r *run) logf(format string, args ...any) {
	if r.verbose {
		fmt.Fprintf(os.Stderr, "[%s %s] %s\n", time.Now().Format("15:04:05.000"), r.t.name, fmt.Sprintf(format, args...))
	}
}

// fail records a violation. Only agentd's fail the run: the reference's
// are reported.
func (r *run) fail(format string, args ...any) {
	r.fails.add(!r.t.ref, r.t.name+": "+format, args...)
}

// add records a figure.
func (r *run) add(scenario, key, figure string, value float64, unit string) {
	r.res.rows = append(r.res.rows, row{scenario: scenario, key: key, figure: figure, value: value, unit: unit})
}

// addNote records a figure that is text.
func (r *run) addNote(scenario, key, figure, note string) {
	r.res.rows = append(r.res.rows, row{scenario: scenario, key: key, figure: figure, note: note, nan: true, value: math.NaN()})
}

// scenario runs one scenario with its timeout; an error (the daemon died,
// a request failed, a wait timed out) is recorded against the target. slot
// is the scenario's part of its figures' keys ("conns" of "conns/per").
func (r *run) scenario(slot, name string, f func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	r.logf("%s: start", name)
	start := time.Now()
	r.cur = nil
	if err := f(ctx); err != nil {
		if hint := r.cur.logHint(); hint != "" {
			err = fmt.Errorf("%v; the daemon logged: %s", err, hint)
		}
		r.fails.add(!r.t.ref, "%s: %s: %v", r.t.name, name, err)
		r.addNote(name, slot+"/error", "error", "failed (below)")
	}
	r.logf("%s: done in %.1f s", name, time.Since(start).Seconds())
}

// startDaemon starts the target on a new home and connects a first client.
func (r *run) startDaemon(ctx context.Context, name string, opts clientOpts) (*daemon, *client, error) {
	home, _, err := r.t.newHome(name)
	if err != nil {
		return nil, nil, err
	}
	return r.startOn(ctx, home, opts)
}

// startOn starts the target on an existing home and connects a first
// client; on error nothing is left running.
func (r *run) startOn(ctx context.Context, home string, opts clientOpts) (*daemon, *client, error) {
	d, err := r.t.start(home)
	if err != nil {
		return nil, nil, err
	}
	r.cur = d
	c, _, err := d.dialReady(ctx, "c0", opts)
	if err != nil {
		d.stop()
		return nil, nil, err
	}
	return d, c, nil
}

// server is a process the harness's clients talk to (the daemon, or the
// relay): alive fails once it has exited.
type server interface{ alive() error }

// waitFor polls pred every 5 ms until it holds; it fails when pred
// fails, ctx ends or the server exits. what names the wait in the error.
func waitFor(ctx context.Context, d server, what string, pred func() (bool, error)) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := pred()
		if err != nil {
			return fmt.Errorf("waiting for %s: %v", what, err)
		}
		if ok {
			return nil
		}
		if err := d.alive(); err != nil {
			return fmt.Errorf("waiting for %s: %v", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// completedOn waits until each client has counted at least want[i]
// turn/completed notifications; a client whose connection ended fails it.
func completedOn(ctx context.Context, d server, cs []*client, want []int64) error {
	return waitFor(ctx, d, "turn/completed on every subscriber", func() (bool, error) {
		for i, c := range cs {
			if c.completed.Load() >= want[i] {
				continue
			}
			if gone, err := c.ended(); gone {
				return false, fmt.Errorf("the server closed %s's connection (%v) before its turn/completed: every later event is lost to it", c.name, err)
			}
			return false, nil
		}
		return true, nil
	})
}

// subscriber dials url, initializes, and subscribes to thread
// (thread/resume) unless it is "".
func subscriber(ctx context.Context, url, name, thread string, opts clientOpts) (*client, error) {
	c, err := dial(ctx, url, name, opts)
	if err != nil {
		return nil, err
	}
	if err = c.initialize(ctx); err == nil && thread != "" {
		err = c.resume(ctx, thread)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// connectMany opens n clients with parallel dialers, each initialized and
// (when thread is set) subscribed to thread with thread/resume. It returns
// them and the time it took.
func connectMany(ctx context.Context, d *daemon, n int, prefix, thread string, opts clientOpts) ([]*client, time.Duration, error) {
	return openMany(n, func(i int) (*client, error) {
		return subscriber(ctx, d.url, fmt.Sprintf("%s%d", prefix, i), thread, opts)
	})
}

// openMany opens n clients with open, from parallel dialers.
func openMany(n int, open func(i int) (*client, error)) ([]*client, time.Duration, error) {
	const parallel = 32
	out := make([]*client, n)
	errs := make(chan error, parallel)
	next := make(chan int)
	start := time.Now()
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := open(i)
				out[i] = c
				if err != nil {
					select {
					case errs <- fmt.Errorf("connection %d of %d: %v", i+1, n, err):
					default:
					}
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			errs <- err
			break feed
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		closeAll(out)
		return nil, 0, err
	default:
	}
	return out, elapsed, nil
}

func closeAll(cs []*client) {
	for _, c := range cs {
		if c != nil {
			c.close()
		}
	}
}

// verify checks what subscribers saw of thread once their last event has
// arrived: each one's own sequence (Checker), the same authoritative
// sequence for all, no malformed message, and agentMessages completed
// items (when not negative).
func (r *run) verify(scenario, thread string, subs []*client, agentMessages int) {
	if len(subs) == 0 {
		return
	}
	// The first subscriber's log is the one the others must match: its
	// reader is held off until the comparison is over.
	first := subs[0]
	first.checkMu.Lock()
	defer first.checkMu.Unlock()
	for i, c := range subs {
		if i > 0 {
			c.checkMu.Lock()
		}
		r.verifyOne(scenario, thread, c, agentMessages)
		if i > 0 {
			if err := SameLog(first.check, c.check, thread); err != nil {
				r.fail("%s: %v", scenario, err)
			}
			c.checkMu.Unlock()
		}
	}
}

// verifyOne checks one subscriber; the caller holds its checkMu.
func (r *run) verifyOne(scenario, thread string, c *client, agentMessages int) {
	ch := c.check
	ch.Finish()
	for _, e := range ch.Errors() {
		r.fail("%s: %s", scenario, e)
	}
	ch.errs, ch.dropped = nil, 0 // reported once
	if c.bad != nil {
		r.fail("%s: %v", scenario, c.bad)
		c.bad = nil
	}
	if agentMessages >= 0 {
		if got, _ := ch.Count(thread, "agentMessage"); got != agentMessages {
			r.fail("%s: %s: thread %s: %d agentMessage items completed, want %d (lost)", scenario, c.name, thread, got, agentMessages)
		}
	}
}
