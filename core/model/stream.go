package model

import (
	"bufio"
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmaxmax/go-sse"
	"go.uber.org/zap"
)

// drainLimit and drainTimeout bound how much of the body is read after
// response.completed so that the connection can be reused.
const (
	drainLimit   = 64 << 10
	drainTimeout = time.Second
)

// sseStream is the Stream of one HTTP response.
//
// Next runs the parser as a coroutine (iter.Pull2 over sse.Read), so a
// delta costs no goroutine hand-off. Close may run concurrently with Next:
// it marks the stream closed and cancels the request context, which makes
// net/http close the body and the blocked read return; the parser itself is
// only ever stopped by whichever of Next or Close holds it (busy).
type sseStream struct {
	ctx      context.Context // the caller's
	cancel   context.CancelFunc
	log      *zap.Logger
	model    string // as requested, to detect a reroute
	idle     time.Duration
	threadID string
	turnID   string
	// secrets are the request's credentials, cut out of its errors.
	secrets []string

	limits RateLimitSnapshot // from the response's headers
	// servedModel is the model the server says served the request, from
	// the OpenAI-Model response header ("" when absent).
	servedModel string
	body        io.ReadCloser
	timer       *time.Timer // idle timeout; reset by every read that returns data
	idleFired   atomic.Bool
	closed      atomic.Bool

	next func() (sse.Event, error, bool)
	stop func()

	mu        sync.Mutex // guards the fields that follow
	busy      bool       // a Next is running the parser
	stopped   bool       // the parser was stopped
	completed bool       // response.completed was returned
	drained   bool       // the body was read to its end after it
	err       error      // once set, the stream is over: io.EOF or the failure

	// Used only by the goroutine inside Next.
	fields     eventFields
	events     int
	dropped    [len(droppedEventTypes)]int
	unknown    map[string]int
	responseID string
}

// start binds the stream to the response body.
func (s *sseStream) start(body io.ReadCloser) {
	s.body = body
	seq := iter.Seq2[sse.Event, error](sse.Read(newOutputElider(idleReader{s}), sseReadConfig))
	s.next, s.stop = iter.Pull2(seq)
}

// idleReader resets the idle timer whenever data arrives.
type idleReader struct{ s *sseStream }

func (r idleReader) Read(p []byte) (int, error) {
	n, err := r.s.body.Read(p)
	if n > 0 {
		r.s.timer.Reset(r.s.idle)
	}
	return n, err
}

func (s *sseStream) onIdle() {
	s.idleFired.Store(true)
	s.cancel()
}

func idleError() *Error {
	return &Error{Kind: ErrStreamIdleTimeout, Message: "idle timeout waiting for SSE"}
}

// Next returns the next event; see Stream.
func (s *sseStream) Next() (StreamEvent, error) {
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return StreamEvent{}, err
	}
	s.busy = true
	completed := s.completed
	s.mu.Unlock()

	var ev StreamEvent
	var err error
	if completed {
		s.drainEvents()
	} else {
		ev, err = s.read()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy = false
	switch {
	case completed:
		s.drained = true
		s.finishLocked(io.EOF)
		return StreamEvent{}, io.EOF
	case s.closed.Load() && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		// Close raced with a successful read: report the close.
		ev, err = StreamEvent{}, context.Canceled
		s.finishLocked(err)
	case err != nil:
		err = redactError(err, s.secrets)
		s.finishLocked(err)
	case ev.Kind == EventCompleted:
		// Nothing follows but the end of the body; waiting for it is no
		// longer a reason to fail.
		s.completed = true
		s.timer.Stop()
	}
	return ev, err
}

// RateLimits returns the rate limits of the response's headers; see
// Stream.
func (s *sseStream) RateLimits() RateLimitSnapshot { return s.limits }

// Close ends the stream; see Stream.
func (s *sseStream) Close() error {
	s.mu.Lock()
	done := s.err != nil || s.completed
	if s.err == nil {
		if !s.completed {
			s.closed.Store(true)
		}
		if !s.busy {
			s.finishLocked(closeResult(s.completed))
		}
	}
	s.mu.Unlock()
	if !done {
		// Unblocks a Next that is waiting for data.
		s.cancel()
	}
	return nil
}

func closeResult(completed bool) error {
	if completed {
		return io.EOF
	}
	return context.Canceled
}

// finishLocked ends the stream with err (io.EOF after response.completed).
// s.mu is held and no Next is running the parser.
func (s *sseStream) finishLocked(err error) {
	s.err = err
	if !s.stopped {
		s.stopped = true
		s.stop()
	}
	s.timer.Stop()
	if err == io.EOF && !s.drained {
		go s.drainBody()
	} else {
		s.cancel()
		s.body.Close()
	}
	s.logSummary(err)
}

// drainEvents reads what follows response.completed (normally only the end
// of the chunked body) so that net/http can reuse the connection. Anything
// that is not the end within drainTimeout is abandoned.
func (s *sseStream) drainEvents() {
	t := time.AfterFunc(drainTimeout, s.cancel)
	defer t.Stop()
	for {
		_, err, ok := s.next()
		if !ok || err != nil {
			return
		}
	}
}

// drainBody is drainEvents for a stream closed right after
// response.completed, in the background so that Close does not wait.
func (s *sseStream) drainBody() {
	t := time.AfterFunc(drainTimeout, s.cancel)
	_, _ = io.Copy(io.Discard, io.LimitReader(s.body, drainLimit))
	t.Stop()
	s.body.Close()
	s.cancel()
}

// read runs the parser until an event to return, or a failure.
func (s *sseStream) read() (StreamEvent, error) {
	for {
		e, err, ok := s.next()
		if !ok || err != nil {
			return StreamEvent{}, s.readFailure(err)
		}
		s.events++
		ev, emit, err := s.handle(e.Type, e.Data)
		if err != nil {
			return StreamEvent{}, err
		}
		if emit {
			return ev, nil
		}
	}
}

// readFailure classifies the end of the body before a terminal event.
// go-sse reports a clean EOF as no error, so err may be nil.
func (s *sseStream) readFailure(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if s.closed.Load() {
		return context.Canceled
	}
	if s.idleFired.Load() {
		return idleError()
	}
	if err == nil {
		return &Error{Kind: ErrStreamDisconnected, Message: "stream closed before response.completed"}
	}
	if errors.Is(err, bufio.ErrTooLong) {
		return &Error{Kind: ErrStreamDisconnected, Message: "an SSE event exceeds 16 MiB", Err: err}
	}
	return &Error{Kind: ErrStreamDisconnected, Message: "error reading the SSE stream: " + err.Error(), Err: err}
}

func (s *sseStream) logSummary(end error) {
	ce := s.log.Check(zap.DebugLevel, "model stream ended")
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.String("thread", s.threadID), zap.String("turn", s.turnID),
		zap.String("response", s.responseID), zap.Int("events", s.events),
	}
	if end != io.EOF {
		fields = append(fields, zap.NamedError("end", end))
	}
	dropped := map[string]int{}
	for i, n := range s.dropped {
		if n > 0 {
			dropped[droppedEventTypes[i]] = n
		}
	}
	fields = append(fields, zap.Any("dropped", dropped))
	if len(s.unknown) > 0 {
		fields = append(fields, zap.Any("unknown", s.unknown))
	}
	ce.Write(fields...)
}
