package main

import (
	"strings"
	"testing"
)

// event is one step of a synthetic sequence a subscriber receives.
type event struct {
	kind, turn, item, text string
}

func play(c *Checker, evs []event) {
	for _, e := range evs {
		switch e.kind {
		case "turn/started":
			c.TurnStarted("th", e.turn)
		case "item/started":
			c.ItemStarted("th", e.turn, e.item, "agentMessage")
		case "delta":
			c.AgentDelta("th", e.turn, e.item, []byte(e.text))
		case "item/completed":
			c.ItemCompleted("th", e.turn, e.item, "agentMessage", e.text)
		case "turn/completed":
			c.TurnCompleted("th", e.turn)
		}
	}
	c.Finish()
}

// goodTurn is a turn of two agent messages, streamed in deltas.
func goodTurn() []event {
	return []event{
		{kind: "turn/started", turn: "t1"},
		{kind: "item/started", turn: "t1", item: "m1"},
		{kind: "delta", turn: "t1", item: "m1", text: "hel"},
		{kind: "delta", turn: "t1", item: "m1", text: "lo"},
		{kind: "item/completed", turn: "t1", item: "m1", text: "hello"},
		{kind: "item/started", turn: "t1", item: "m2"},
		{kind: "delta", turn: "t1", item: "m2", text: "bye"},
		{kind: "item/completed", turn: "t1", item: "m2", text: "bye"},
		{kind: "turn/completed", turn: "t1"},
	}
}

func TestCheckerAcceptsAWholeOrderedTurn(t *testing.T) {
	c := NewChecker("sub")
	play(c, goodTurn())
	if errs := c.Errors(); len(errs) != 0 {
		t.Fatalf("violations in a good sequence: %q", errs)
	}
	if items, turns := c.Count("th", "agentMessage"); items != 2 || turns != 1 {
		t.Errorf("Count = %d items, %d turns; want 2, 1", items, turns)
	}
}

// Each broken sequence is the good one with one event lost, duplicated,
// moved or changed; the checker must name what went wrong.
func TestCheckerFailsOnLostDuplicatedOrReorderedEvents(t *testing.T) {
	without := func(i int) []event {
		evs := goodTurn()
		return append(evs[:i:i], evs[i+1:]...)
	}
	swap := func(i, j int) []event {
		evs := goodTurn()
		evs[i], evs[j] = evs[j], evs[i]
		return evs
	}
	dup := func(i int) []event {
		evs := goodTurn()
		return append(evs[:i+1:i+1], evs[i:]...)
	}
	cases := []struct {
		name string
		evs  []event
		want string
	}{
		{"turn/started lost", without(0), "before the turn's turn/started"},
		{"item/started lost", without(1), "before its item/started"},
		{"a delta lost", without(3), "did not arrive whole"},
		{"item/completed lost", without(4), "while item m1 is open"},
		{"turn/completed lost", without(8), "turn t1 never completed"},
		{"the last item/completed lost", without(7), "while item m2 is open"},
		{"deltas reordered", swap(2, 3), "did not arrive whole"},
		{"delta after item/completed", swap(3, 4), "after its item/completed"},
		{"item/completed before item/started", swap(5, 7), "without its item/started"},
		{"turn/completed before an item/completed", swap(7, 8), "while item m2 is open"},
		{"turn/started after an item", swap(0, 1), "before the turn's turn/started"},
		{"turn/started duplicated", dup(0), "turn/started for turn t1 again"},
		{"item/started duplicated", dup(1), "item/started for item m1 again"},
		{"item/completed duplicated", dup(4), "item/completed for item m1 again"},
		{"turn/completed duplicated", dup(8), "turn/completed for turn t1 again"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker("sub")
			play(c, tc.evs)
			errs := c.Errors()
			if len(errs) == 0 {
				t.Fatalf("no violation reported")
			}
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Errorf("violations %q do not say %q", errs, tc.want)
			}
		})
	}
}

func TestCheckerTextMismatch(t *testing.T) {
	evs := goodTurn()
	evs[4].text = "hellO"
	c := NewChecker("sub")
	play(c, evs)
	if errs := c.Errors(); len(errs) != 1 || !strings.Contains(errs[0], `did not arrive whole: 2 deltas joined give 5 bytes "hello"`) {
		t.Errorf("violations %q", errs)
	}
}

// Two subscribers of a thread must see the same authoritative sequence:
// an item the other one saw is lost for this one, even if its own
// sequence is consistent.
func TestSameLogFindsAnItemLostWhole(t *testing.T) {
	a, b := NewChecker("a"), NewChecker("b")
	play(a, goodTurn())
	evs := goodTurn()
	play(b, append(evs[:5:5], evs[8:]...)) // m2 never arrived at all
	if errs := b.Errors(); len(errs) != 0 {
		t.Fatalf("b's own sequence is consistent, got %q", errs)
	}
	err := SameLog(a, b, "th")
	if err == nil || !strings.Contains(err.Error(), `b saw "turn/completed t1" as authoritative event 4, a saw "item/started m2"`) {
		t.Errorf("SameLog = %v", err)
	}
	if err := SameLog(a, a, "th"); err != nil {
		t.Errorf("SameLog(a, a) = %v", err)
	}
	c := NewChecker("c")
	play(c, goodTurn()[:8])
	if err := SameLog(a, c, "th"); err == nil || !strings.Contains(err.Error(), "c saw 5 authoritative events, a saw 6") {
		t.Errorf("SameLog with a shorter log = %v", err)
	}
}

func TestCheckerKeepsTheFirstViolations(t *testing.T) {
	c := NewChecker("sub")
	for range maxErrors + 5 {
		c.TurnCompleted("th", "ghost")
	}
	errs := c.Errors()
	if len(errs) != maxErrors+1 || !strings.Contains(errs[maxErrors], "and 5 more violations") {
		t.Errorf("%d violations kept: %q", len(errs), errs)
	}
}
