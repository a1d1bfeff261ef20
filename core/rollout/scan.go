package rollout

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// scanBufSize is the read buffer of the line scanner; longer lines are
// assembled in a side buffer.
const scanBufSize = 256 << 10

// scanLines calls fn with each newline-terminated record of r, without its
// newline, and its 1-based line number. size, the bytes expected, sizes the
// read buffer (many rollouts are small; the index reads thousands). A last line without a newline (a
// write cut short by a crash) is passed with torn set. It returns the
// offset just past the last newline, which is where a later incremental
// scan resumes. fn must not keep b.
func scanLines(r io.Reader, size int64, fn func(b []byte, n int, torn bool)) (int64, error) {
	br := bufio.NewReaderSize(r, int(min(max(size+1, 4096), scanBufSize)))
	var long []byte
	var off int64
	n := 0
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, b...)
			continue
		}
		if len(long) > 0 {
			long = append(long, b...)
			b = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return off, err
		}
		if len(b) > 0 {
			n++
			if b[len(b)-1] == '\n' {
				off += int64(len(b))
				if body := bytes.TrimRight(b, "\r\n"); len(body) > 0 {
					fn(body, n, false)
				}
			} else {
				fn(b, n, true)
			}
		}
		if cap(long) > 16*scanBufSize {
			long = nil // do not pin one huge record's buffer
		}
		long = long[:0]
		if err != nil {
			return off, nil
		}
	}
}

// applyRecovering calls apply on a record and, when it fails, on each
// suffix that starts a new record: a torn write followed, on the same line,
// by a good record (an append after a crash) loses only the torn part.
// It returns the error of the whole line when nothing could be applied.
func applyRecovering(b []byte, apply func([]byte) error) (recovered bool, err error) {
	err = apply(b)
	if err == nil {
		return false, nil
	}
	for i := 1; i < len(b); {
		j := bytes.Index(b[i:], prefixTimestamp)
		if j < 0 {
			break
		}
		if apply(b[i+j:]) == nil {
			return true, nil
		}
		i += j + 1
	}
	return false, err
}

// lineWarning formats the warning for a skipped line.
func lineWarning(path string, n int, torn, recovered bool, err error) string {
	switch {
	case recovered:
		return fmt.Sprintf("%s:%d: a torn record before a good one was skipped", path, n)
	case torn:
		return fmt.Sprintf("%s:%d: the last record is incomplete (a write cut short) and was skipped", path, n)
	default:
		return fmt.Sprintf("%s:%d: unreadable record skipped: %v", path, n, err)
	}
}
