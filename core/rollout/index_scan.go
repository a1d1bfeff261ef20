package rollout

import (
	"bytes"
	"encoding/json"
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
	Turns      []byte
	LastTurnID string
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
// last complete record.
func scanSummary(path string, prev *summary, offset int64) (*summary, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return nil, 0, err
		}
	}
	s, end, err := continueSummary(f, st.Size()-offset, prev)
	if err != nil {
		return nil, 0, err
	}
	return s, offset + end, nil
}

// continueSummary folds the records of r (about size bytes) into a copy of
// prev.
func continueSummary(r io.Reader, size int64, prev *summary) (*summary, int64, error) {
	s := &summary{}
	if prev != nil {
		*s = *prev
		s.Turns = slices.Clone(prev.Turns) // the previous summary may be in use
	}
	s.ids = interner{}
	end, err := scanLines(r, size, func(b []byte, _ int, _ bool) {
		_, _ = applyRecovering(b, s.apply)
	})
	s.ids = nil
	return s, end, err
}

var userMessageItemPrefix = []byte(`"item":{"type":"userMessage"`)

// apply folds one record into the summary; like rebuilder.apply it changes
// nothing when it fails.
func (s *summary) apply(b []byte) error {
	l, err := parseLine(b, s.ids)
	if err != nil {
		return err
	}
	switch l.Type {
	case LineSessionMeta:
		var w wireMeta
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return err
		}
		if !s.HasMeta {
			s.HasMeta, s.Meta = true, w.meta()
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

func (s *summary) event(l line) error {
	typ, err := peekType(l.Payload)
	if err != nil {
		return err
	}
	last := len(s.Turns) - 1
	current := last >= 0 && l.TurnID != "" && l.TurnID == s.LastTurnID
	switch typ {
	case evTurnStarted:
		var w wireTurnStarted
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return err
		}
		if l.TurnID == "" || l.TurnID == s.LastTurnID {
			return nil
		}
		code := turnOpen
		if w.Kind == string(core.TurnCompact) {
			code |= turnCompactBit
		}
		s.Turns = append(s.Turns, code)
		s.LastTurnID = l.TurnID
	case evTurnComplete:
		var w wireTurnComplete
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return err
		}
		if current {
			if w.Error != nil {
				s.setStatus(turnDoneFailed)
			} else {
				s.setStatus(turnDoneOK)
			}
		}
	case evTurnAborted:
		if current {
			s.setStatus(turnDoneInterrupted)
		}
	case evError:
		if current && s.Turns[last]&^turnCompactBit == turnOpen {
			s.setStatus(turnOpenErrored)
		}
	case evItemStarted, evItemCompleted:
		if s.PreviewTurn != 0 || !current || !bytes.Contains(l.Payload, userMessageItemPrefix) {
			return nil
		}
		msg, err := UnmarshalEvent(l.Payload)
		if err != nil {
			return err
		}
		var um core.UserMessageItem
		switch m := msg.(type) {
		case core.ItemStarted:
			um, _ = m.Item.(core.UserMessageItem)
		case core.ItemCompleted:
			um, _ = m.Item.(core.UserMessageItem)
		}
		if text := userText(um); text != "" {
			s.Preview, s.PreviewTurn = text, len(s.Turns)
		}
	}
	return nil
}

func (s *summary) setStatus(st byte) {
	i := len(s.Turns) - 1
	s.Turns[i] = s.Turns[i]&turnCompactBit | st
}

// rollback mirrors rebuilder.rollback on the turn codes.
func (s *summary) rollback(n int) {
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
