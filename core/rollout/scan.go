package rollout

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// scanBufSize is the read buffer of the line scanner; longer lines are
// assembled in a side buffer.
const scanBufSize = 256 << 10

// scanLimits bound one scan.
type scanLimits struct {
	// maxLine caps a line, its newline excluded (0: no cap). A longer
	// line fails the scan with ErrLineTooLong, or, with skipLong, is
	// dropped (never held whole) and the scan goes on.
	maxLine  int64
	skipLong bool
	// maxBytes caps what is read from r (0: no cap); past it, the scan
	// fails with ErrFileTooLarge.
	maxBytes int64
	// firstMeta requires the first line to be a session_meta record of
	// at most MetaLineBytes, or the scan fails with ErrNotRollout.
	firstMeta bool
}

// readLimits are the bounds of a whole-file read under lim.
func readLimits(lim Limits) scanLimits {
	return scanLimits{maxLine: lim.maxLine(), maxBytes: lim.maxFile(), firstMeta: true}
}

// scanLines calls fn with each newline-terminated record of r, without its
// newline, and its 1-based line number; an error from fn ends the scan
// and is returned. size, the bytes expected, sizes the
// read buffer (many rollouts are small; the index reads thousands). A last line without a newline (a
// write cut short by a crash) is passed with torn set. It returns the
// offset just past the last newline, which is where a later incremental
// scan resumes. fn must not keep b.
//
// Memory holds one line at a time, never more than lim.maxLine of it. The
// scan stops, with the context's error, when ctx ends: it is checked
// before each read.
func scanLines(ctx context.Context, r io.Reader, size int64, lim scanLimits, fn func(b []byte, n int, torn bool) error) (int64, error) {
	if lim.maxBytes > 0 {
		r = io.LimitReader(r, lim.maxBytes+1)
	}
	br := bufio.NewReaderSize(r, int(min(max(size+1, 4096), scanBufSize)))
	done := ctx.Done()
	var long []byte
	var off, cur int64 // cur: bytes of the current line read so far
	n := 0
	skipping := false // dropping the rest of an over-long line
	needMeta := lim.firstMeta
	for {
		select {
		case <-done:
			return off, context.Cause(ctx)
		default:
		}
		b, err := br.ReadSlice('\n')
		cur += int64(len(b))
		if lim.maxBytes > 0 && off+cur > lim.maxBytes {
			return off, fmt.Errorf("%w: it is more than the limit of %s", ErrFileTooLarge, byteSize(lim.maxBytes))
		}
		if !skipping {
			ll := lineLen(cur, b, err)
			if needMeta && ll > MetaLineBytes {
				return off, fmt.Errorf("%w: no session metadata within its first %s", ErrNotRollout, byteSize(MetaLineBytes))
			}
			if lim.maxLine > 0 && ll > lim.maxLine {
				if !lim.skipLong || needMeta {
					return off, fmt.Errorf("%w: line %d is longer than the limit of %s", ErrLineTooLong, n+1, byteSize(lim.maxLine))
				}
				skipping, long = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping {
				long = append(long, b...)
			}
			continue
		}
		if len(long) > 0 {
			long = append(long, b...)
			b = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return off, err
		}
		if cur > 0 {
			n++
			ended := err == nil // b ends with the newline
			switch {
			case skipping:
				// Dropped; a torn one is read again by a later scan.
			case ended:
				if body := bytes.TrimRight(b, "\r\n"); len(body) > 0 {
					if needMeta {
						if !isMetaLine(body) {
							return off, fmt.Errorf("%w: the first line is not the session's metadata (session_meta)", ErrNotRollout)
						}
						needMeta = false
					}
					if err := fn(body, n, false); err != nil {
						return off, err
					}
				}
			case needMeta:
				return off, fmt.Errorf("%w: the first line is not the session's metadata (session_meta)", ErrNotRollout)
			default:
				if err := fn(b, n, true); err != nil {
					return off, err
				}
			}
			if ended {
				off += cur
			}
		}
		if cap(long) > 16*scanBufSize {
			long = nil // do not pin one huge record's buffer
		}
		long, cur, skipping = long[:0], 0, false
		if err != nil {
			if needMeta {
				return off, fmt.Errorf("%w: it is empty", ErrNotRollout)
			}
			return off, nil
		}
	}
}

// lineLen is the length of a line of which cur bytes were read, b last
// (with err), without its line ending.
func lineLen(cur int64, b []byte, err error) int64 {
	if err == nil {
		return cur - int64(len(b)-len(bytes.TrimRight(b, "\r\n")))
	}
	return cur
}

// isMetaLine reports whether a line is a session_meta record.
func isMetaLine(b []byte) bool {
	if typ, ok := peekLineType(b); ok {
		return typ == LineSessionMeta
	}
	l, err := parseLine(b, nil)
	return err == nil && l.Type == LineSessionMeta
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
