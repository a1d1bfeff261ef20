package rollout

import (
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// ReadThread rebuilds a thread from its rollout file. It never refuses a
// thread because of damaged records: torn and unreadable lines are skipped
// and listed in Thread.Warnings; only a file that cannot be read is an
// error.
func ReadThread(path string, opts ReadOptions) (*Thread, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t, err := rebuild(f, st.Size(), path, opts)
	if err != nil {
		return nil, err
	}
	t.UpdatedAt = st.ModTime()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = st.ModTime()
	}
	return t, nil
}

// rebuild folds the records of r (size bytes of the file at path). Lines
// are read in batches; each batch is decoded in parallel and then folded in
// order.
func rebuild(r io.Reader, size int64, path string, opts ReadOptions) (*Thread, error) {
	rb := newRebuilder(path, opts)
	b := batches.Get().(*batch)
	defer batches.Put(b)
	b.reset()
	if _, err := scanLines(r, size, func(l []byte, n int, torn bool) {
		if b.add(l, n, torn) {
			rb.foldBatch(b)
		}
	}); err != nil {
		return nil, err
	}
	rb.foldBatch(b)
	return rb.finish(), nil
}

type histEntry struct {
	turnID string
	item   model.ResponseItem
}

type turnState struct {
	Turn
	ended   bool
	errSeen *core.TurnError
	itemIdx map[string]int
	// pending holds the undecoded started state of items, by index.
	pending map[int][]byte
}

type rebuilder struct {
	path     string
	opts     ReadOptions
	t        Thread
	metaSeen bool
	history  []histEntry
	turns    []*turnState
	byID     map[string]*turnState
	usages   []TokenUsage
	firstAt  time.Time
}

func newRebuilder(path string, opts ReadOptions) *rebuilder {
	return &rebuilder{path: path, opts: opts, t: Thread{Path: path}, byID: map[string]*turnState{}}
}

// fold applies a decoded record to the state.
func (rb *rebuilder) fold(r *record) {
	switch r.typ {
	case LineSessionMeta:
		if !rb.metaSeen {
			rb.metaSeen = true
			rb.t.Meta = r.meta.meta()
		}
	case LineResponseItem:
		if !r.item.IsZero() {
			rb.history = append(rb.history, histEntry{turnID: r.turnID, item: r.item})
		}
	case LineCompacted:
		if !rb.opts.SkipHistory {
			rb.history = rb.history[:0]
			for _, it := range r.compacted.ReplacementHistory {
				rb.history = append(rb.history, histEntry{item: it})
			}
		}
	case LineTurnContext:
		rb.t.TurnContext = r.tc
	case LineThreadName:
		rb.t.Name = *r.name
	case LineRollback:
		rb.rollback(r.rollback)
	case LineEventMsg:
		if r.started != nil {
			if ts := rb.turn(r.turnID, r.at); ts != nil {
				ts.putStarted(r.started, r.at)
			}
		} else if r.msg != nil {
			rb.event(r.turnID, r.at, r.msg)
		}
	}
	if rb.firstAt.IsZero() {
		rb.firstAt = r.at
	}
}

func (rb *rebuilder) event(turnID string, at time.Time, msg core.EventMsg) {
	switch m := msg.(type) {
	case core.TurnStarted:
		if turnID == "" || rb.byID[turnID] != nil {
			return
		}
		start := m.StartedAt
		if start.IsZero() {
			start = at
		}
		ts := &turnState{Turn: Turn{ID: turnID, Kind: m.Kind, StartedAt: start}}
		rb.turns = append(rb.turns, ts)
		rb.byID[turnID] = ts
	case core.ItemCompleted:
		if ts := rb.turn(turnID, at); ts != nil && m.Item != nil {
			ts.put(m.Item, at)
		}
	case core.TurnComplete:
		if ts := rb.byID[turnID]; ts != nil {
			ts.ended = true
			ts.Status = TurnCompleted
			if m.Error != nil {
				e := *m.Error
				ts.Status, ts.Error = TurnFailed, &e
			}
			ts.CompletedAt, ts.Duration = orTime(m.CompletedAt, at), m.Duration
		}
	case core.TurnAborted:
		if ts := rb.byID[turnID]; ts != nil {
			ts.ended = true
			ts.Status = TurnInterrupted
			ts.CompletedAt, ts.Duration = orTime(m.CompletedAt, at), m.Duration
		}
	case core.Error:
		if ts := rb.byID[turnID]; ts != nil {
			e := m.Err
			ts.errSeen = &e
		}
	case core.TokenCount:
		rb.usages = append(rb.usages, TokenUsage{TurnID: turnID, Info: m.Info})
	}
}

// turn returns the state of turn id, starting it if its TurnStarted record
// was lost. Items outside any turn are not part of the public view.
func (rb *rebuilder) turn(id string, at time.Time) *turnState {
	if id == "" {
		return nil
	}
	if ts := rb.byID[id]; ts != nil {
		return ts
	}
	ts := &turnState{Turn: Turn{ID: id, Kind: core.TurnRegular, StartedAt: at}}
	rb.turns = append(rb.turns, ts)
	rb.byID[id] = ts
	return ts
}

// rollback drops the last n user turns (compaction turns are not counted,
// but are dropped with the user turns around them) together with their
// history items, usage and view.
func (rb *rebuilder) rollback(n int) {
	cut := len(rb.turns)
	for cut > 0 && n > 0 {
		cut--
		if rb.turns[cut].Kind != core.TurnCompact {
			n--
		}
	}
	if cut == len(rb.turns) {
		return
	}
	dropped := map[string]bool{}
	for _, ts := range rb.turns[cut:] {
		dropped[ts.ID] = true
		delete(rb.byID, ts.ID)
	}
	rb.turns = rb.turns[:cut]
	h := rb.history[:0]
	for _, e := range rb.history {
		if !dropped[e.turnID] {
			h = append(h, e)
		}
	}
	rb.history = h
	u := rb.usages[:0]
	for _, x := range rb.usages {
		if !dropped[x.TurnID] {
			u = append(u, x)
		}
	}
	rb.usages = u
}

func (rb *rebuilder) finish() *Thread {
	t := &rb.t
	if !rb.metaSeen {
		t.Meta.ID = threadIDFromFileName(filepath.Base(rb.path))
	}
	t.CreatedAt = t.Meta.CreatedAt
	if t.CreatedAt.IsZero() {
		t.CreatedAt = rb.firstAt
	}
	if !rb.opts.SkipHistory {
		t.History = make([]model.ResponseItem, len(rb.history))
		for i, e := range rb.history {
			t.History[i] = e.item
		}
	}
	t.Turns = make([]Turn, len(rb.turns))
	for i, ts := range rb.turns {
		ts.decodePending(func(w string) { t.Warnings = append(t.Warnings, rb.path+": "+w) })
		last := i == len(rb.turns)-1
		if !ts.ended {
			switch {
			case last && ts.ID == rb.opts.RunningTurnID:
				ts.Status = TurnInProgress
			case ts.errSeen != nil:
				ts.Status, ts.Error = TurnFailed, ts.errSeen
			default:
				ts.Status = TurnInterrupted
			}
		}
		if ts.Status == TurnFailed && ts.Error == nil {
			ts.Error = ts.errSeen
		}
		if ts.Status != TurnInProgress {
			ts.settleItems()
		}
		t.Turns[i] = ts.Turn
	}
	if n := len(t.Turns); n > 0 {
		t.LastTurnFailed = t.Turns[n-1].Status == TurnFailed
	}
	t.Preview = previewOf(t.Turns)
	if n := len(rb.usages); n > 0 {
		u := rb.usages[n-1]
		t.TokenUsage = &u
	}
	return t
}

func orTime(t, fallback time.Time) time.Time {
	if t.IsZero() {
		return fallback
	}
	return t
}
