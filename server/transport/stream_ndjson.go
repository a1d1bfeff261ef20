package transport

import (
	"bufio"
	"context"
	"io"
	"sync"
)

// ndjsonStream frames messages as newline-delimited JSON: one message per
// line, "\n" on output; "\n" or "\r\n" on input.
type ndjsonStream struct {
	lines *lineReader
	w     *bufio.Writer
	info  Info

	closeOnce sync.Once
	closer    func() error
	closeErr  error
}

// NewNDJSON returns a Stream reading lines from r and writing lines to w.
// maxBytes caps one input line (0 means DefaultMaxMessageBytes). closer,
// when not nil, is called once by Close to release r and w.
func NewNDJSON(r io.Reader, w io.Writer, closer func() error, maxBytes int, info Info) Stream {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	return &ndjsonStream{
		lines:  newLineReader(r, maxBytes),
		w:      bufio.NewWriterSize(w, 64<<10),
		info:   info,
		closer: closer,
	}
}

func (s *ndjsonStream) Read(ctx context.Context) ([]byte, error) {
	return s.lines.next()
}

func (s *ndjsonStream) Write(ctx context.Context, msg []byte) error {
	if _, err := s.w.Write(msg); err != nil {
		return err
	}
	return s.w.WriteByte('\n')
}

func (s *ndjsonStream) Flush() error { return s.w.Flush() }

func (s *ndjsonStream) Close() error {
	s.closeOnce.Do(func() {
		if s.closer != nil {
			s.closeErr = s.closer()
		}
	})
	return s.closeErr
}

func (s *ndjsonStream) Info() Info { return s.info }
