package patch

import "time"

// PreviewInterval is the least time between two previews of one call.
const PreviewInterval = 500 * time.Millisecond

// Throttle limits how often a streaming preview is emitted: at most one per
// interval, and never losing the last state. Use it as
//
//	if sp.Push(delta) && th.Allow() { emit(sp.Snapshot()) }
//	…
//	if th.Flush() { emit(sp.Snapshot()) } // when the call's input is complete
//
// A Throttle is not safe for concurrent use.
type Throttle struct {
	every   time.Duration
	now     func() time.Time
	last    time.Time
	sent    bool // something was emitted already
	pending bool // a state was held back since the last emission
}

// NewThrottle returns a throttle allowing one emission per every (≤0 means
// PreviewInterval), reading the time from now (nil means time.Now).
func NewThrottle(every time.Duration, now func() time.Time) *Throttle {
	if every <= 0 {
		every = PreviewInterval
	}
	if now == nil {
		now = time.Now
	}
	return &Throttle{every: every, now: now}
}

// Allow is called when there is a new state to show. It reports whether to
// emit it now; if not, the state is remembered as pending.
func (t *Throttle) Allow() bool {
	now := t.now()
	if t.sent && now.Sub(t.last) < t.every {
		t.pending = true
		return false
	}
	t.sent, t.last, t.pending = true, now, false
	return true
}

// Pending reports whether a state was held back since the last emission.
func (t *Throttle) Pending() bool { return t.pending }

// NextAt is when a held-back state may be emitted, for a caller that wants
// to emit on a timer rather than wait for the next delta.
func (t *Throttle) NextAt() time.Time { return t.last.Add(t.every) }

// Flush is called when the input is complete. It reports whether the final
// state was held back and must be emitted now, and counts it as emitted.
func (t *Throttle) Flush() bool {
	if !t.pending {
		return false
	}
	t.pending, t.sent, t.last = false, true, t.now()
	return true
}
