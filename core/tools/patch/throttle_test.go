package patch

import (
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestThrottle(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	th := NewThrottle(0, clk.now)
	steps := []struct {
		after time.Duration
		want  bool
	}{
		{0, true},                       // the first state goes out at once
		{100 * time.Millisecond, false}, // too soon
		{399 * time.Millisecond, false}, // 499 ms after the last emission
		{1 * time.Millisecond, true},    // 500 ms: allowed
		{500 * time.Millisecond, true},
		{10 * time.Millisecond, false},
	}
	for i, s := range steps {
		clk.advance(s.after)
		if got := th.Allow(); got != s.want {
			t.Fatalf("step %d: Allow = %v, want %v", i, got, s.want)
		}
	}
	if !th.Pending() {
		t.Error("Pending = false after a held-back state")
	}
	if want := clk.t.Add(490 * time.Millisecond); !th.NextAt().Equal(want) {
		t.Errorf("NextAt = %v, want %v", th.NextAt(), want)
	}
	// The final state is emitted even though it is too soon.
	if !th.Flush() {
		t.Error("Flush = false with a held-back final state")
	}
	if th.Flush() || th.Pending() {
		t.Error("second Flush or Pending true after the final state went out")
	}
	// Once the final state went out in time, nothing needs flushing.
	th2 := NewThrottle(time.Second, clk.now)
	th2.Allow()
	clk.advance(2 * time.Second)
	th2.Allow()
	if th2.Flush() {
		t.Error("Flush = true though the last state was emitted")
	}
}

func TestThrottleWithStreamParser(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	th := NewThrottle(500*time.Millisecond, clk.now)
	sp := NewStreamParser()
	var emitted [][]FileChange
	var at []time.Time
	text := "*** Begin Patch\n*** Add File: a\n" + strings.Repeat("+line\n", 40) + "*** End Patch\n"
	for i := 0; i < len(text); i += 3 {
		clk.advance(20 * time.Millisecond) // a 3-byte delta every 20 ms: 1.9 s
		if sp.Push(text[i:min(i+3, len(text))]) && th.Allow() {
			emitted = append(emitted, sp.Snapshot())
			at = append(at, clk.now())
		}
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 500*time.Millisecond {
			t.Errorf("previews %d and %d only %v apart", i-1, i, gap)
		}
	}
	if th.Flush() {
		emitted = append(emitted, sp.Snapshot())
	}
	// The first state at 220 ms, then at 720, 1220 and 1720 ms, then the
	// final one.
	if len(emitted) != 5 {
		t.Errorf("emitted %d previews, want 5", len(emitted))
	}
	last := emitted[len(emitted)-1]
	if len(last) != 1 || last[0].Diff != strings.Repeat("line\n", 40) {
		t.Errorf("final preview = %+v, want the whole file", last)
	}
}
