package main

import (
	"slices"
	"strings"
	"testing"
)

// feed plays notifications into a client as its reader would.
func feed(c *client, msgs ...string) {
	for _, m := range msgs {
		c.handle([]byte(m), timeZero)
	}
}

func testClient(name string) *client {
	return &client{name: name, check: NewChecker(name), pending: map[int64]chan reply{}}
}

// oneTurn is a turn with one agent message, as a subscriber receives it;
// lose drops the messages at those indexes.
func oneTurn(lose ...int) []string {
	msgs := []string{
		`{"method":"turn/started","params":{"threadId":"th","turn":{"id":"tu"}}}`,
		`{"method":"item/started","params":{"threadId":"th","turnId":"tu","item":{"id":"m","type":"agentMessage"}}}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"m","delta":"hi"}}`,
		`{"method":"item/completed","params":{"threadId":"th","turnId":"tu","item":{"id":"m","type":"agentMessage","text":"hi"}}}`,
		`{"method":"turn/completed","params":{"threadId":"th","turn":{"id":"tu"}}}`,
	}
	var out []string
	for i, m := range msgs {
		if !slices.Contains(lose, i) {
			out = append(out, m)
		}
	}
	return out
}

// A subscriber that lost an item whole is consistent on its own; verify
// still fails the run, against agentd, from the other subscriber's log
// and the item count.
func TestVerifyFailsTheRunOnAnItemLostWhole(t *testing.T) {
	a, b := testClient("a"), testClient("b")
	feed(a, oneTurn()...)
	feed(b, oneTurn(1, 2, 3)...)
	fails := &failures{}
	r := &run{t: &target{name: "agentd"}, fails: fails, res: &results{}}
	r.verify("scenario", "th", []*client{a, b}, 1)
	got := strings.Join(fails.lines, "\n")
	if !fails.fatal || !strings.Contains(got, "b: thread th: 0 agentMessage items completed, want 1 (lost)") ||
		!strings.Contains(got, `b saw "turn/completed tu" as authoritative event 2, a saw "item/started m"`) {
		t.Errorf("fatal %v, failures:\n%s", fails.fatal, got)
	}
}

// The reference's violations are reported, not fatal: the harness gates
// agentd.
func TestVerifyReportsTheReferenceWithoutFailing(t *testing.T) {
	c := testClient("c")
	feed(c, oneTurn(4)...) // turn/completed lost
	fails := &failures{}
	r := &run{t: &target{name: "reference", ref: true}, fails: fails, res: &results{}}
	r.verify("scenario", "th", []*client{c}, 1)
	if fails.fatal || len(fails.lines) != 1 || !strings.Contains(fails.lines[0], "reference: scenario: c: thread th: turn tu never completed") {
		t.Errorf("fatal %v, failures %q", fails.fatal, fails.lines)
	}
}
