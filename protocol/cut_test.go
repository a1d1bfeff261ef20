package protocol

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	if got := Cut("thread/start"); got != "thread/start" {
		t.Fatalf("a short string was changed: %q", got)
	}
	exact := strings.Repeat("a", MaxEcho)
	if Cut(exact) != exact {
		t.Fatal("a string of MaxEcho bytes was cut")
	}
	long := strings.Repeat("é", 1<<19) // 1 MiB, two bytes a character
	got := Cut(long)
	want := strings.Repeat("é", MaxEcho/2) + CutMarker + "1048576 bytes in all]"
	if got != want {
		t.Fatalf("Cut(1 MiB) = %q…, want %q", got[:40], want[:40])
	}
	// A cut in the middle of a character keeps the character out.
	odd := "a" + strings.Repeat("é", MaxEcho)
	if c := Cut(odd); !utf8.ValidString(c) || !strings.HasPrefix(c, "a"+strings.Repeat("é", (MaxEcho-1)/2)+CutMarker) {
		t.Fatalf("cut inside a character: %q", c)
	}
}
