package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	if r := s.recorder(opts.SourceID); r != nil {
		// Records still queued in the source belong in the copy.
		if err := r.Flush(ctx); err != nil {
			return nil, err
		}
	}
	loc, err := s.Find(opts.SourceID)
	if err != nil {
		return nil, err
	}
	src, err := ReadThread(loc.Path, ReadOptions{SkipHistory: true})
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

	out, err := metaLine(meta)
	if err != nil {
		return nil, err
	}
	out, err = copyRecords(out, loc.Path, meta.ID, opts.LastTurnID)
	if err != nil {
		return nil, err
	}
	dst := s.PathFor(meta.CreatedAt, meta.ID)
	if err := writeNewFile(dst, out); err != nil {
		return nil, err
	}
	s.idx.touch(dst)
	s.idx.names.refresh()
	if name := s.idx.names.nameOf(opts.SourceID, src.Name); name != "" {
		if err := s.idx.names.set(meta.ID, name); err != nil {
			return nil, err
		}
	}
	t, err := ReadThread(dst, ReadOptions{})
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

// copyRecords appends to out the source's valid records (all but its
// session_meta records) up to the end of turn last ("" for all), then
// format 1 thread names recorded later, then an abort record for the
// copied last turn if it had not ended. Records that name no turn (the
// reference's) belong to the turn open when they were written.
func copyRecords(out []byte, path, newID, last string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const (
		before = iota // copying up to the last turn
		inLast        // inside the last turn
		after         // past it: only names are copied
	)
	state := before
	var openTurn string // the last copied turn, while it has not ended
	var cur string      // the turn that records naming none belong to
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
			out, err = appendEvent(out, newID, l.time(), core.Event{TurnID: tid, Msg: msg})
			return err
		}
		out = append(out, b...)
		out = append(out, '\n')
		return nil
	}
	if _, err := scanLines(f, st.Size(), func(b []byte, _ int, _ bool) {
		_, _ = applyRecovering(b, copyOne)
	}); err != nil {
		return nil, err
	}
	if openTurn != "" {
		now := time.Now()
		return appendEvent(out, newID, now, core.Event{TurnID: openTurn, Msg: core.TurnAborted{Reason: core.AbortInterrupted, CompletedAt: now}})
	}
	return out, nil
}

// typedItemOf returns the item of an item_started or item_completed
// record holding a typed item other than a plan (which agentd writes so
// too); ok is false for any other record.
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
	if _, plan := e.item.(core.PlanItem); plan {
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

// writeNewFile creates path (which must not exist) with data, fsynced,
// directory entry included.
func writeNewFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDatedDir(filepath.Dir(path))
}
