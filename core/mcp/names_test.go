package mcp

import (
	"strings"
	"testing"
)

func TestQualifyPlainNames(t *testing.T) {
	got := qualify([]toolRef{{"test", "echo"}, {"test", "image"}, {"other", "echo"}})
	want := map[toolRef]string{
		{"test", "echo"}:  "mcp__test__echo",
		{"test", "image"}: "mcp__test__image",
		{"other", "echo"}: "mcp__other__echo",
	}
	for r, w := range want {
		if got[r] != w {
			t.Errorf("%v: %q, want %q", r, got[r], w)
		}
	}
}

// The reference replaces every character outside [A-Za-z0-9_] (its
// 0.169 turns "server-name.x" into "server_name_x").
func TestQualifySanitizes(t *testing.T) {
	got := qualify([]toolRef{{"my-server.v2", "read.file"}})
	if q := got[toolRef{"my-server.v2", "read.file"}]; q != "mcp__my_server_v2__read_file" {
		t.Errorf("got %q", q)
	}
}

// Two servers whose names sanitize alike each get a suffix: the hashes
// are the ones the reference (0.169) produced for "dup.a" and "dup_a".
func TestQualifyServerCollision(t *testing.T) {
	got := qualify([]toolRef{{"dup.a", "echo"}, {"dup_a", "echo"}})
	if q := got[toolRef{"dup.a", "echo"}]; q != "mcp__dup_a_d4522d471b92__echo" {
		t.Errorf("dup.a: %q", q)
	}
	if q := got[toolRef{"dup_a", "echo"}]; q != "mcp__dup_a_a20548763361__echo" {
		t.Errorf("dup_a: %q", q)
	}
}

func TestQualifyToolCollision(t *testing.T) {
	got := qualify([]toolRef{{"s", "a.b"}, {"s", "a_b"}})
	x, y := got[toolRef{"s", "a.b"}], got[toolRef{"s", "a_b"}]
	if x == y || !strings.HasPrefix(x, "mcp__s__a_b_") || !strings.HasPrefix(y, "mcp__s__a_b_") {
		t.Errorf("colliding tools: %q and %q", x, y)
	}
}

// A name past 64 bytes keeps its head and ends with a hash: stable, and
// different for tools that share the head.
func TestQualifyLongNames(t *testing.T) {
	long := strings.Repeat("x", 80)
	refs := []toolRef{{"srv", long + "1"}, {"srv", long + "2"}, {strings.Repeat("s", 90), "echo"}}
	got := qualify(refs)
	again := qualify([]toolRef{refs[2], refs[1], refs[0]})
	seen := map[string]bool{}
	for _, r := range refs {
		q := got[r]
		if len(q) > maxToolName {
			t.Errorf("%v: %q is %d bytes", r, q, len(q))
		}
		if !strings.HasPrefix(q, "mcp__") || len(q) != maxToolName {
			t.Errorf("%v: %q", r, q)
		}
		if seen[q] {
			t.Errorf("%q given twice", q)
		}
		seen[q] = true
		if again[r] != q {
			t.Errorf("%v: %q, then %q: not stable", r, q, again[r])
		}
	}
	if q := got[refs[0]]; !strings.HasPrefix(q, "mcp__srv__xxxx") {
		t.Errorf("the head is not kept: %q", q)
	}
}

func TestFlatName(t *testing.T) {
	for _, ns := range []string{"mcp__test", "mcp__test__"} {
		if got := flatName(ns, "echo"); got != "mcp__test__echo" {
			t.Errorf("%q: %q", ns, got)
		}
	}
}
