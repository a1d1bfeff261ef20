package transport

import (
	"bufio"
	"errors"
	"io"
)

// lineReader splits newline-delimited input into lines with a size cap.
// It accepts "\n" and "\r\n" terminators, skips lines made only of
// whitespace, returns a final line that has no terminator, and skips (and
// reports) a line longer than the cap without losing its place: the next
// call starts at the following line.
type lineReader struct {
	r   *bufio.Reader
	max int
	// eof is set once the underlying reader has reported io.EOF.
	eof bool
	// buf collects a line that spans several bufio chunks.
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	size := 64 << 10
	if max < size {
		size = max + 2
	}
	if size < 16 {
		size = 16
	}
	return &lineReader{r: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next non-blank line, without its terminator, in a slice
// the caller owns. It returns ErrMessageTooLarge for a line over the cap
// (skipped), io.EOF at the end of input, or the reader's error.
func (lr *lineReader) next() ([]byte, error) {
	for {
		if lr.eof {
			return nil, io.EOF
		}
		line, err := lr.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if errors.Is(err, io.EOF) {
			lr.eof = true
		}
		if line == nil {
			// Either a skipped over-long line or nothing at all.
			continue
		}
		if isBlank(line) {
			continue
		}
		return line, nil
	}
}

// readLine reads one line. It returns (nil, ErrMessageTooLarge) for a line
// over the cap, (line, io.EOF) for a final unterminated line, and (nil,
// io.EOF) at the end.
func (lr *lineReader) readLine() ([]byte, error) {
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !tooLong {
			// A terminator ("\r\n") may follow the content; allow for it
			// before deciding.
			if len(lr.buf)+len(chunk) > lr.max+2 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			return lr.finish(tooLong, nil)
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLong {
				return lr.finish(true, io.EOF)
			}
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
			return lr.finish(false, io.EOF)
		default:
			return nil, err
		}
	}
}

// finish trims the terminator from the collected line and applies the cap.
func (lr *lineReader) finish(tooLong bool, err error) ([]byte, error) {
	if tooLong {
		if err != nil {
			// The over-long line was the last one: report it, then EOF
			// on the next call.
			lr.eof = true
		}
		return nil, ErrMessageTooLarge
	}
	line := lr.buf
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > lr.max {
		if err != nil {
			lr.eof = true
		}
		return nil, ErrMessageTooLarge
	}
	out := make([]byte, len(line))
	copy(out, line)
	return out, err
}

func isBlank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n', '\f', '\v':
		default:
			return false
		}
	}
	return true
}
