package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// TurnStatus is the status of a rebuilt turn, as the protocol names it.
type TurnStatus string

const (
	TurnCompleted   TurnStatus = "completed"
	TurnInterrupted TurnStatus = "interrupted"
	TurnFailed      TurnStatus = "failed"
	TurnInProgress  TurnStatus = "inProgress"
)

// Turn is one turn of the public view, rebuilt from the rollout.
type Turn struct {
	ID     string
	Kind   core.TurnKind
	Status TurnStatus
	// Error is why a failed turn failed.
	Error       *core.TurnError
	StartedAt   time.Time
	CompletedAt time.Time // zero when the turn never ended
	Duration    time.Duration
	// Items are the turn's items in the order they started, each in its
	// last recorded state. ItemTimes[i] belongs to Items[i].
	Items     []core.TurnItem
	ItemTimes []ItemTimes
}

// ItemTimes are when an item started and completed (millisecond precision;
// CompletedAt is zero for an item that never completed).
type ItemTimes struct {
	StartedAt   time.Time
	CompletedAt time.Time
}

// TokenUsage is the last token accounting of a thread and the turn it
// belongs to.
type TokenUsage struct {
	TurnID string
	Info   core.TokenUsageInfo
}

// Thread is everything rebuilt from one rollout file.
type Thread struct {
	Meta     SessionMeta
	Path     string
	Archived bool
	Name     string
	// Preview is the text of the first user message ("" before one).
	Preview   string
	CreatedAt time.Time
	// UpdatedAt is the file's modification time.
	UpdatedAt time.Time
	// History is the model history: response items in order, after
	// compactions and rollbacks.
	History []model.ResponseItem
	Turns   []Turn
	// TokenUsage is the last recorded usage, nil when none.
	TokenUsage *TokenUsage
	// TurnContext is the last recorded turn context, nil when none.
	TurnContext *TurnContext
	// LastTurnFailed reports that the last turn failed: the thread shows
	// systemError until its next turn starts.
	LastTurnFailed bool
	// Warnings list the records that were skipped (torn or unreadable).
	Warnings []string
}

// ReadOptions tune ReadThread.
type ReadOptions struct {
	// RunningTurnID names the turn a loaded thread is running: if it is
	// the last turn and has not ended, it is reported inProgress rather
	// than interrupted.
	RunningTurnID string
	// SkipHistory leaves Thread.History nil, for views that only need
	// turns and metadata.
	SkipHistory bool
}

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

// record is one decoded line, ready to be folded into the state.
type record struct {
	typ    string
	turnID string
	at     time.Time
	// One of these is set, by typ.
	meta      *wireMeta
	item      model.ResponseItem
	compacted *wireCompacted
	tc        *TurnContext
	name      *string
	rollback  int
	msg       core.EventMsg
	// started is an itemStarted event, kept undecoded: most items
	// complete later, and only the completed state is shown.
	started *startedItem
}

type startedItem struct {
	id  string
	raw []byte
}

// decodeRecord decodes one line. It is a pure function of its input, so
// the lines of a long thread are decoded in parallel; the result owns no
// part of b.
func decodeRecord(b []byte, ids interner, opts *ReadOptions) (record, error) {
	l, err := parseLine(b, ids)
	if err != nil {
		return record{}, err
	}
	r := record{typ: l.Type, turnID: l.TurnID, at: l.time()}
	switch l.Type {
	case LineSessionMeta:
		var w wireMeta
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.meta = &w
	case LineResponseItem:
		if opts.SkipHistory {
			break
		}
		if r.item, err = model.ParseResponseItem(l.Payload); err != nil {
			return record{}, err
		}
	case LineCompacted:
		var w wireCompacted
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.compacted = &w
	case LineTurnContext:
		var w wireTurnContext
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		tc := w.turnContext()
		r.tc = &tc
	case LineThreadName:
		var w wireThreadName
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.name = &w.Name
	case LineRollback:
		var w wireRollback
		if err := json.Unmarshal(l.Payload, &w); err != nil {
			return record{}, err
		}
		r.rollback = w.NumTurns
	case LineEventMsg:
		if typ, _ := peekType(l.Payload); typ == evItemStarted {
			raw, err := itemOfEvent(typ, l.Payload)
			if err != nil {
				return record{}, err
			}
			id, err := peekItemID(raw)
			if err != nil {
				return record{}, err
			}
			r.started = &startedItem{id: id, raw: bytes.Clone(raw)}
			break
		}
		r.msg, err = UnmarshalEvent(l.Payload)
		if errors.Is(err, ErrUnknownType) {
			r.msg = nil // written by a newer version: skipped
		} else if err != nil {
			return record{}, err
		}
	}
	return r, nil
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

// put adds an item or replaces the earlier state of the same item.
// put records an item's completed state, in the place of its started
// state when there was one.
func (ts *turnState) put(it core.TurnItem, at time.Time) {
	id := it.ItemID()
	if i, ok := ts.itemIdx[id]; ok && id != "" {
		ts.Items[i] = it
		ts.ItemTimes[i].CompletedAt = at
		delete(ts.pending, i)
		return
	}
	ts.add(id, it, ItemTimes{StartedAt: at, CompletedAt: at})
}

// putStarted records an item's start, keeping its state undecoded until
// finish shows it is needed.
func (ts *turnState) putStarted(s *startedItem, at time.Time) {
	if _, ok := ts.itemIdx[s.id]; ok && s.id != "" {
		return
	}
	if ts.pending == nil {
		ts.pending = map[int][]byte{}
	}
	ts.pending[len(ts.Items)] = s.raw
	ts.add(s.id, nil, ItemTimes{StartedAt: at})
}

func (ts *turnState) add(id string, it core.TurnItem, times ItemTimes) {
	if ts.itemIdx == nil {
		ts.itemIdx = map[string]int{}
	}
	ts.itemIdx[id] = len(ts.Items)
	ts.Items = append(ts.Items, it)
	ts.ItemTimes = append(ts.ItemTimes, times)
}

// decodePending decodes the items that started and never completed; one
// that cannot be decoded is dropped (with a warning, unless it is a kind
// of a newer version).
func (ts *turnState) decodePending(warn func(string)) {
	if len(ts.pending) == 0 {
		return
	}
	items, times := ts.Items[:0], ts.ItemTimes[:0]
	for i, it := range ts.Items {
		if raw, ok := ts.pending[i]; ok {
			var err error
			if it, err = UnmarshalItem(raw); err != nil {
				if !errors.Is(err, ErrUnknownType) {
					warn(fmt.Sprintf("turn %s: started item skipped: %v", ts.ID, err))
				}
				continue
			}
		}
		items = append(items, it)
		times = append(times, ts.ItemTimes[i])
	}
	ts.Items, ts.ItemTimes, ts.pending = items, times, nil
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

// settleItems fixes items a finished turn left open: a crash or an abort
// can leave an item started and never completed. A tool item is reported
// failed rather than running forever; a message or reasoning item that
// never received its content is dropped.
func (ts *turnState) settleItems() {
	items, times := ts.Items[:0], ts.ItemTimes[:0]
	for i, it := range ts.Items {
		if ts.ItemTimes[i].CompletedAt.IsZero() {
			var keep bool
			it, keep = settle(it)
			if !keep {
				continue
			}
		}
		items = append(items, it)
		times = append(times, ts.ItemTimes[i])
	}
	ts.Items, ts.ItemTimes = items, times
}

func settle(it core.TurnItem) (core.TurnItem, bool) {
	switch v := it.(type) {
	case core.CommandExecutionItem:
		if v.Status == core.StatusInProgress {
			v.Status = core.StatusFailed
		}
		return v, true
	case core.FileChangeItem:
		if v.Status == core.StatusInProgress {
			v.Status = core.StatusFailed
		}
		return v, true
	case core.DynamicToolCallItem:
		if v.Status == core.StatusInProgress {
			v.Status = core.StatusFailed
		}
		return v, true
	case core.AgentMessageItem:
		return v, v.Text != ""
	case core.ReasoningItem:
		return v, len(v.Summary) > 0 || len(v.Content) > 0
	}
	return it, true
}

// previewOf is the text of the first user message of the turns.
func previewOf(turns []Turn) string {
	for _, t := range turns {
		for _, it := range t.Items {
			if um, ok := it.(core.UserMessageItem); ok {
				return userText(um)
			}
		}
	}
	return ""
}

func userText(um core.UserMessageItem) string {
	var parts []string
	for _, in := range um.Content {
		if in.Kind == core.InputText && in.Text != "" {
			parts = append(parts, in.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func orTime(t, fallback time.Time) time.Time {
	if t.IsZero() {
		return fallback
	}
	return t
}
