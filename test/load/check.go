package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Checker follows what one subscriber (a connection) receives, thread by
// thread, and records every violation of the two guarantees the harness
// fails on:
//
//   - Authoritative events arrive once each and in order: per turn,
//     turn/started before its items, each item's item/started before its
//     item/completed, every item of a turn completed before its
//     turn/completed; nothing twice, nothing after its end. A lost event
//     shows up as the next one arriving out of place, or at Finish as a
//     turn or item left open.
//   - Text arrives whole: the item/agentMessage/delta texts of an item,
//     joined in order, equal the text of its item/completed.
//
// A Checker is used by one goroutine (the connection's reader) until the
// scenario reads its results, after the connection's last event.
type Checker struct {
	name    string
	threads map[string]*threadLog
	errs    []string
	dropped int // violations past maxErrors, counted only
}

// maxErrors bounds the violations kept per subscriber: the first ones say
// what went wrong.
const maxErrors = 10

// threadLog is what a subscriber has seen of one thread.
type threadLog struct {
	turns map[string]turnState
	items map[string]*itemState
	// log is the authoritative sequence ("turn/started <id>", …), which
	// every subscriber of the thread must see the same.
	log []string
}

type turnState uint8

const (
	turnOpen turnState = iota + 1
	turnDone
)

type itemState struct {
	turn   string
	typ    string
	done   bool
	deltas int
	text   strings.Builder // joined agentMessage deltas, until completed
}

// NewChecker returns a checker for the subscriber name (used in messages).
func NewChecker(name string) *Checker {
	return &Checker{name: name, threads: map[string]*threadLog{}}
}

func (c *Checker) thread(id string) *threadLog {
	t, ok := c.threads[id]
	if !ok {
		t = &threadLog{turns: map[string]turnState{}, items: map[string]*itemState{}}
		c.threads[id] = t
	}
	return t
}

func (c *Checker) failf(format string, args ...any) {
	if len(c.errs) >= maxErrors {
		c.dropped++
		return
	}
	c.errs = append(c.errs, c.name+": "+fmt.Sprintf(format, args...))
}

// TurnStarted records turn/started.
func (c *Checker) TurnStarted(thread, turn string) {
	t := c.thread(thread)
	t.log = append(t.log, "turn/started "+turn)
	if s := t.turns[turn]; s != 0 {
		c.failf("thread %s: turn/started for turn %s again (duplicated, or after its turn/completed)", thread, turn)
		return
	}
	t.turns[turn] = turnOpen
}

// ItemStarted records item/started.
func (c *Checker) ItemStarted(thread, turn, item, typ string) {
	t := c.thread(thread)
	t.log = append(t.log, "item/started "+item)
	c.turnMustBeOpen(t, thread, turn, "item/started for item "+item)
	if _, ok := t.items[item]; ok {
		c.failf("thread %s: item/started for item %s again (duplicated)", thread, item)
		return
	}
	t.items[item] = &itemState{turn: turn, typ: typ}
}

// AgentDelta records an item/agentMessage/delta.
func (c *Checker) AgentDelta(thread, turn, item string, delta []byte) {
	t := c.thread(thread)
	it, ok := t.items[item]
	switch {
	case !ok:
		c.failf("thread %s: agentMessage delta for item %s before its item/started (lost or reordered)", thread, item)
	case it.done:
		c.failf("thread %s: agentMessage delta for item %s after its item/completed (reordered)", thread, item)
	default:
		it.deltas++
		it.text.Write(delta)
	}
}

// ItemCompleted records item/completed; text is the item's text for an
// agentMessage.
func (c *Checker) ItemCompleted(thread, turn, item, typ, text string) {
	t := c.thread(thread)
	t.log = append(t.log, "item/completed "+item)
	c.turnMustBeOpen(t, thread, turn, "item/completed for item "+item)
	it, ok := t.items[item]
	switch {
	case !ok:
		c.failf("thread %s: item/completed for item %s without its item/started (lost or reordered)", thread, item)
		return
	case it.done:
		c.failf("thread %s: item/completed for item %s again (duplicated)", thread, item)
		return
	}
	it.done = true
	if typ == "agentMessage" {
		if got := it.text.String(); got != text {
			c.failf("thread %s: the text of item %s did not arrive whole: %d deltas joined give %d bytes %s, item/completed has %d bytes %s",
				thread, item, it.deltas, len(got), clip(got), len(text), clip(text))
		}
	}
	it.text = strings.Builder{} // the text is checked: free it
}

// TurnCompleted records turn/completed.
func (c *Checker) TurnCompleted(thread, turn string) {
	t := c.thread(thread)
	t.log = append(t.log, "turn/completed "+turn)
	switch t.turns[turn] {
	case 0:
		c.failf("thread %s: turn/completed for turn %s without its turn/started (lost or reordered)", thread, turn)
	case turnDone:
		c.failf("thread %s: turn/completed for turn %s again (duplicated)", thread, turn)
	}
	t.turns[turn] = turnDone
	for _, id := range t.openItems(turn) {
		c.failf("thread %s: turn/completed for turn %s while item %s is open (its item/completed lost or reordered)", thread, turn, id)
	}
}

func (c *Checker) turnMustBeOpen(t *threadLog, thread, turn, what string) {
	switch t.turns[turn] {
	case 0:
		c.failf("thread %s: %s of turn %s before the turn's turn/started (lost or reordered)", thread, what, turn)
	case turnDone:
		c.failf("thread %s: %s of turn %s after the turn's turn/completed (reordered)", thread, what, turn)
	}
}

// openItems lists the items of turn (every turn when turn is "") that
// started and did not complete, sorted.
func (t *threadLog) openItems(turn string) []string {
	var out []string
	for id, it := range t.items {
		if !it.done && (turn == "" || it.turn == turn) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Finish records what was left open once the subscriber's last event has
// arrived: a turn without turn/completed, an item without item/completed.
func (c *Checker) Finish() {
	for _, thread := range slices.Sorted(maps.Keys(c.threads)) {
		t := c.threads[thread]
		for _, turn := range slices.Sorted(maps.Keys(t.turns)) {
			if t.turns[turn] == turnOpen {
				c.failf("thread %s: turn %s never completed (turn/completed lost)", thread, turn)
			}
		}
		for _, id := range t.openItems("") {
			c.failf("thread %s: item %s never completed (item/completed lost)", thread, id)
		}
	}
}

// Errors returns the violations recorded, with a count of those left out.
func (c *Checker) Errors() []string {
	out := slices.Clone(c.errs)
	if c.dropped > 0 {
		out = append(out, fmt.Sprintf("%s: and %d more violations", c.name, c.dropped))
	}
	return out
}

// Log returns the authoritative sequence the subscriber saw on thread.
func (c *Checker) Log(thread string) []string {
	if t, ok := c.threads[thread]; ok {
		return t.log
	}
	return nil
}

// Count returns how many items of type typ completed on thread, and how
// many turns completed.
func (c *Checker) Count(thread, typ string) (items, turns int) {
	t, ok := c.threads[thread]
	if !ok {
		return 0, 0
	}
	for _, it := range t.items {
		if it.done && it.typ == typ {
			items++
		}
	}
	for _, s := range t.turns {
		if s == turnDone {
			turns++
		}
	}
	return items, turns
}

// SameLog reports how subscriber b's authoritative sequence on thread
// differs from a's (nil when equal): all subscribers of a thread must see
// the same events in the same order.
func SameLog(a, b *Checker, thread string) error {
	la, lb := a.Log(thread), b.Log(thread)
	n := min(len(la), len(lb))
	for i := range n {
		if la[i] != lb[i] {
			return fmt.Errorf("thread %s: %s saw %q as authoritative event %d, %s saw %q", thread, b.name, lb[i], i+1, a.name, la[i])
		}
	}
	if len(la) != len(lb) {
		return fmt.Errorf("thread %s: %s saw %d authoritative events, %s saw %d", thread, b.name, len(lb), a.name, len(la))
	}
	return nil
}

// clip quotes s, cut to a readable length.
func clip(s string) string {
	const limit = 60
	if len(s) > limit {
		return fmt.Sprintf("%q…", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}
