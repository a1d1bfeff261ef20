package threads

import (
	"context"
	"sort"
	"sync"

	"github.com/agentd-dev/agentd/core"
)

// registry holds the loaded threads.
type registry struct {
	sv *service
	// loadMu serialises loading stored threads, so that one is never
	// loaded twice.
	loadMu sync.Mutex

	// mu guards the fields that follow.
	mu      sync.Mutex
	threads map[string]*thread
	// unloading has, per thread id being unloaded, a channel closed once
	// that thread is gone: its rollout closed, its end announced.
	unloading map[string]chan struct{}
}

func newRegistry(sv *service) *registry {
	return &registry{sv: sv, threads: map[string]*thread{}, unloading: map[string]chan struct{}{}}
}

func (r *registry) get(id string) *thread {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.threads[id]
}

func (r *registry) add(t *thread) {
	r.mu.Lock()
	r.threads[t.id] = t
	r.mu.Unlock()
}

// remove forgets t, unless another thread of the same id replaced it.
func (r *registry) remove(t *thread) {
	r.mu.Lock()
	if r.threads[t.id] == t {
		delete(r.threads, t.id)
	}
	r.mu.Unlock()
}

// unload forgets t as remove does, and records it as being unloaded
// until gone is called, so that a load of the same id waits for it
// (waitUnloaded) rather than find its rollout still open, or load the
// thread again before its end is announced.
func (r *registry) unload(t *thread) (gone func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	if r.threads[t.id] == t {
		delete(r.threads, t.id)
	}
	r.unloading[t.id] = ch
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.unloading[t.id] == ch {
			delete(r.unloading, t.id)
		}
		r.mu.Unlock()
		close(ch)
	}
}

// waitUnloaded waits until no thread of id is being unloaded, or ctx
// ends.
func (r *registry) waitUnloaded(ctx context.Context, id string) error {
	r.mu.Lock()
	ch := r.unloading[id]
	r.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ids returns the loaded thread ids, sorted.
func (r *registry) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.threads))
	for id := range r.threads {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func (r *registry) all() []*thread {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*thread, 0, len(r.threads))
	for _, t := range r.threads {
		out = append(out, t)
	}
	return out
}

// waitIdle waits until no loaded thread runs a turn, or ctx ends.
func (r *registry) waitIdle(ctx context.Context) {
	for _, t := range r.all() {
		for {
			st, changed := t.sess.Status()
			if st == core.StatusIdle || st == core.StatusShutdown {
				break
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}
}

// closeAll shuts every loaded thread down (shutdown of the daemon), and
// waits, until ctx ends, for the threads being unloaded meanwhile (gone
// idle, archived, deleted), so that the store closes after their rollouts.
func (r *registry) closeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range r.all() {
		wg.Go(func() { t.shutdown(ctx) })
	}
	wg.Wait()
	r.mu.Lock()
	unloading := make([]chan struct{}, 0, len(r.unloading))
	for _, ch := range r.unloading {
		unloading = append(unloading, ch)
	}
	r.mu.Unlock()
	for _, ch := range unloading {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}
