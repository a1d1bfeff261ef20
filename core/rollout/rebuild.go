package rollout

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// ReadThread rebuilds a thread from its rollout file. It never refuses a
// thread because of damaged records: torn and unreadable lines are skipped
// and listed in Thread.Warnings. It refuses a file that is not a rollout
// (not a regular file, no session_meta first line) or is beyond
// opts.Limits, with a *FileError; it stops with ctx's error when ctx ends.
func ReadThread(ctx context.Context, path string, opts ReadOptions) (*Thread, error) {
	f, st, err := openRollout(path, opts.Limits)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := rebuild(ctx, f, st.Size(), path, opts)
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
func rebuild(ctx context.Context, r io.Reader, size int64, path string, opts ReadOptions) (*Thread, error) {
	rb := newRebuilder(path, opts)
	b := batches.Get().(*batch)
	defer batches.Put(b)
	b.reset()
	b.reserve(size)
	if _, err := scanLines(ctx, r, size, readLimits(opts.Limits), func(l []byte, n int, torn bool) error {
		if b.add(l, n, torn) {
			rb.foldBatch(b)
		}
		return nil
	}); err != nil {
		return nil, readErr(ctx, path, err)
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
	ended bool
	// explicit: a turn start record opened the turn (the reference's
	// oldest files have none: a user message opens an implicit turn).
	explicit bool
	// sawCompaction keeps a turn that only compacted the history.
	sawCompaction bool
	errSeen       *core.TurnError
	itemIdx       map[string]int
	// pending holds the undecoded started state of items, by index.
	pending map[int]*startedItem
	// rb numbers the items added (ItemOrdinals).
	rb *rebuilder
}

type rebuilder struct {
	path     string
	opts     ReadOptions
	t        Thread
	metaSeen bool
	history  []histEntry
	turns    []*turnState
	byID     map[string]*turnState
	// cur is the turn that records naming no turn belong to: the last
	// one opened, until it completes.
	cur *turnState
	// items counts the message, reasoning and compaction items, which the
	// reference numbers item-1, item-2, … when a record gives no id.
	items int
	// records counts the records the reference keeps when it loads a
	// thread: it names a turn no record opened after the index of the
	// record that opened it.
	records int
	usages  []TokenUsage
	firstAt time.Time
	// line is the number of the line being folded, itemOrd the ordinal
	// of the last item added.
	line, itemOrd int
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
			rb.t.Meta = *r.meta
		}
	case LineResponseItem:
		if !r.item.IsZero() {
			rb.history = append(rb.history, histEntry{turnID: rb.turnIDOf(r.turnID), item: r.item})
		}
	case LineCompacted:
		if !rb.opts.SkipHistory {
			rb.history = rb.history[:0]
			for _, it := range r.compacted.ReplacementHistory {
				rb.history = append(rb.history, histEntry{item: it})
			}
		}
		rb.itemTurn(r.turnID, r).sawCompaction = true
	case LineTurnContext:
		rb.t.TurnContext = r.tc
	case LineThreadName:
		rb.t.Name = *r.name
	case LineRollback:
		rb.rollback(r.rollback)
	case LineEventMsg:
		if r.ev != nil {
			rb.event(r, r.ev)
		}
	}
	if rb.firstAt.IsZero() {
		rb.firstAt = r.at
	}
	if referenceKeeps(r) {
		rb.records++
	}
}

// referenceKeeps says whether the reference keeps a record when it loads a
// thread (it drops the records of types it does not know, and the events
// its persistence policy leaves out).
func referenceKeeps(r *record) bool {
	switch r.typ {
	case LineSessionMeta, LineResponseItem, LineTurnContext, LineCompacted, "world_state", "token_usage_record":
		return true
	case LineEventMsg:
		switch r.evType {
		case evErrorRef, evExecBegin, evExecEnd, evDynamicRequest, evDynamicResponse:
			return false
		}
		// The reference's event types are snake_case (format 1's are
		// camelCase); it knows those agentd does not decode.
		return r.evType != "" && strings.Trim(r.evType, "abcdefghijklmnopqrstuvwxyz_") == ""
	}
	return false
}

func (rb *rebuilder) turnIDOf(id string) string {
	if id == "" && rb.cur != nil {
		return rb.cur.ID
	}
	return id
}

// ended finds the turn an end record names, or the current one.
func (rb *rebuilder) ended(id string) *turnState {
	if id == "" {
		return rb.cur
	}
	return rb.byID[id]
}

func (rb *rebuilder) event(r *record, e *evRec) {
	tid := r.turnID
	if tid == "" {
		tid = e.turnID
	}
	switch e.kind {
	case evkTurnStarted:
		if tid == "" || rb.byID[tid] != nil {
			return
		}
		ts := &turnState{Turn: Turn{ID: tid, Kind: e.turnKind, StartedAt: eventTime(e.at, r.at), Ordinal: rb.line}, explicit: true, rb: rb}
		rb.turns = append(rb.turns, ts)
		rb.byID[tid] = ts
		rb.cur = ts
	case evkTurnComplete:
		ts := rb.ended(tid)
		if ts == nil {
			return
		}
		// Only the end record's error fails a turn that ended, as the
		// reference reads it; an error record fails a turn that never
		// ended.
		ts.ended = true
		ts.Status = TurnCompleted
		if e.err != nil {
			ts.Status, ts.Error = TurnFailed, e.err
		}
		ts.CompletedAt, ts.Duration = eventTime(e.at, r.at), e.duration
		if rb.cur == ts {
			rb.cur = nil
		}
	case evkTurnAborted:
		// The turn stays current, as the reference keeps it.
		if ts := rb.ended(tid); ts != nil {
			ts.ended = true
			ts.Status = TurnInterrupted
			ts.CompletedAt, ts.Duration = eventTime(e.at, r.at), e.duration
		}
	case evkError:
		if ts := rb.ended(tid); ts != nil {
			ts.errSeen = e.err
		}
	case evkTokenCount:
		rb.usages = append(rb.usages, TokenUsage{TurnID: rb.turnIDOf(tid), Info: e.info})
	case evkItem:
		ts := rb.itemTurn(tid, r)
		at := eventTime(e.at, r.at)
		if e.completed {
			ts.put(e.item, at)
		} else {
			ts.start(e.item, at)
		}
	case evkStarted:
		if tid != "" {
			rb.turn(tid, r.at).putStarted(e.started, r.at)
		}
	case evkNewItem:
		rb.newItem(tid, r, e.item)
	case evkReasoning:
		rb.reasoning(tid, r, e)
	case evkRollback:
		rb.rollback(e.numTurns)
	}
}

// eventTime is the time a payload gives, or the record's: payloads of
// format 2 give whole seconds, and the record's time is the same second
// with milliseconds.
func eventTime(given, record time.Time) time.Time {
	if given.IsZero() || (given.Nanosecond() == 0 && given.Unix() == record.Unix()) {
		return record
	}
	return given
}

// newItem adds a message or compaction item, numbering it when the record
// gives no id.
func (rb *rebuilder) newItem(tid string, r *record, it core.TurnItem) {
	if am, ok := it.(core.AgentMessageItem); ok && am.Text == "" {
		return
	}
	rb.items++
	if it.ItemID() == "" {
		it = withID(it, fmt.Sprintf("item-%d", rb.items))
	}
	var ts *turnState
	if _, ok := it.(core.UserMessageItem); ok && tid == "" {
		ts = rb.userTurn(r)
	} else {
		ts = rb.itemTurn(tid, r)
	}
	ts.put(it, r.at)
}

// reasoning adds a summary or raw part: to the item it names, or, when it
// names none, to the turn's last item if that is reasoning (as the
// reference reads its own records).
func (rb *rebuilder) reasoning(tid string, r *record, e *evRec) {
	if e.text == "" {
		return
	}
	ts := rb.itemTurn(tid, r)
	i := -1
	if e.itemID != "" {
		if j, ok := ts.itemIdx[e.itemID]; ok {
			i = j
		}
	} else if n := len(ts.Items); n > 0 {
		if _, ok := ts.Items[n-1].(core.ReasoningItem); ok {
			i = n - 1
		}
	}
	if i < 0 {
		rb.items++
		id := e.itemID
		if id == "" {
			id = fmt.Sprintf("item-%d", rb.items)
		}
		ts.add(id, core.ReasoningItem{ID: id}, ItemTimes{StartedAt: r.at})
		i = len(ts.Items) - 1
	}
	rs, ok := ts.Items[i].(core.ReasoningItem)
	if !ok {
		return
	}
	if e.raw {
		rs.Content = append(slices.Clip(rs.Content), e.text)
	} else {
		rs.Summary = append(slices.Clip(rs.Summary), e.text)
	}
	ts.Items[i] = rs
	ts.ItemTimes[i].CompletedAt = r.at
}

func withID(it core.TurnItem, id string) core.TurnItem {
	switch v := it.(type) {
	case core.UserMessageItem:
		v.ID = id
		return v
	case core.AgentMessageItem:
		v.ID = id
		return v
	case core.ContextCompactionItem:
		v.ID = id
		return v
	case core.EnteredReviewModeItem:
		v.ID = id
		return v
	case core.ExitedReviewModeItem:
		v.ID = id
		return v
	}
	return it
}

// itemTurn is the turn a record's item belongs to: the one it names
// (started now if its start was lost), else the current one, else a new
// implicit turn.
func (rb *rebuilder) itemTurn(tid string, r *record) *turnState {
	if tid != "" {
		return rb.turn(tid, r.at)
	}
	if rb.cur == nil {
		rb.cur = rb.implicitTurn(r)
	}
	return rb.cur
}

// userTurn is the turn of a user message that names none: the current
// explicit turn, else a new implicit one (each user message of the
// reference's oldest files opens a turn).
func (rb *rebuilder) userTurn(r *record) *turnState {
	if c := rb.cur; c != nil && !c.explicit && !(c.sawCompaction && len(c.Items) == 0) {
		rb.cur = nil
	}
	return rb.itemTurn("", r)
}

// implicitTurn opens a turn no record opened. The reference names it
// after the index of the record that opened it among those it keeps, so
// it is the same at every reading.
func (rb *rebuilder) implicitTurn(r *record) *turnState {
	id := "rollout-" + strconv.Itoa(rb.records)
	ts := &turnState{Turn: Turn{ID: id, Kind: core.TurnRegular, StartedAt: r.at, Ordinal: rb.line}, rb: rb}
	rb.turns = append(rb.turns, ts)
	rb.byID[id] = ts
	return ts
}

// turn returns the state of turn id, starting it if its start record was
// lost.
func (rb *rebuilder) turn(id string, at time.Time) *turnState {
	if ts := rb.byID[id]; ts != nil {
		return ts
	}
	ts := &turnState{Turn: Turn{ID: id, Kind: core.TurnRegular, StartedAt: at, Ordinal: rb.line}, explicit: true, rb: rb}
	rb.turns = append(rb.turns, ts)
	rb.byID[id] = ts
	return ts
}

// rollback drops the last n user turns (compaction turns are not counted,
// but are dropped with the user turns around them) together with their
// history items, usage and view.
func (rb *rebuilder) rollback(n int) {
	rb.cur = nil
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
	// The span starts after everything kept: a kept turn's item may come
	// after a dropped turn opened (a late item, or several on one line).
	from := rb.turns[cut].Ordinal
	for _, ts := range rb.turns[:cut] {
		from = max(from, ts.Ordinal+1)
		for _, o := range ts.ItemOrdinals {
			from = max(from, o+1)
		}
	}
	rb.t.Reverted = append(rb.t.Reverted, OrdinalSpan{From: from, To: max(rb.line, rb.itemOrd)})
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
	// The reference numbers the items after a rollback from those left.
	rb.items = 0
	for _, ts := range rb.turns {
		rb.items += len(ts.Items)
	}
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
			case !ts.explicit:
				ts.Status = TurnCompleted // as the reference reports the turns no record opened
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
