package threads

import (
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"
)

// idleTrimDelay is how long the daemon runs no turn before it returns the
// memory its turns freed to the system.
const idleTrimDelay = time.Second

// trimShare bounds the time trims take: after a trim that took d, the
// next waits at least trimShare·d, so that trimming never takes more
// than a tenth of the daemon's time, however large its heap.
const trimShare = 10

// trimmer returns freed memory to the system once the daemon has run no
// turn for idleTrimDelay (issue 17: a long turn's RSS). Go's collector
// lets the heap grow to twice the live data between collections and gives
// freed pages back to the system slowly, so after a turn the process
// keeps the turn's garbage resident for a long while; a forced collection
// that returns every free page (runtime/debug.FreeOSMemory) brings RSS
// back to what is live. It costs one collection of the live heap (a few
// milliseconds for a small daemon, more with thousands of connections),
// which is why it waits for the daemon to be idle and is spaced by what
// the last one cost (trimShare).
type trimmer struct {
	// trim is debug.FreeOSMemory; tests count calls instead.
	trim func()
	log  *zap.Logger

	// mu guards the fields that follow.
	mu      sync.Mutex
	running int // turns running, all threads together
	timer   *time.Timer
	// next is the earliest time the next trim may run.
	next time.Time
	// stopped: the daemon is shutting down; no trim runs any more.
	stopped bool
	// inFlight counts trims running (stop waits for them).
	inFlight sync.WaitGroup
}

func newTrimmer(log *zap.Logger) *trimmer { return &trimmer{trim: debug.FreeOSMemory, log: log} }

// turnStarted counts a turn that started: no trim while it runs.
func (tr *trimmer) turnStarted() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.running++
	if tr.timer != nil {
		tr.timer.Stop()
		tr.timer = nil
	}
}

// turnEnded counts a turn that ended; the last one to end arms the trim.
func (tr *trimmer) turnEnded() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.running--; tr.running > 0 || tr.timer != nil || tr.stopped {
		return
	}
	delay := max(idleTrimDelay, time.Until(tr.next))
	tr.timer = time.AfterFunc(delay, tr.fire)
}

func (tr *trimmer) fire() {
	tr.mu.Lock()
	if tr.running > 0 || tr.timer == nil || tr.stopped {
		tr.mu.Unlock()
		return
	}
	tr.timer = nil
	tr.inFlight.Add(1)
	defer tr.inFlight.Done()
	tr.mu.Unlock()
	start := time.Now()
	tr.trim()
	took := time.Since(start)
	tr.log.Debug("returned freed memory to the system (no turn runs)", zap.Duration("took", took))
	tr.mu.Lock()
	tr.next = time.Now().Add(trimShare * took)
	tr.mu.Unlock()
}

// stop ends trimming (the daemon shuts down) and waits for a trim under
// way.
func (tr *trimmer) stop() {
	tr.mu.Lock()
	tr.stopped = true
	if tr.timer != nil {
		tr.timer.Stop()
		tr.timer = nil
	}
	tr.mu.Unlock()
	tr.inFlight.Wait()
}
