package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/core"
)

// summary is what the index knows of one rollout file: enough for a
// thread/list entry, folded from the records without decoding the history.
// It can be continued from where a previous scan stopped, because rollout
// files only grow.
type summary struct {
	HasMeta bool
	Meta    SessionMeta
	Name    string
	Preview string
	// PreviewTurn is the 1-based turn the preview came from; a rollback
	// that removes that turn clears the preview.
	PreviewTurn int
	// Turns holds one byte per visible turn: turnCompactBit and a
	// turnStatus.
	Turns []byte
	// LastTurnID is the id of the last turn ("" for an implicit one).
	LastTurnID string
	// CurOpen says records that name no turn belong to the last turn
	// (until it completes); CurExplicit that a start record opened it.
	CurOpen, CurExplicit bool
	// Model and Effort are those of the last turn context.
	Model   string
	Effort  string
	FirstAt time.Time

	ids interner // not saved: valid during one scan
}

// Turn status codes in summary.Turns.
const (
	turnOpen byte = iota
	turnOpenErrored
	turnDoneOK
	turnDoneInterrupted
	turnDoneFailed
	turnCompactBit byte = 0x80
)

func (s *summary) lastTurnFailed() bool {
	if len(s.Turns) == 0 {
		return false
	}
	st := s.Turns[len(s.Turns)-1] &^ turnCompactBit
	return st == turnDoneFailed || st == turnOpenErrored
}

// scanSummary continues sum (nil: from scratch) with the records of path
// from offset on. It returns the new summary and the offset just past the
// last complete record. A file that is not a rollout, or is larger than
// lim allows, is refused; a line longer than lim allows is skipped, as a
// damaged one is (reading the thread reports it).
func scanSummary(path string, prev *summary, offset int64, lim Limits) (*summary, int64, error) {
	f, st, err := openRollout(path, lim)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return summarizeFile(f, st.Size(), path, prev, offset, lim, false)
}

// summarizeFile continues prev with the records of f (of size bytes, at
// path) from offset on; head: only the first line (the session's meta).
// The file is read up to size only: what was appended since is for the
// next scan.
func summarizeFile(f *os.File, size int64, path string, prev *summary, offset int64, lim Limits, head bool) (*summary, int64, error) {
	if size > lim.maxFile() {
		return nil, 0, fileErr(path, fmt.Errorf("%w: it is %s, more than the limit of %s", ErrFileTooLarge, byteSize(size), byteSize(lim.maxFile())))
	}
	n := size - offset
	sl := summaryLimits(lim, offset)
	if head {
		// The meta line is read with one small read (a longer one is
		// read on, as any long line).
		n = min(n, headReadBytes)
		sl.stopAfter = 1
	}
	s, end, err := continueSummary(io.NewSectionReader(f, offset, size-offset), n, sl, prev)
	if err != nil {
		return nil, 0, fileErr(path, err)
	}
	return s, offset + end, nil
}

// headReadBytes sizes the read of a file's first line.
const headReadBytes = 8 << 10

// summaryLimits are the bounds of a summary's scan from offset on.
func summaryLimits(lim Limits, offset int64) scanLimits {
	return scanLimits{maxLine: lim.maxLine(), skipLong: true, maxBytes: max(lim.maxFile()-offset, 1), firstMeta: offset == 0}
}

// continueSummary folds the records of r (about size bytes) into a copy of
// prev.
func continueSummary(r io.Reader, size int64, lim scanLimits, prev *summary) (*summary, int64, error) {
	s := &summary{}
	if prev != nil {
		*s = *prev
		s.Turns = slices.Clone(prev.Turns) // the previous summary may be in use
	}
	s.ids = interner{}
	lines := 0
	end, err := scanLines(context.Background(), r, size, lim, func(b []byte, _ int, torn bool) error {
		// A last line without its newline is not folded in: the next
		// scan resumes before it and reads it whole (or its rest).
		if !torn {
			_, _ = applyRecovering(b, s.apply)
			if lines++; lines == lim.stopAfter {
				return errStopScan
			}
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	s.ids = nil
	return s, end, err
}

// errStopScan ends a scan of the first lines of a file.
var errStopScan = errors.New("rollout: enough lines read")

// errTornRecord is a line that is not one whole record.
var errTornRecord = errors.New("rollout: the line is not one whole record")

// summaryTypes are the record types a summary reads; it skips the others
// (history items, most of a file) without decoding them.
func summaryType(typ string) bool {
	switch typ {
	case LineSessionMeta, LineTurnContext, LineThreadName, LineRollback, LineEventMsg:
		return true
	}
	return false
}

// apply folds one record into the summary; like rebuilder.apply it changes
// nothing when it fails.
func (s *summary) apply(b []byte) error {
	if typ, ok := peekLineType(b); ok && !summaryType(typ) {
		// Skipped undecoded, but only when it is one whole record: a
		// torn record with a good one behind it on the line must fail,
		// so that the good one is found.
		if objectEnd(b) != len(b) {
			return errTornRecord
		}
		if s.FirstAt.IsZero() {
			if t, ok := parseTimestamp(b[len(prefixTimestamp) : len(prefixTimestamp)+min(24, len(b)-len(prefixTimestamp))]); ok {
				s.FirstAt = t
			}
		}
		return nil
	}
	l, err := parseLine(b, s.ids)
	if err != nil {
		return err
	}
	if l.TurnID != "" && objectEnd(l.Payload) != len(l.Payload) {
		// The fast parse of a line with a turnId does not check that
		// the payload ends the line; events skipped below would let a
		// torn record hide a good one behind it.
		return errTornRecord
	}
	switch l.Type {
	case LineSessionMeta:
		m, err := decodeMeta(l.Payload)
		if err != nil {
			return err
		}
		if !s.HasMeta {
			// A listing needs neither instructions (the reference's
			// base instructions are kilobytes, in every thread).
			m.BaseInstructions, m.DeveloperInstructions = "", ""
			s.HasMeta, s.Meta = true, m
		}
	case LineTurnContext:
		var w struct {
			Model  string `json:"model"`
			Effort string `json:"effort"`
		}
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return err
		}
		s.Model, s.Effort = w.Model, w.Effort
	case LineThreadName:
		var w wireThreadName
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return err
		}
		s.Name = w.Name
	case LineRollback:
		var w wireRollback
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return err
		}
		s.rollback(w.NumTurns)
	case LineEventMsg:
		if err := s.event(l); err != nil {
			return err
		}
	}
	if s.FirstAt.IsZero() {
		s.FirstAt = l.time()
	}
	return nil
}

// summaryEvents are the event types a summary decodes.
func summaryEvent(typ string) bool {
	switch typ {
	case evErrorRef, evUserMessage, evThreadRolledBack, evTurnStarted, evTurnComplete, evTurnAborted:
		return true
	}
	return false
}

var (
	userMessageItemV1    = []byte(`"item":{"type":"userMessage"`)
	userMessageItemTyped = []byte(`"type":"UserMessage"`)
)

func (s *summary) event(l line) error {
	typ, err := peekType(l.Payload)
	if err != nil {
		return err
	}
	var e evRec
	switch {
	case typ == evUserMessage && l.TurnID != "" && l.TurnID == s.LastTurnID && s.PreviewTurn != 0:
		return nil // agentd's, in the current turn, after the preview: nothing to learn
	case typ == evTaskStarted || typ == evTaskComplete || typ == evTurnAbortedRef:
		if e, err = turnFacts(typ, l); err != nil {
			return err
		}
	case summaryEvent(typ):
		if e, err = decodeEvent(l.Payload); err != nil {
			return err
		}
	case (typ == evItemStarted || typ == evItemCompleted) && bytes.Contains(l.Payload, userMessageItemV1),
		typ == evItemCompletedRef && bytes.Contains(l.Payload, userMessageItemTyped):
		if s.PreviewTurn != 0 {
			return nil
		}
		if e, err = decodeEvent(l.Payload); err != nil {
			return err
		}
		if e.kind == evkStarted {
			it, err := e.started.decode()
			if err != nil {
				return err
			}
			e = evRec{kind: evkItem, item: it}
		}
	default:
		return nil
	}
	tid := l.TurnID
	if tid == "" {
		tid = e.turnID
	}
	last := len(s.Turns) - 1
	// current: the record belongs to the last turn.
	current := last >= 0 && ((tid == "" && s.CurOpen) || (tid != "" && tid == s.LastTurnID))
	switch e.kind {
	case evkTurnStarted:
		if tid == "" || tid == s.LastTurnID {
			return nil
		}
		s.openTurn(tid, e.turnKind == core.TurnCompact)
	case evkTurnComplete:
		if current {
			if e.err != nil {
				s.setStatus(turnDoneFailed)
			} else {
				s.setStatus(turnDoneOK)
			}
			s.CurOpen = false
		}
	case evkTurnAborted:
		if current {
			s.setStatus(turnDoneInterrupted)
		}
	case evkError:
		if current && s.Turns[last]&^turnCompactBit == turnOpen {
			s.setStatus(turnOpenErrored)
		}
	case evkRollback:
		s.rollback(e.numTurns)
	case evkNewItem, evkItem:
		um, ok := e.item.(core.UserMessageItem)
		if !ok {
			return nil
		}
		switch {
		case tid == "":
			// A user message that names no turn opens an implicit turn
			// unless an explicit one is current (as the rebuild does).
			if !s.CurOpen || !s.CurExplicit {
				s.Turns = append(s.Turns, turnDoneOK)
				s.LastTurnID, s.CurOpen, s.CurExplicit = "", true, false
			}
		case tid != s.LastTurnID:
			s.openTurn(tid, false) // its start record was lost
		}
		if text := userText(um); text != "" && s.PreviewTurn == 0 {
			s.Preview, s.PreviewTurn = text, len(s.Turns)
		}
	}
	return nil
}

// openTurn records the start of explicit turn id.
func (s *summary) openTurn(id string, compact bool) {
	code := turnOpen
	if compact {
		code |= turnCompactBit
	}
	s.Turns = append(s.Turns, code)
	s.LastTurnID, s.CurOpen, s.CurExplicit = id, true, true
}

func (s *summary) setStatus(st byte) {
	i := len(s.Turns) - 1
	s.Turns[i] = s.Turns[i]&turnCompactBit | st
}

// rollback mirrors rebuilder.rollback on the turn codes.
func (s *summary) rollback(n int) {
	s.CurOpen = false
	cut := len(s.Turns)
	for cut > 0 && n > 0 {
		cut--
		if s.Turns[cut]&turnCompactBit == 0 {
			n--
		}
	}
	if cut == len(s.Turns) {
		return
	}
	s.Turns = s.Turns[:cut]
	// The id of the new last turn is not kept; records of it are no
	// longer expected after a rollback, which happens between turns.
	s.LastTurnID = ""
	if s.PreviewTurn > cut {
		s.Preview, s.PreviewTurn = "", 0
	}
}

var (
	compactTurnKind = []byte(`"agentd_turn_kind":"compact"`)
	errorMember     = []byte(`"error":{`)
)

// turnFacts reads what a summary needs of a turn record of format 2: the
// turn it names, whether it compacts (task_started) and whether it failed
// (task_complete). agentd's records name their turn in the envelope and are
// only searched (a member name cannot occur unescaped inside a string);
// others are decoded.
func turnFacts(typ string, l line) (evRec, error) {
	kind := evkTurnAborted
	switch typ {
	case evTaskStarted:
		kind = evkTurnStarted
	case evTaskComplete:
		kind = evkTurnComplete
	}
	e := evRec{kind: kind, turnID: l.TurnID, turnKind: core.TurnRegular}
	compact, failed := false, false
	if l.TurnID != "" {
		compact, failed = bytes.Contains(l.Payload, compactTurnKind), bytes.Contains(l.Payload, errorMember)
	} else {
		var w struct {
			TurnID string          `json:"turn_id"`
			Kind   string          `json:"agentd_turn_kind"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return evRec{}, err
		}
		e.turnID = w.TurnID
		compact, failed = w.Kind == string(core.TurnCompact), len(w.Error) > 0 && string(w.Error) != "null"
	}
	if compact {
		e.turnKind = core.TurnCompact
	}
	if failed && kind == evkTurnComplete {
		e.err = &core.TurnError{}
	}
	return e, nil
}
