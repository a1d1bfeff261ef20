package core

import (
	"context"
	"errors"
	"testing"
)

// The submission queue keeps order, holds at most SubmissionQueueCapacity
// (a submitter waits for room, until its context ends or the session
// stops), and gives its array back once it is empty.
func TestSubmissionQueueBoundOrderAndRelease(t *testing.T) {
	sq := newSubmissionQueue()
	ctx := context.Background()
	done := make(chan struct{})
	for i := range SubmissionQueueCapacity {
		if err := sq.put(ctx, queued{sub: Submission{ID: string(rune('a' + i%26))}}, done); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := sq.put(cancelled, queued{}, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("put on a full queue with an ended context: %v", err)
	}
	stopped := make(chan struct{})
	close(stopped)
	if err := sq.put(ctx, queued{}, stopped); !errors.Is(err, errDone) {
		t.Fatalf("put on a full queue of a stopped session: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sq.put(ctx, queued{sub: Submission{ID: "last"}}, done) }()
	// The waiting put goes in once the first submission is taken.
	if q, ok := sq.take(); !ok || q.sub.ID != "a" {
		t.Fatalf("first taken: %q %v", q.sub.ID, ok)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	var last string
	for i := 1; ; i++ {
		q, ok := sq.take()
		if !ok {
			if i != SubmissionQueueCapacity+1 {
				t.Fatalf("took %d submissions, want %d", i, SubmissionQueueCapacity+1)
			}
			break
		}
		if q.sub.ID != "last" && q.sub.ID != string(rune('a'+i%26)) {
			t.Fatalf("submission %d is %q: out of order", i, q.sub.ID)
		}
		last = q.sub.ID
	}
	if last != "last" {
		t.Fatalf("the waiting submission came out as %q, not last", last)
	}
	if sq.q != nil {
		t.Fatalf("the empty queue keeps an array of %d", cap(sq.q))
	}
}
