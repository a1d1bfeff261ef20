package main

import (
	"strings"
	"testing"
)

// A scenario that failed for agentd still shows the reference's figures,
// in its place, and a ratio is printed only where both ran.
func TestPrintTableKeepsFiguresOfAScenarioOneRunLacks(t *testing.T) {
	agentd := &results{rows: []row{
		{scenario: "conns", key: "conns/per", figure: "per connection", value: 40, unit: "KB"},
		{scenario: "turns", key: "turns1/error", figure: "error", note: "failed (below)", nan: true},
		{scenario: "long", key: "long/rss", figure: "RSS", value: 20, unit: "MB"},
	}}
	ref := &results{rows: []row{
		{scenario: "conns", key: "conns/per", figure: "per connection", value: 160, unit: "KB"},
		{scenario: "turns", key: "turns1/wall", figure: "wall", value: 55.6, unit: "s"},
		{scenario: "long", key: "long/rss", figure: "RSS", value: 150, unit: "MB"},
	}}
	var b strings.Builder
	printTable(&b, agentd, agentd, ref)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	want := []string{"per connection", "error", "wall", "RSS"}
	for i, w := range want {
		if !strings.Contains(lines[2+i], w) {
			t.Errorf("row %d = %q, want the %q figure", i, lines[2+i], w)
		}
	}
	if !strings.Contains(lines[2], "0.25×") || !strings.Contains(lines[4], "55.6 s") || strings.Contains(lines[4], "×") {
		t.Errorf("ratios or the reference's figure wrong:\n%s", b.String())
	}
}
