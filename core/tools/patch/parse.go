package patch

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The patch markers. Headers are followed by a path.
const (
	markBegin     = "*** Begin Patch"
	markEnd       = "*** End Patch"
	markAdd       = "*** Add File:"
	markDelete    = "*** Delete File:"
	markUpdate    = "*** Update File:"
	markMove      = "*** Move to:"
	markEndOfFile = "*** End of File"
)

const expectOp = "expected '*** Add File:', '*** Delete File:' or '*** Update File:'"

// Parse parses an apply_patch input. It accepts what models commonly wrap a
// patch in (a heredoc such as <<'EOF' … EOF, a Markdown code fence, a JSON
// object {"input": …} sent to the freeform tool, surrounding blank lines,
// CRLF line endings, no final newline) and reports
// anything else as a *ParseError naming the 1-based line of text and what
// was expected there.
func Parse(text string) (*Patch, error) {
	p := newParser(unwrapJSON(text))
	return p.parse()
}

// unwrapJSON returns the patch inside a JSON object {"input": "…"} (the
// function variant's arguments sent to the freeform tool), else text.
func unwrapJSON(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") {
		return text
	}
	if in, err := InputFromArguments(t); err == nil {
		return in
	}
	return text
}

type parser struct {
	lines      []string // without line endings
	pos, end   int      // next line to read; end of the patch body
	ops        []Op
	afterClose string // a wrapper's closing line allowed after End Patch
}

func newParser(text string) *parser {
	// A final newline ends the last line rather than starting one, so
	// "end of input" is reported on the line after the last.
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	p := &parser{lines: lines, end: len(lines)}
	p.unwrap()
	return p
}

// heredocOpen matches the first line of a patch wrapped in a shell heredoc,
// optionally after the command name. Like unifiedRange, it is compiled at
// first use, not at the daemon's start.
var heredocOpen = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:apply_?patch\s+)?<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)(['"]?)$`)
})

// unwrap skips a heredoc opener or code fence before the patch, so that
// line numbers stay those of the text as written. The closing line is
// accepted after '*** End Patch'.
func (p *parser) unwrap() {
	i := p.skipBlank(0)
	if i >= p.end {
		return
	}
	first := strings.TrimSpace(p.lines[i])
	if m := heredocOpen().FindStringSubmatch(first); m != nil && m[1] == m[3] {
		p.pos = i + 1
		p.afterClose = m[2]
		return
	}
	if strings.HasPrefix(first, "```") {
		p.pos = i + 1
		p.afterClose = "```"
	}
}

func (p *parser) skipBlank(i int) int {
	for i < p.end && strings.TrimSpace(p.lines[i]) == "" {
		i++
	}
	return i
}

func (p *parser) errf(i int, format string, args ...any) error {
	return &ParseError{Line: i + 1, Msg: fmt.Sprintf(format, args...)}
}

// found describes line i for an error message.
func (p *parser) found(i int) string {
	if i >= p.end {
		return "end of input"
	}
	return quote(p.lines[i])
}

func isBoundary(raw string) bool {
	l := strings.TrimRight(raw, " \t")
	return l == markEnd || strings.HasPrefix(l, markAdd) ||
		strings.HasPrefix(l, markDelete) || strings.HasPrefix(l, markUpdate)
}

func (p *parser) parse() (*Patch, error) {
	p.pos = p.skipBlank(p.pos)
	if p.pos >= p.end || strings.TrimSpace(p.lines[p.pos]) != markBegin {
		return nil, p.errf(p.pos, "expected '%s', found %s", markBegin, p.found(p.pos))
	}
	p.pos++
	for {
		p.pos = p.skipBlank(p.pos)
		if p.pos >= p.end {
			if len(p.ops) == 0 {
				return nil, p.errf(p.pos, "%s, found end of input", expectOp)
			}
			return nil, p.errf(p.pos, "expected '%s', found end of input", markEnd)
		}
		hdr := p.pos
		l := strings.TrimRight(p.lines[hdr], " \t")
		var err error
		switch {
		case l == markEnd:
			if len(p.ops) == 0 {
				return nil, p.errf(hdr, "%s, found '%s' (the patch changes no file)", expectOp, markEnd)
			}
			return &Patch{Ops: p.ops}, p.trailer(hdr + 1)
		case strings.HasPrefix(l, markAdd):
			err = p.parseAdd(hdr, l[len(markAdd):])
		case strings.HasPrefix(l, markDelete):
			err = p.parseDelete(hdr, l[len(markDelete):])
		case strings.HasPrefix(l, markUpdate):
			err = p.parseUpdate(hdr, l[len(markUpdate):])
		default:
			err = p.errf(hdr, "%s, found %s", expectOp, p.found(hdr))
		}
		if err != nil {
			return nil, err
		}
	}
}

// trailer checks what follows '*** End Patch': blank lines and the closing
// line of the wrapper (heredoc delimiter or code fence), if any.
func (p *parser) trailer(i int) error {
	closed := false
	for ; i < p.end; i++ {
		l := strings.TrimSpace(p.lines[i])
		switch {
		case l == "":
		case !closed && p.afterClose != "" && l == p.afterClose:
			closed = true
		default:
			return p.errf(i, "unexpected text after '%s': %s", markEnd, quote(p.lines[i]))
		}
	}
	return nil
}

// headerPath validates the path after a header.
func (p *parser) headerPath(i int, mark, rest string) (string, error) {
	path := strings.TrimSpace(rest)
	if path == "" {
		return "", p.errf(i, "empty path after '%s'", mark)
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", p.errf(i, "path after '%s' contains a NUL byte", mark)
	}
	return path, nil
}

func (p *parser) parseAdd(hdr int, rest string) error {
	path, err := p.headerPath(hdr, markAdd, rest)
	if err != nil {
		return err
	}
	var content strings.Builder
	blanks := 0 // blank lines seen: content if more '+' lines follow
lines:
	for p.pos = hdr + 1; p.pos < p.end; p.pos++ {
		raw := p.lines[p.pos]
		switch {
		case isBoundary(raw):
			break lines
		case strings.HasPrefix(raw, "+"):
			for ; blanks > 0; blanks-- {
				content.WriteByte('\n')
			}
			content.WriteString(raw[1:])
			content.WriteByte('\n')
		case strings.TrimSpace(raw) == "":
			blanks++
		case strings.TrimRight(raw, " \t") == markEndOfFile:
			// Meaningless in an added file; models write it anyway.
		default:
			return p.errf(p.pos, "expected a line starting with '+' (content of added file %s), found %s",
				quote(path), quote(raw))
		}
	}
	p.ops = append(p.ops, Op{Kind: KindAdd, Path: path, Content: content.String(), Line: hdr + 1})
	return nil
}

func (p *parser) parseDelete(hdr int, rest string) error {
	path, err := p.headerPath(hdr, markDelete, rest)
	if err != nil {
		return err
	}
	p.pos = p.skipBlank(hdr + 1)
	if p.pos < p.end && !isBoundary(p.lines[p.pos]) {
		return p.errf(p.pos, "'%s' takes no lines: expected the next file operation or '%s', found %s",
			markDelete, markEnd, quote(p.lines[p.pos]))
	}
	p.ops = append(p.ops, Op{Kind: KindDelete, Path: path, Line: hdr + 1})
	return nil
}

// unifiedRange matches the line-number part of a unified-diff hunk header
// ("-12,5 +12,6 @@ func f()"), which models sometimes write after "@@".
var unifiedRange = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$`) })

// anchorText returns the context text of an '@@' header, "" for none.
func anchorText(raw string) string {
	rest := strings.TrimSpace(strings.TrimPrefix(raw, "@@"))
	if m := unifiedRange().FindStringSubmatch(rest); m != nil {
		rest = strings.TrimSpace(m[1])
	}
	return rest
}

func (p *parser) parseUpdate(hdr int, rest string) error {
	path, err := p.headerPath(hdr, markUpdate, rest)
	if err != nil {
		return err
	}
	op := Op{Kind: KindUpdate, Path: path, Line: hdr + 1}
	p.pos = hdr + 1
	if p.pos < p.end {
		if l := strings.TrimRight(p.lines[p.pos], " \t"); strings.HasPrefix(l, markMove) {
			if op.MoveTo, err = p.headerPath(p.pos, markMove, l[len(markMove):]); err != nil {
				return err
			}
			p.pos++
		}
	}
	var cur *Hunk
	// Bare blank lines are context lines that lost their leading space,
	// unless nothing follows them in the hunk: then they only separated
	// sections and are dropped (dropping trailing context is harmless).
	blanks := 0
	flushBlanks := func() {
		for ; blanks > 0; blanks-- {
			cur.Lines = append(cur.Lines, HunkLine{Op: ' '})
		}
	}
	finish := func() error {
		blanks = 0
		if cur == nil {
			return nil
		}
		if len(cur.Lines) == 0 {
			return p.errf(cur.Line-1, "'@@' header without hunk lines after it in the update of %s", quote(path))
		}
		op.Hunks = append(op.Hunks, *cur)
		cur = nil
		return nil
	}
	for ; p.pos < p.end; p.pos++ {
		raw := p.lines[p.pos]
		if isBoundary(raw) {
			break
		}
		trimmed := strings.TrimRight(raw, " \t")
		switch {
		case strings.HasPrefix(raw, "@@"):
			anchor := anchorText(raw)
			if cur != nil && len(cur.Lines) == 0 {
				// Consecutive headers narrow the search step by step.
				if anchor != "" {
					cur.Anchors = append(cur.Anchors, anchor)
				}
				blanks = 0
				continue
			}
			if err := finish(); err != nil {
				return err
			}
			cur = &Hunk{Line: p.pos + 1}
			if anchor != "" {
				cur.Anchors = []string{anchor}
			}
		case raw != "" && (raw[0] == ' ' || raw[0] == '-' || raw[0] == '+'):
			if cur != nil && cur.EOF {
				return p.errf(p.pos, "expected '@@' to start a new hunk after '%s', found %s", markEndOfFile, quote(raw))
			}
			if cur == nil {
				cur = &Hunk{Line: p.pos + 1}
			}
			if len(cur.Lines) == 0 {
				blanks = 0 // leading blank context is dropped likewise
			}
			flushBlanks()
			cur.Lines = append(cur.Lines, HunkLine{Op: raw[0], Text: raw[1:]})
		case strings.TrimSpace(raw) == "":
			blanks++
		case trimmed == markEndOfFile:
			if cur == nil || len(cur.Lines) == 0 || cur.EOF {
				return p.errf(p.pos, "'%s' must follow the lines of a hunk", markEndOfFile)
			}
			// Before an end-of-file marker, blank lines are the file's
			// last lines.
			flushBlanks()
			cur.EOF = true
		case strings.HasPrefix(trimmed, markMove):
			return p.errf(p.pos, "'%s' must come right after '%s %s'", markMove, markUpdate, path)
		default:
			return p.errf(p.pos, "expected a hunk line starting with ' ', '-' or '+', an '@@' header or '%s' in the update of %s, found %s",
				markEndOfFile, quote(path), quote(raw))
		}
	}
	if err := finish(); err != nil {
		return err
	}
	if len(op.Hunks) == 0 && op.MoveTo == "" {
		return p.errf(hdr, "'%s %s' has no hunks: expected '@@' or lines starting with ' ', '-' or '+'", markUpdate, path)
	}
	p.ops = append(p.ops, op)
	return nil
}
