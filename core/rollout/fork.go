package rollout

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/agentd-dev/agentd/core"
)

// ForkOptions say what to copy into a new thread.
type ForkOptions struct {
	// SourceID is the thread to copy.
	SourceID string
	// SourcePath, when set, is the rollout file to copy instead of
	// SourceID's (thread/fork's path): SourceID is then taken from its
	// session_meta.
	SourcePath string
	// NewID is the new thread's id; a UUIDv7 is made when empty.
	NewID string
	// LastTurnID is the last turn to copy (inclusive); "" copies all.
	LastTurnID string
	// CreatedAt is the new thread's creation time (default now).
	CreatedAt time.Time
	// Adjust, when set, may change the new thread's meta (cwd, model,
	// originator, …) before it is written. ID, CreatedAt and ForkedFromID
	// are set again after it runs.
	Adjust func(*SessionMeta)
}

// Fork copies a thread into a new one: a new id and meta naming the source
// in ForkedFromID, and the source's records up to and including
// LastTurnID's. The name is copied (as the reference does) into the
// session index; the history, turns and last token usage follow from the
// copied records. A copied turn
// that had not ended in the source is recorded as interrupted in the
// fork. The source file is not changed. Fork returns the new thread,
// rebuilt from its file, which it writes and fsyncs before returning.
func (s *Store) Fork(ctx context.Context, opts ForkOptions) (*Thread, error) {
	ctx, done := s.reading(ctx)
	defer done()
	if opts.SourcePath != "" {
		meta, err := ReadMeta(ctx, opts.SourcePath, s.opts.Limits)
		if err != nil {
			return nil, err
		}
		opts.SourceID = meta.ID
	}
	if r := s.recorder(opts.SourceID); r != nil {
		// Records still queued in the source belong in the copy.
		if err := r.Flush(ctx); err != nil {
			return nil, err
		}
	}
	loc := Location{Path: opts.SourcePath}
	if loc.Path == "" {
		var err error
		if loc, err = s.Find(opts.SourceID); err != nil {
			return nil, err
		}
	}
	src, err := ReadThread(ctx, loc.Path, ReadOptions{SkipHistory: true, Limits: s.opts.Limits})
	if err != nil {
		return nil, err
	}
	if opts.LastTurnID != "" && !hasTurn(src, opts.LastTurnID) {
		return nil, fmt.Errorf("%w: %s in thread %s", ErrTurnNotFound, opts.LastTurnID, opts.SourceID)
	}
	if opts.NewID == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		opts.NewID = u.String()
	}
	if err := validThreadID(opts.NewID); err != nil {
		return nil, err
	}
	if opts.CreatedAt.IsZero() {
		opts.CreatedAt = time.Now()
	}
	meta := src.Meta
	// The fork is this program's thread, whoever wrote the source.
	if s.opts.Version != "" {
		meta.CLIVersion = s.opts.Version
	}
	if opts.Adjust != nil {
		opts.Adjust(&meta)
	}
	meta.ID, meta.CreatedAt, meta.ForkedFromID = opts.NewID, opts.CreatedAt.UTC().Truncate(time.Millisecond), opts.SourceID

	first, err := metaLine(meta)
	if err != nil {
		return nil, err
	}
	dst := s.PathFor(meta.CreatedAt, meta.ID)
	// The copy streams from the source to the new file: memory holds one
	// record, not the thread.
	err = writeNewFile(dst, func(w io.Writer) error {
		if _, err := w.Write(first); err != nil {
			return err
		}
		return copyRecords(ctx, w, loc.Path, meta.ID, opts.LastTurnID, s.opts.Limits)
	})
	if err != nil {
		return nil, err
	}
	s.idx.touch(dst)
	s.idx.names.refresh()
	if name := s.idx.names.nameOf(opts.SourceID, src.Name); name != "" {
		if err := s.idx.names.set(meta.ID, name); err != nil {
			return nil, err
		}
	}
	t, err := ReadThread(ctx, dst, ReadOptions{Limits: s.opts.Limits})
	if err != nil {
		return nil, err
	}
	t.Name = s.idx.names.nameOf(meta.ID, t.Name)
	return t, nil
}

func hasTurn(t *Thread, id string) bool {
	for _, tn := range t.Turns {
		if tn.ID == id {
			return true
		}
	}
	return false
}

// copyRecords writes to w the source's valid records (all but its
// session_meta records) up to the end of turn last ("" for all), then
// format 1 thread names recorded later, then an abort record for the
// copied last turn if it had not ended. Records that name no turn (the
// reference's) belong to the turn open when they were written.
func copyRecords(ctx context.Context, w io.Writer, path, newID, last string, lim Limits) error {
	f, st, err := openRollout(path, lim)
	if err != nil {
		return err
	}
	defer f.Close()
	var out []byte // an event being written
	newline := []byte{'\n'}
	const (
		before = iota // copying up to the last turn
		inLast        // inside the last turn
		after         // past it: only names are copied
	)
	state := before
	var openTurn string // the last copied turn, while it has not ended
	// werr is the first write error: it ends the scan (copyOne's own
	// errors only skip a record).
	var werr error
	write := func(b []byte) error {
		if werr == nil {
			_, werr = w.Write(b)
		}
		return nil
	}
	var cur string // the turn that records naming none belong to
	copyOne := func(b []byte) error {
		l, err := parseLine(b, nil)
		if err != nil {
			return err
		}
		if !json.Valid(l.Payload) {
			return errors.New("unreadable payload")
		}
		if l.Type == LineSessionMeta {
			return nil
		}
		tid, bound := l.TurnID, turnBoundary(l)
		if tid == "" && bound != boundNone {
			var w struct {
				TurnID string `json:"turn_id"`
			}
			_ = json.Unmarshal(l.Payload, &w)
			tid = w.TurnID
		}
		if tid == "" {
			tid = cur
		}
		if last != "" {
			switch {
			case state == before && tid == last:
				state = inLast
			case state == inLast && tid != "" && tid != last:
				state = after
			}
		}
		if state == after && l.Type != LineThreadName {
			return nil
		}
		switch bound {
		case boundStart:
			openTurn, cur = tid, tid
		case boundComplete, boundAbort:
			if tid == openTurn {
				openTurn = ""
			}
			if bound == boundComplete && tid == cur {
				cur = ""
			}
		}
		if it, completed, ok := typedItemOf(l); ok {
			// The reference reads typed items only in the threads it
			// projects itself: the copy says them as events, as agentd
			// writes them.
			msg := core.EventMsg(core.ItemStarted{Item: it})
			if completed {
				msg = core.ItemCompleted{Item: it}
			}
			if out, err = appendEvent(out[:0], newID, l.time(), core.Event{TurnID: tid, Msg: msg}); err != nil {
				return err
			}
			return write(out)
		}
		_ = write(b)
		return write(newline)
	}
	if _, err := scanLines(ctx, f, st.Size(), readLimits(lim), func(b []byte, _ int, _ bool) error {
		_, _ = applyRecovering(b, copyOne)
		return werr
	}); err != nil {
		if werr != nil {
			return werr
		}
		return readErr(ctx, path, err)
	}
	if openTurn != "" {
		now := time.Now()
		if out, err = appendEvent(out[:0], newID, now, core.Event{TurnID: openTurn, Msg: core.TurnAborted{Reason: core.AbortInterrupted, CompletedAt: now}}); err != nil {
			return err
		}
		_ = write(out)
	}
	return werr
}

// typedItemOf returns the item of an item_started or item_completed
// record holding a typed item other than those agentd writes so too
// (writtenTyped); ok is false for any other record.
func typedItemOf(l line) (it core.TurnItem, completed, ok bool) {
	if l.Type != LineEventMsg {
		return nil, false, false
	}
	typ, _ := peekType(l.Payload)
	if typ != evItemStartedRef && typ != evItemCompletedRef {
		return nil, false, false
	}
	e, err := decodeTypedItem(l.Payload, typ == evItemCompletedRef)
	if err != nil {
		return nil, false, false
	}
	if writtenTyped(e.item) {
		return nil, false, false
	}
	return e.item, e.completed, true
}

// Turn boundaries, as turnBoundary finds them.
const (
	boundNone = iota
	boundStart
	boundComplete
	boundAbort
)

// turnBoundary says whether a record starts or ends a turn, in either
// format.
func turnBoundary(l line) int {
	if l.Type != LineEventMsg {
		return boundNone
	}
	typ, _ := peekType(l.Payload)
	switch typ {
	case evTaskStarted, evTurnStarted:
		return boundStart
	case evTaskComplete, evTurnComplete:
		return boundComplete
	case evTurnAbortedRef, evTurnAborted:
		return boundAbort
	}
	return boundNone
}

// writeNewFile creates path (which must not exist) with what write
// writes, fsynced, directory entry included. A failed write leaves no
// file.
func writeNewFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDatedDir(filepath.Dir(path))
}
