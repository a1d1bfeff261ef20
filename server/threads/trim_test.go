package threads

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
)

// The trimmer returns freed memory once no turn has run for
// idleTrimDelay: not while any turn runs, not when a turn starts within
// the delay, and never sooner after a trim than trimShare times what that
// trim took; and not at all once stopped.
func TestTrimmerWaitsForIdleAndSpacesTrims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTrimmer(zap.NewNop())
		var trims atomic.Int32
		var cost atomic.Int64 // what a trim takes
		tr.trim = func() {
			trims.Add(1)
			time.Sleep(time.Duration(cost.Load()))
		}
		wantTrims := func(n int32, when string) {
			t.Helper()
			synctest.Wait()
			if got := trims.Load(); got != n {
				t.Fatalf("%s: %d trims, want %d", when, got, n)
			}
		}

		// Two turns: the first to end arms nothing.
		tr.turnStarted()
		tr.turnStarted()
		tr.turnEnded()
		time.Sleep(2 * idleTrimDelay)
		wantTrims(0, "a turn still runs")
		tr.turnEnded()
		time.Sleep(idleTrimDelay / 2)
		wantTrims(0, "idle for half the delay")
		// A turn starting within the delay disarms it.
		tr.turnStarted()
		time.Sleep(idleTrimDelay)
		wantTrims(0, "a turn started within the delay")
		tr.turnEnded()
		time.Sleep(idleTrimDelay + time.Millisecond)
		wantTrims(1, "idle for the delay")

		// A trim that takes 500 ms keeps the next one 5 s away.
		const took = 500 * time.Millisecond
		cost.Store(int64(took))
		tr.turnStarted()
		tr.turnEnded()
		time.Sleep(idleTrimDelay + took + time.Millisecond)
		wantTrims(2, "idle again")
		tr.turnStarted()
		tr.turnEnded()
		time.Sleep(trimShare*took - time.Second)
		wantTrims(2, "sooner than trimShare times the last trim's cost")
		time.Sleep(time.Second + time.Millisecond)
		wantTrims(3, "once the spacing has passed")
		time.Sleep(took) // the last trim ends

		// Once stopped (the daemon shuts down), nothing more.
		time.Sleep(trimShare * took)
		tr.turnStarted()
		tr.turnEnded()
		tr.stop()
		time.Sleep(2 * idleTrimDelay)
		wantTrims(3, "after stop")
	})
}
