package exec

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestHeadTailMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, limit := range []int{2, 3, 10, 64, 1000} {
		for trial := 0; trial < 50; trial++ {
			b := newHeadTail(limit)
			var all strings.Builder
			for w := r.IntN(30); w > 0; w-- {
				n := r.IntN(limit * 2)
				chunk := make([]byte, n)
				for i := range chunk {
					chunk[i] = 'a' + byte(r.IntN(26))
				}
				b.Write(chunk)
				all.Write(chunk)
			}
			s := all.String()
			if b.Total() != int64(len(s)) {
				t.Fatalf("total %d, want %d", b.Total(), len(s))
			}
			headCap, tailCap := limit/2, limit-limit/2
			if len(s) <= limit {
				if got := b.String(); got != s {
					t.Fatalf("limit %d: %q, want %q", limit, got, s)
				}
				continue
			}
			want := s[:headCap] + "\n" + omittedNote(int64(len(s)-limit)) + "\n" + s[len(s)-tailCap:]
			if got := b.String(); got != want {
				t.Fatalf("limit %d len %d:\n got %q\nwant %q", limit, len(s), got, want)
			}
		}
	}
}

func TestHeadTailReset(t *testing.T) {
	b := newHeadTail(8)
	b.Write([]byte("0123456789abcdef"))
	b.Reset()
	b.Write([]byte("xy"))
	if b.String() != "xy" || b.Total() != 2 {
		t.Fatalf("after reset: %q %d", b.String(), b.Total())
	}
}

func TestHeadTailKeepsUTF8Valid(t *testing.T) {
	b := newHeadTail(7)
	b.Write([]byte(strings.Repeat("é", 20))) // 2 bytes each: cuts fall inside characters
	got := b.String()
	if strings.ContainsRune(got, '\uFFFD') {
		t.Fatalf("split character left a replacement: %q", got)
	}
	if !strings.HasPrefix(got, "é") || !strings.HasSuffix(got, "é") || !strings.Contains(got, "bytes omitted") {
		t.Fatalf("got %q", got)
	}
}

func TestTruncateForModel(t *testing.T) {
	short := "hello\n"
	if TruncateForModel(short, 10) != short {
		t.Fatal("short text changed")
	}
	long := strings.Repeat("x", 1000) + "MIDDLE" + strings.Repeat("y", 1000)
	got := TruncateForModel(long, 100) // 400 bytes
	if !strings.HasPrefix(got, strings.Repeat("x", 200)) || !strings.HasSuffix(got, strings.Repeat("y", 200)) {
		t.Fatalf("head/tail not kept: %q", got)
	}
	if strings.Contains(got, "MIDDLE") || !strings.Contains(got, "[… 402 tokens truncated …]") {
		t.Fatalf("middle not replaced by a note: %q", got)
	}
	if len(got) > 400+64 {
		t.Fatalf("truncated text too long: %d", len(got))
	}
	if TruncateForModel(strings.Repeat("z", 4*DefaultMaxOutputTokens+1), 0) == strings.Repeat("z", 4*DefaultMaxOutputTokens+1) {
		t.Fatal("default limit not applied")
	}
}
