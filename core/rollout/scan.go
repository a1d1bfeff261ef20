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
	// stopAfter, when set, is how many whole lines a summary folds in
	// before it stops (continueSummary).
	stopAfter int
}

// readLimits are the bounds of a whole-file read under lim.
func readLimits(lim Limits) scanLimits {
	return scanLimits{maxLine: lim.maxLine(), maxBytes: lim.maxFile(), firstMeta: true}
}

// scanLines calls fn with each newline-terminated record of r, without its
// newline, and its 1-based line number; an error from fn ends the scan
// and is returned. size, the bytes expected, sizes the read buffer (many
// rollouts are small; the index reads thousands). A last line without a
// newline (a write cut short by a crash) is passed with torn set. It
// returns the offset just past the last newline, which is where a later
// incremental scan resumes. fn must not keep b.
//
// Memory holds one line at a time, never more than lim.maxLine of it. A
// line longer than the read buffer is measured first, streaming, and read
// whole only once it is known to be within its cap (from a file, with
// ReadAt: one exact allocation; from another reader, gathered as it is
// read): a line past its cap is never held. The scan stops, with the
// context's error, when ctx ends: it is checked before each read.
func scanLines(ctx context.Context, r io.Reader, size int64, lim scanLimits, fn func(b []byte, n int, torn bool) error) (int64, error) {
	sc := &lineScanner{ctx: ctx, done: ctx.Done(), lim: lim, needMeta: lim.firstMeta}
	if f, ok := r.(interface {
		io.ReaderAt
		io.Seeker
	}); ok {
		if base, err := f.Seek(0, io.SeekCurrent); err == nil {
			sc.at, sc.base = f, base
		}
	}
	if lim.maxBytes > 0 {
		r = io.LimitReader(r, lim.maxBytes+1)
	}
	sc.br = bufio.NewReaderSize(r, int(min(max(size+1, 4096), scanBufSize)))
	err := sc.run(fn)
	return sc.off, err
}

// lineScanner is one scan of scanLines.
type lineScanner struct {
	ctx  context.Context
	done <-chan struct{}
	br   *bufio.Reader
	lim  scanLimits
	// at reads a long line again once measured, at base+its offset; nil
	// when the reader cannot (the line is then gathered as it is read).
	at   io.ReaderAt
	base int64
	// off is the offset just past the last newline; n the lines so far.
	off      int64
	n        int
	needMeta bool
	// read counts every byte taken from br, for maxBytes.
	read int64
}

func (sc *lineScanner) run(fn func(b []byte, n int, torn bool) error) error {
	for {
		if err := sc.stopped(); err != nil {
			return err
		}
		b, err := sc.br.ReadSlice('\n')
		skip := false
		if errors.Is(err, bufio.ErrBufferFull) {
			b, skip, err = sc.longLine(b)
		} else if cerr := sc.count(b, err); errors.Is(cerr, errSkipLine) {
			skip = true
		} else if cerr != nil {
			return cerr
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(b) > 0 || skip {
			sc.n++
			if ferr := sc.pass(b, err == nil, skip, fn); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if sc.needMeta {
				return fmt.Errorf("%w: it is empty", ErrNotRollout)
			}
			return nil
		}
	}
}

// pass hands one line to fn: whole (ended), torn, or skipped (over its
// cap, dropped unread).
func (sc *lineScanner) pass(b []byte, ended, skip bool, fn func(b []byte, n int, torn bool) error) error {
	switch {
	case skip:
		// Dropped; a torn one is read again by a later scan.
	case ended:
		if body := bytes.TrimRight(b, "\r\n"); len(body) > 0 {
			if sc.needMeta {
				if !isMetaLine(body) {
					return fmt.Errorf("%w: the first line is not the session's metadata (session_meta)", ErrNotRollout)
				}
				sc.needMeta = false
			}
			if err := fn(body, sc.n, false); err != nil {
				return err
			}
		}
	case sc.needMeta:
		return fmt.Errorf("%w: the first line is not the session's metadata (session_meta)", ErrNotRollout)
	default:
		if err := fn(b, sc.n, true); err != nil {
			return err
		}
	}
	return nil
}

// count takes b, the next piece of the current line, read with err, and
// checks the caps: the file's, the metadata's while it is awaited, the
// line's. It returns errSkipLine when the line is over its cap and may be
// dropped. A piece that ends the line (err nil) moves off past it.
func (sc *lineScanner) count(b []byte, err error) error {
	sc.read += int64(len(b))
	cerr := sc.check(sc.read-sc.off, b, err)
	if err == nil && (cerr == nil || errors.Is(cerr, errSkipLine)) {
		sc.off = sc.read
	}
	return cerr
}

// stopped returns the context's error once it has ended.
func (sc *lineScanner) stopped() error {
	select {
	case <-sc.done:
		return context.Cause(sc.ctx)
	default:
		return nil
	}
}

// errSkipLine: the current line is over its cap and the scan may drop it.
var errSkipLine = errors.New("line skipped")

// check applies the caps to a line of which cur bytes were read, b last
// (with err).
func (sc *lineScanner) check(cur int64, b []byte, err error) error {
	lim := sc.lim
	if lim.maxBytes > 0 && sc.read > lim.maxBytes {
		return fmt.Errorf("%w: it is more than the limit of %s", ErrFileTooLarge, byteSize(lim.maxBytes))
	}
	ll := lineLen(cur, b, err)
	if sc.needMeta && ll > MetaLineBytes {
		return fmt.Errorf("%w: no session metadata within its first %s", ErrNotRollout, byteSize(MetaLineBytes))
	}
	if lim.maxLine > 0 && ll > lim.maxLine {
		if lim.skipLong && !sc.needMeta {
			return errSkipLine
		}
		return fmt.Errorf("%w: line %d is longer than the limit of %s", ErrLineTooLong, sc.n+1, byteSize(lim.maxLine))
	}
	return nil
}

// longLine reads the rest of a line longer than the read buffer, of which
// first was read. It streams through the line to its end, checking the
// caps as it goes, then returns it whole: read again from the file at its
// offset, or gathered along the way when the reader cannot be read at an
// offset. A line over its cap is skipped (skip) when the scan may drop
// it, else its error is returned; either way it is never held.
func (sc *lineScanner) longLine(first []byte) (line []byte, skip bool, err error) {
	start := sc.off
	var gathered []byte
	b := first
	err = bufio.ErrBufferFull
	for {
		if cerr := sc.count(b, err); errors.Is(cerr, errSkipLine) {
			skip, gathered = true, nil
		} else if cerr != nil {
			return nil, false, cerr
		}
		if sc.at == nil && !skip {
			gathered = append(gathered, b...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		if cerr := sc.stopped(); cerr != nil {
			return nil, false, cerr
		}
		b, err = sc.br.ReadSlice('\n')
	}
	if err != nil && !errors.Is(err, io.EOF) || skip || sc.at == nil {
		return gathered, skip, err
	}
	// Within its cap: read again whole (a torn one runs to EOF).
	line = make([]byte, sc.read-start)
	if n, rerr := sc.at.ReadAt(line, sc.base+start); n < len(line) {
		if rerr == nil || errors.Is(rerr, io.EOF) {
			rerr = io.ErrUnexpectedEOF // the file shrank meanwhile
		}
		return nil, false, rerr
	}
	return line, false, err
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
