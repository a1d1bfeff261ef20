package exec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// headTail keeps the first and the last bytes of a stream, at most limit
// in all, and counts what it drops in between. Memory stays bounded
// however much passes through. Not safe for concurrent use.
type headTail struct {
	headCap, tailCap int
	head             []byte
	// ring holds the tail; once full, start is the index of its oldest
	// byte.
	ring  []byte
	start int
	total int64
}

func newHeadTail(limit int) *headTail {
	if limit < 2 {
		limit = 2
	}
	return &headTail{headCap: limit / 2, tailCap: limit - limit/2}
}

// Write appends p.
func (b *headTail) Write(p []byte) {
	b.total += int64(len(p))
	if room := b.headCap - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	if b.ring == nil {
		b.ring = make([]byte, 0, b.tailCap)
	}
	if len(p) >= b.tailCap {
		b.ring = b.ring[:b.tailCap]
		copy(b.ring, p[len(p)-b.tailCap:])
		b.start = 0
		return
	}
	if len(b.ring) < b.tailCap {
		// Still filling: append until the ring is full, then wrap.
		n := min(b.tailCap-len(b.ring), len(p))
		b.ring = append(b.ring, p[:n]...)
		p = p[n:]
		b.start = 0
	}
	for len(p) > 0 {
		n := copy(b.ring[b.start:], p)
		p = p[n:]
		b.start = (b.start + n) % len(b.ring)
	}
}

// Total is the number of bytes written.
func (b *headTail) Total() int64 { return b.total }

// Omitted is the number of bytes dropped from the middle.
func (b *headTail) Omitted() int64 { return b.total - int64(len(b.head)) - int64(len(b.ring)) }

// tail returns the kept tail in order.
func (b *headTail) tail() []byte {
	if len(b.ring) < b.tailCap || b.start == 0 {
		return b.ring
	}
	out := make([]byte, 0, len(b.ring))
	out = append(out, b.ring[b.start:]...)
	return append(out, b.ring[:b.start]...)
}

// String returns the kept bytes as valid UTF-8, with a note in place of
// the dropped middle.
func (b *headTail) String() string {
	if b.Omitted() == 0 {
		return validUTF8(string(b.head) + string(b.tail()))
	}
	return joinCut(string(b.head), string(b.tail()), omittedNote(b.Omitted()))
}

// Reset empties the buffer, keeping its memory.
func (b *headTail) Reset() {
	b.head = b.head[:0]
	b.ring = b.ring[:0]
	b.start = 0
	b.total = 0
}

func omittedNote(n int64) string { return fmt.Sprintf("[… %d bytes omitted …]", n) }

// joinCut joins a head and a tail cut out of one text around a note,
// dropping partial characters at the cut.
func joinCut(head, tail, note string) string {
	head = trimPartialEnd(head)
	tail = trimPartialStart(tail)
	var b strings.Builder
	b.Grow(len(head) + len(tail) + len(note) + 2)
	b.WriteString(validUTF8(head))
	if head != "" && !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(note)
	b.WriteByte('\n')
	b.WriteString(validUTF8(tail))
	return b.String()
}

// trimPartialEnd drops an incomplete UTF-8 sequence cut off at the end.
func trimPartialEnd(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			return s
		}
	}
	return s
}

// trimPartialStart drops continuation bytes cut off at the start.
func trimPartialStart(s string) string {
	for i := 0; i < len(s) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	return s
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
