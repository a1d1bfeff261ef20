package model_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// stalledStream starts a stream whose server sends three events and then
// waits; it returns once the client has read them.
func stalledStream(t *testing.T, ctx context.Context) (*mockmodel.Server, model.Stream) {
	t.Helper()
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one two three")).StallAfter(3))
	st, err := model.NewClient(provider(srv)).Stream(ctx, request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.Next(); err != nil {
			t.Fatal(err)
		}
	}
	return srv, st
}

// nextAsync runs Next in the background.
func nextAsync(st model.Stream) <-chan error {
	c := make(chan error, 1)
	go func() {
		_, err := st.Next()
		c <- err
	}()
	return c
}

func waitErr(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("Next did not return")
		return nil
	}
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not happen", what)
	}
}

func TestCancelContextMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, st := stalledStream(t, ctx)
	next := nextAsync(st)
	cancel()
	if err := waitErr(t, next); !errors.Is(err, context.Canceled) {
		t.Errorf("Next = %v, want context.Canceled", err)
	}
	waitClosed(t, srv.Disconnected(0), "server seeing the client disconnect")
	// The stream stays ended.
	if _, err := st.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("second Next = %v, want context.Canceled", err)
	}
	st.Close()
}

func TestCloseMidStream(t *testing.T) {
	srv, st := stalledStream(t, context.Background())
	next := nextAsync(st)
	st.Close()
	if err := waitErr(t, next); !errors.Is(err, context.Canceled) {
		t.Errorf("Next = %v, want context.Canceled", err)
	}
	waitClosed(t, srv.Disconnected(0), "server seeing the client disconnect")
	st.Close() // idempotent
}

func TestCloseBeforeNext(t *testing.T) {
	srv, st := stalledStream(t, context.Background())
	st.Close()
	if _, err := st.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after Close = %v, want context.Canceled", err)
	}
	waitClosed(t, srv.Disconnected(0), "server seeing the client disconnect")
}

func TestNextAfterEOF(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Reply("resp_1"))
	st, err := model.NewClient(provider(srv)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, st); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := st.Next(); err != io.EOF {
			t.Errorf("Next after the end = %v, want io.EOF", err)
		}
	}
	st.Close()
	if _, err := st.Next(); err != io.EOF {
		t.Errorf("Next after Close of a completed stream = %v, want io.EOF", err)
	}
}

func TestStreamWithCancelledContext(t *testing.T) {
	srv := mockmodel.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := model.NewClient(provider(srv)).Stream(ctx, request("hi"), meta); err != context.Canceled {
		t.Errorf("Stream = %v, want context.Canceled", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests, want 0", n)
	}
}
