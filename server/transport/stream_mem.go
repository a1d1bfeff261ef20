package transport

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/agentd-dev/agentd/server/scope"
)

// ErrClosed is returned by operations on a closed stream.
var ErrClosed = errors.New("stream closed")

// memPipe is the shared state of the two ends of an in-memory pipe: one
// channel per direction and one close signal for both.
type memPipe struct {
	closeOnce sync.Once
	closed    chan struct{}
}

// memStream is one end of an in-memory pipe.
type memStream struct {
	p    *memPipe
	in   <-chan []byte
	out  chan<- []byte
	info Info
}

// Pipe returns the two ends of an in-memory message pipe for an in-process
// client: what one end writes, the other reads, message by message, without
// framing. Each direction buffers up to buffer messages; a writer facing a
// full buffer waits. Closing either end closes both; the other end still
// reads what was already written, then io.EOF.
func Pipe(buffer int) (server, client Stream) {
	if buffer < 1 {
		buffer = 1
	}
	p := &memPipe{closed: make(chan struct{})}
	a2b := make(chan []byte, buffer)
	b2a := make(chan []byte, buffer)
	info := Info{Transport: "memory", WaitWhenFull: true, Scope: scope.Admin}
	server = &memStream{p: p, in: b2a, out: a2b, info: info}
	client = &memStream{p: p, in: a2b, out: b2a, info: info}
	return server, client
}

func (s *memStream) Read(ctx context.Context) ([]byte, error) {
	// Prefer buffered messages over the close signal so nothing written
	// before Close is lost.
	select {
	case m := <-s.in:
		return m, nil
	default:
	}
	select {
	case m := <-s.in:
		return m, nil
	case <-s.p.closed:
		select {
		case m := <-s.in:
			return m, nil
		default:
			return nil, io.EOF
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *memStream) Write(ctx context.Context, msg []byte) error {
	m := make([]byte, len(msg))
	copy(m, msg)
	select {
	case <-s.p.closed:
		return ErrClosed
	default:
	}
	select {
	case s.out <- m:
		return nil
	case <-s.p.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *memStream) Flush() error { return nil }

func (s *memStream) Close() error {
	s.p.closeOnce.Do(func() { close(s.p.closed) })
	return nil
}

func (s *memStream) Info() Info { return s.info }
