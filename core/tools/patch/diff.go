package patch

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/aymanbagabas/go-udiff/lcs"
)

// Context lines around changes: the fileChange item's diff uses one, as the
// reference does; the turn diff uses git's three.
const (
	itemDiffContext = 1
	turnDiffContext = 3
)

// splitKeep splits s into lines that keep their "\n" (the last may lack
// one), as unified diffs need to mark a missing final newline.
func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// unifiedHunks returns the hunks of a unified diff of a to b, without file
// headers ("" when equal). The line differences come from go-udiff's LCS;
// hunks are grouped and written here, in one pass over the lines.
func unifiedHunks(a, b string, context int) string {
	if a == b {
		return ""
	}
	return writeHunks(unifiedOf(a, b, context))
}

func unifiedOf(a, b string, context int) udiff.UnifiedDiff {
	al, bl := splitKeep(a), splitKeep(b)
	diffs := lcs.DiffLines(al, bl)
	var u udiff.UnifiedDiff
	var h *udiff.Hunk
	last := 0 // index in al after the previous change
	for _, d := range diffs {
		switch {
		case h != nil && d.Start <= last+2*context:
			for i := last; i < d.Start; i++ {
				h.Lines = append(h.Lines, udiff.Line{Kind: udiff.Equal, Content: al[i]})
			}
		default:
			if h != nil {
				for i := last; i < min(last+context, len(al)); i++ {
					h.Lines = append(h.Lines, udiff.Line{Kind: udiff.Equal, Content: al[i]})
				}
				u.Hunks = append(u.Hunks, h)
			}
			from := max(d.Start-context, 0)
			// The new side's line: same offset from the change as the old.
			h = &udiff.Hunk{FromLine: from + 1, ToLine: d.ReplStart - (d.Start - from) + 1}
			for i := from; i < d.Start; i++ {
				h.Lines = append(h.Lines, udiff.Line{Kind: udiff.Equal, Content: al[i]})
			}
		}
		for i := d.Start; i < d.End; i++ {
			h.Lines = append(h.Lines, udiff.Line{Kind: udiff.Delete, Content: al[i]})
		}
		for i := d.ReplStart; i < d.ReplEnd; i++ {
			h.Lines = append(h.Lines, udiff.Line{Kind: udiff.Insert, Content: bl[i]})
		}
		last = d.End
	}
	if h != nil {
		for i := last; i < min(last+context, len(al)); i++ {
			h.Lines = append(h.Lines, udiff.Line{Kind: udiff.Equal, Content: al[i]})
		}
		u.Hunks = append(u.Hunks, h)
	}
	return u
}

// writeHunks formats hunks as unified diff text. Ranges follow GNU diff and
// git: a count of one is omitted, and an empty side is "-0,0" or "+0,0".
func writeHunks(u udiff.UnifiedDiff) string {
	size := 0
	for _, h := range u.Hunks {
		size += 32
		for _, l := range h.Lines {
			size += len(l.Content) + 2
		}
	}
	var b strings.Builder
	b.Grow(size)
	rng := func(sign byte, start, count int) {
		b.WriteByte(' ')
		b.WriteByte(sign)
		if count == 0 {
			start-- // an empty range names the line before it
		}
		b.WriteString(strconv.Itoa(start))
		if count != 1 {
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(count))
		}
	}
	for _, h := range u.Hunks {
		from, to := 0, 0
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Delete:
				from++
			case udiff.Insert:
				to++
			default:
				from++
				to++
			}
		}
		b.WriteString("@@")
		rng('-', h.FromLine, from)
		rng('+', h.ToLine, to)
		b.WriteString(" @@\n")
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Delete:
				b.WriteByte('-')
			case udiff.Insert:
				b.WriteByte('+')
			default:
				b.WriteByte(' ')
			}
			b.WriteString(l.Content)
			if !strings.HasSuffix(l.Content, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}

// gitBlobID is the object id git gives a blob with this content.
func gitBlobID(content string) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write([]byte(content))
	return hex.EncodeToString(h.Sum(nil))
}
