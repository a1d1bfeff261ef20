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

// tailParts returns the kept tail in order, as up to two slices of the
// ring.
func (b *headTail) tailParts() (first, second []byte) {
	if len(b.ring) < b.tailCap || b.start == 0 {
		return b.ring, nil
	}
	return b.ring[b.start:], b.ring[:b.start]
}

// String returns the kept bytes as valid UTF-8, with a note in place of
// the dropped middle. It copies the bytes once.
func (b *headTail) String() string {
	t1, t2 := b.tailParts()
	var sb strings.Builder
	omitted := b.Omitted()
	if omitted == 0 {
		sb.Grow(len(b.head) + len(t1) + len(t2))
		sb.Write(b.head)
		sb.Write(t1)
		sb.Write(t2)
		return validUTF8(sb.String())
	}
	// Drop characters cut in two at either edge of the gap.
	head := trimPartialEnd(b.head)
	skip := partialStartLen(t1, t2)
	note := omittedNote(omitted)
	sb.Grow(len(head) + len(note) + len(t1) + len(t2) + 2)
	sb.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		sb.WriteByte('\n')
	}
	sb.WriteString(note)
	sb.WriteByte('\n')
	if skip < len(t1) {
		sb.Write(t1[skip:])
		sb.Write(t2)
	} else {
		sb.Write(t2[skip-len(t1):])
	}
	return validUTF8(sb.String())
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
	h := trimPartialEnd([]byte(head))
	tail = tail[partialStartLen([]byte(tail), nil):]
	var b strings.Builder
	b.Grow(len(h) + len(tail) + len(note) + 2)
	b.Write(h)
	if len(h) > 0 && h[len(h)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(note)
	b.WriteByte('\n')
	b.WriteString(tail)
	return validUTF8(b.String())
}

// trimPartialEnd drops an incomplete UTF-8 sequence cut off at the end.
func trimPartialEnd(s []byte) []byte {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRune(s[i:]) {
				return s[:i]
			}
			return s
		}
	}
	return s
}

// partialStartLen counts the continuation bytes, cut off from their
// character, at the start of the text a followed by b.
func partialStartLen(a, b []byte) int {
	for i := 0; i < utf8.UTFMax; i++ {
		var c byte
		switch {
		case i < len(a):
			c = a[i]
		case i-len(a) < len(b):
			c = b[i-len(a)]
		default:
			return 0
		}
		if utf8.RuneStart(c) {
			return i
		}
	}
	return 0
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
