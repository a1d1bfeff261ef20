package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

// A key repeated in a warning or an error has its control characters and
// invalid UTF-8 escaped and is cut: a key may be any quoted TOML string.
func TestKeyText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"model", "model"},
		{"a.b-c_d", "a.b-c_d"},
		{"é.ü", "é.ü"},
		{"a\x00b", `a\u0000b`},
		{"a\nb\x1b[31m", `a\u000ab\u001b[31m`},
		{"a\xffb", `a\xffb`},
	} {
		if got := KeyText(tc.in); got != tc.want {
			t.Errorf("KeyText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := KeyText(strings.Repeat("k", 1<<20))
	if len(long) > protocol.MaxEcho+64 || !strings.Contains(long, protocol.CutMarker) {
		t.Errorf("a 1 MiB key is %d bytes as text", len(long))
	}
}

// The unknown-keys warning names at most maxWarnedKeys keys, each as
// KeyText shows it, and counts the rest: it stays short whatever the file
// holds.
func TestUnknownKeysWarningIsBounded(t *testing.T) {
	keys := []string{strings.Repeat("x", 1<<20), "nul\x00key"}
	for i := range 100 {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	w := unknownKeysWarning("config.toml", keys)
	if len(w.Summary) > 4096 {
		t.Fatalf("summary of %d bytes", len(w.Summary))
	}
	for _, want := range []string{"`nul\\u0000key`", "and 82 more", protocol.CutMarker} {
		if !strings.Contains(w.Summary, want) {
			t.Errorf("summary %q lacks %q", protocol.Cut(w.Summary), want)
		}
	}
	if strings.ContainsRune(w.Summary, 0) {
		t.Error("a NUL reached the summary")
	}
}
