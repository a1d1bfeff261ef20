package patch

import (
	"fmt"
	"strings"
)

// maxDetailLines caps how many expected lines an error repeats.
const maxDetailLines = 20

// applyHunks returns content with the hunks of op applied. Hunks are
// searched for in file order, each after the previous one's lines.
func applyHunks(content string, op *Op, fold bool) (string, error) {
	f := splitText(content)
	out := make([]string, 0, len(f.lines)+8)
	cursor := 0
	// tailKept: the output's last line is the file's last line, kept; a
	// file that had no final newline then still has none.
	tailKept := false
	emitOrig := func(from, to int) {
		if from < to {
			out = append(out, f.lines[from:to]...)
			tailKept = to == len(f.lines)
		}
	}
	for n := range op.Hunks {
		h := &op.Hunks[n]
		herr := func(err error, format string, args ...any) error {
			return &ApplyError{Path: op.Path, Hunk: n + 1, Line: h.Line, Err: err, Detail: fmt.Sprintf(format, args...)}
		}
		start := cursor
		anchorAt := -1
		for _, a := range h.Anchors {
			m := f.seek([]string{a}, start, false, fold)
			if m.at < 0 {
				where := ""
				if start > 0 {
					where = fmt.Sprintf(" after line %d", start)
				}
				msg := ": could not find the '@@' line %s%s"
				if e := f.elsewhere([]string{a}, start, fold); e != "" {
					msg += "; " + e
				}
				return "", herr(ErrContextNotFound, msg, quote(a), where)
			}
			anchorAt = m.at
			start = m.at + 1
		}
		lines := h.Lines
		old := oldOf(lines)
		var at int
		switch {
		case len(old) == 0 && anchorAt >= 0 && !h.EOF:
			at = anchorAt + 1
		case len(old) == 0:
			at = len(f.lines)
		default:
			if anchorAt >= 0 {
				start = anchorAt // the hunk may repeat the anchor line as context
			}
			m := f.seek(old, start, h.EOF, fold)
			shown := old
			if m.at < 0 && len(old) > 1 && lines[len(lines)-1] == (HunkLine{Op: ' '}) {
				// A trailing blank context line the file does not have.
				lines = lines[:len(lines)-1]
				old = old[:len(old)-1]
				m = f.seek(old, start, h.EOF, fold)
			}
			if m.at < 0 {
				where := " after the previous hunk"
				switch {
				case anchorAt >= 0:
					where = fmt.Sprintf(" after the '@@' line (line %d)", anchorAt+1)
				case n == 0 || cursor == 0:
					where = ""
				}
				if h.EOF {
					where = " at the end of the file"
				}
				msg := fmt.Sprintf(": could not find these lines%s:\n%s", where, showLines(shown))
				if e := f.elsewhere(shown, start, fold); e != "" {
					msg += e
				}
				return "", herr(ErrContextNotFound, "%s", msg)
			}
			if m.second >= 0 && anchorAt < 0 {
				return "", herr(ErrAmbiguous, ": these lines occur more than once (at lines %d and %d%s):\n%s"+
					"add unchanged lines around the change, or an '@@ <line>' header naming a line that occurs once before it (such as the enclosing function's signature)",
					m.at+1, m.second+1, ifStr(start > 0, fmt.Sprintf(", searching from line %d", start+1)), showLines(old))
			}
			at = m.at
		}
		emitOrig(cursor, at)
		j := at
		for _, l := range lines {
			switch l.Op {
			case ' ':
				out = append(out, f.lines[j])
				j++
				tailKept = j == len(f.lines)
			case '-':
				j++
			case '+':
				t := l.Text
				if f.crlf && !strings.HasSuffix(t, "\r") {
					t += "\r"
				}
				out = append(out, t)
				tailKept = false
			}
		}
		cursor = j
	}
	emitOrig(cursor, len(f.lines))
	if len(out) == 0 {
		return "", nil
	}
	s := strings.Join(out, "\n")
	if f.newlineAtEnd || !tailKept {
		s += "\n"
	}
	return s, nil
}

// elsewhere explains where lines not found after from are, if anywhere.
func (f *fileText) elsewhere(pat []string, from int, fold bool) string {
	if from == 0 {
		return ""
	}
	if m := f.seek(pat, 0, false, fold); m.at >= 0 && m.at < from {
		return fmt.Sprintf("they are at line %d, before the previous match: hunks and '@@' headers must be in file order", m.at+1)
	}
	return ""
}

func oldOf(lines []HunkLine) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if l.Op != '+' {
			out = append(out, l.Text)
		}
	}
	return out
}

// showLines lists lines for an error message, one per line, capped.
func showLines(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i == maxDetailLines {
			fmt.Fprintf(&b, "… (%d more lines)\n", len(lines)-i)
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

func ifStr(c bool, s string) string {
	if c {
		return s
	}
	return ""
}
