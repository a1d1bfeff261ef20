package rollout

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A rollout whose writes start failing (WriteFault: a full disk) reports
// the first failure once, counts every attempt, keeps the records, and
// retries by itself: once the disk is free again it writes everything and
// reports the recovery, without any barrier asking. Store.Failing counts
// the failing recorder meanwhile.
func TestWriteFailureReportedAndRetriedByItself(t *testing.T) {
	var full atomic.Bool
	var attempts atomic.Int32
	firsts := make(chan error, 8)
	recovered := make(chan string, 8)
	s, _ := openStore(t, Options{
		WriteFault: func() error {
			if full.Load() {
				return syscall.ENOSPC
			}
			return nil
		},
		OnWriteFailed: func(id string, err error, first bool) {
			attempts.Add(1)
			if first {
				firsts <- err
			}
		},
		OnWriteRecovered: func(id string) { recovered <- id },
	})
	r, err := s.Create(testMeta("t-full", baseTime))
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "t1", prompt: "before", end: "completed"})
	if err := r.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	recordTurn(t, r, turnScript{id: "t2", prompt: "while full", end: "completed"})
	select {
	case err := <-firsts:
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("first failure %v, want ENOSPC", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failure was not reported")
	}
	if !r.Failing() || s.Failing() != 1 {
		t.Fatalf("Failing: recorder %v, store %d", r.Failing(), s.Failing())
	}
	// A barrier fails too, and is one more attempt, not a new first.
	n := attempts.Load()
	if err := r.Flush(testCtx(t)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush while full: %v", err)
	}
	if attempts.Load() <= n {
		t.Fatal("the barrier's failure was not counted")
	}
	full.Store(false)
	select {
	case id := <-recovered:
		if id != "t-full" {
			t.Fatalf("recovered %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not retry by itself")
	}
	if r.Failing() || s.Failing() != 0 || len(firsts) != 0 {
		t.Fatalf("after recovery: recorder %v, store %d, %d more firsts", r.Failing(), s.Failing(), len(firsts))
	}
	if err := r.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	th := mustRead(t, r.Path(), ReadOptions{})
	if got := turnStatuses(th); len(got) != 2 || got[0] != TurnCompleted || got[1] != TurnCompleted || len(th.Warnings) != 0 {
		t.Fatalf("turns %v, warnings %v", got, th.Warnings)
	}
}
