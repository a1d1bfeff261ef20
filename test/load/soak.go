package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// soakUnloadConfig makes the soak's threads unload a second after their
// last subscriber leaves, so that what stays is what leaks, not threads
// waiting for the reference's 60 s.
const soakUnloadConfig = "\n[server]\nthread_unload_delay_secs = 1\n"

// soak: C cycles, one after the other, of what a client does all day: a
// thread started, a short turn, the thread read with its turns, and
// unsubscribed; every fifth cycle also a turn that runs a command and a
// fork of the thread (unsubscribed); every seventh a resume of a thread
// fifty cycles older, a page of its turns, and unsubscribed. The
// daemon's RSS, open files and OS threads after a tenth of the cycles,
// at the end, and settled after the threads unloaded: a daemon that
// keeps something per thread, turn, command, fork or resume grows with
// C. agentd only (the reference's unload delay is not configured here).
func (r *run) soak() {
	n := r.sz.soak
	name := fmt.Sprintf("soak: %s cycles of start, turn, read, fork, resume", thousands(int64(n)))
	if r.t.ref {
		return
	}
	r.scenario("soak", name, func(ctx context.Context) error {
		home, _, err := r.t.newHome("soak")
		if err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(home, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(soakUnloadConfig)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		d, c0, err := r.startOn(ctx, home, clientOpts{})
		if err != nil {
			return err
		}
		defer d.stop()
		defer c0.close()
		var early, end soakReading
		threads := make([]string, n)
		agentMessages := make(map[string]int)
		start := time.Now()
		for i := range n {
			thread, err := c0.startThread(ctx, d.cwd)
			if err != nil {
				return err
			}
			threads[i] = thread
			if err := shortTurn(ctx, d, c0, thread); err != nil {
				return err
			}
			agentMessages[thread]++
			if _, err := c0.call(ctx, "thread/read", map[string]any{"threadId": thread, "includeTurns": true}); err != nil {
				return err
			}
			if i%5 == 0 {
				want := c0.completed.Load() + 1
				if _, err := turn(ctx, c0, thread, prompt("turn", "n", 10, "cmd", 1)); err != nil {
					return err
				}
				if err := completedOn(ctx, d, []*client{c0}, []int64{want}); err != nil {
					return err
				}
				agentMessages[thread] += 2 // one before the command, one after
				res, err := c0.call(ctx, "thread/fork", map[string]any{"threadId": thread})
				if err != nil {
					return err
				}
				fork, err := threadID(res)
				if err != nil {
					return err
				}
				if err := unsubscribe(ctx, c0, fork); err != nil {
					return err
				}
			}
			if err := unsubscribe(ctx, c0, thread); err != nil {
				return err
			}
			if i%7 == 0 && i >= 50 {
				old := threads[i-50]
				if err := c0.resume(ctx, old); err != nil {
					return err
				}
				if _, err := c0.call(ctx, "thread/turns/list", map[string]any{"threadId": old, "limit": 5}); err != nil {
					return err
				}
				if err := unsubscribe(ctx, c0, old); err != nil {
					return err
				}
			}
			if i+1 == max(n/10, 1) {
				if early, err = readSoak(d); err != nil {
					return err
				}
			}
		}
		wall := time.Since(start)
		if end, err = readSoak(d); err != nil {
			return err
		}
		// Settled: the threads unloaded (a second after their last
		// subscriber), the daemon idle.
		if err := waitFor(ctx, d, "every thread unloaded", func() (bool, error) {
			res, err := c0.call(ctx, "thread/loaded/list", map[string]any{})
			return err == nil && strings.Contains(string(res), `"data":[]`), err
		}); err != nil {
			return err
		}
		mem, err := d.minMemory(3*time.Second, 250*time.Millisecond)
		if err != nil {
			return err
		}
		settled, err := readSoak(d)
		if err != nil {
			return err
		}
		for thread, want := range agentMessages {
			r.verify(name, thread, []*client{c0}, want)
		}
		mb := func(b int64) float64 { return float64(b) / (1 << 20) }
		r.add(name, "soak/wall", "time for all the cycles", wall.Seconds(), "s")
		r.add(name, "soak/rss1", "RSS after a tenth of the cycles", mb(early.rss), "MB")
		r.add(name, "soak/rss2", "RSS at the end", mb(end.rss), "MB")
		r.add(name, "soak/rss3", "RSS settled, every thread unloaded (lowest in 3 s)", mb(mem.rss), "MB")
		r.add(name, "soak/fds1", "open files after a tenth of the cycles", float64(early.fds), "")
		r.add(name, "soak/fds3", "open files settled", float64(settled.fds), "")
		r.add(name, "soak/threads1", "OS threads after a tenth of the cycles", float64(early.threads), "")
		r.add(name, "soak/threads3", "OS threads settled", float64(settled.threads), "")
		return nil
	})
}

func unsubscribe(ctx context.Context, c *client, thread string) error {
	_, err := c.call(ctx, "thread/unsubscribe", map[string]any{"threadId": thread})
	return err
}

// soakReading is the daemon's RSS, open files and OS threads at a moment.
type soakReading struct {
	rss, fds, threads int64
}

func readSoak(d *daemon) (soakReading, error) {
	m, err := d.memory()
	if err != nil {
		return soakReading{}, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.pid))
	if err != nil {
		return soakReading{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.pid))
	if err != nil {
		return soakReading{}, err
	}
	threads := int64(-1)
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return soakReading{rss: m.rss, fds: int64(len(fds)), threads: threads}, nil
}
