package patch

import "strings"

// StreamParser builds a best-effort preview of a patch the model is still
// writing (the custom_tool_call_input deltas): the files named so far and,
// for each, the part of its diff written so far. It never fails: lines it
// cannot place are skipped, as the final patch is parsed by Parse anyway.
//
// Only complete lines count, so each snapshot extends the previous one:
// files are only appended, and each file's diff only grows. Paths are as
// written. Push and Snapshot must not be called concurrently.
type StreamParser struct {
	partial string // text after the last newline
	state   streamState
	files   []*previewFile
	cur     *previewFile
	blanks  int  // bare blank lines held back until more hunk lines come
	inHunk  bool // the current update hunk has body lines
}

type streamState int

const (
	streamBefore streamState = iota // before '*** Begin Patch'
	streamOps                       // between file operations
	streamAdd
	streamUpdate
	streamDelete
	streamDone // after '*** End Patch'
)

type previewFile struct {
	change FileChange
	diff   strings.Builder
}

// NewStreamParser returns an empty parser.
func NewStreamParser() *StreamParser { return &StreamParser{} }

// Push adds a delta of the patch text and reports whether the preview
// changed (a new file, a new line in a diff, a move destination).
func (sp *StreamParser) Push(delta string) bool {
	changed := false
	for {
		i := strings.IndexByte(delta, '\n')
		if i < 0 {
			sp.partial += delta
			return changed
		}
		line := sp.partial + delta[:i]
		sp.partial = ""
		delta = delta[i+1:]
		if sp.line(line) {
			changed = true
		}
	}
}

// Finish treats a last line without newline as complete (call it when the
// input is complete) and reports whether the preview changed.
func (sp *StreamParser) Finish() bool {
	if sp.partial == "" {
		return false
	}
	line := sp.partial
	sp.partial = ""
	return sp.line(line)
}

// Snapshot returns the preview so far. The slice and its elements are the
// caller's.
func (sp *StreamParser) Snapshot() []FileChange {
	out := make([]FileChange, len(sp.files))
	for i, f := range sp.files {
		out[i] = f.change
		out[i].Diff = f.diff.String()
	}
	return out
}

func (sp *StreamParser) line(raw string) bool {
	raw = strings.TrimSuffix(raw, "\r")
	switch sp.state {
	case streamBefore:
		if strings.TrimSpace(raw) == markBegin {
			sp.state = streamOps
		}
		return false
	case streamDone:
		return false
	}
	if isBoundary(raw) {
		return sp.header(strings.TrimRight(raw, " \t"))
	}
	trimmed := strings.TrimRight(raw, " \t")
	switch sp.state {
	case streamAdd:
		switch {
		case strings.HasPrefix(raw, "+"):
			sp.flushBlanks("\n")
			sp.cur.diff.WriteString(raw[1:])
			sp.cur.diff.WriteByte('\n')
			return true
		case strings.TrimSpace(raw) == "":
			sp.blanks++
		}
	case streamUpdate:
		switch {
		case strings.HasPrefix(trimmed, markMove) && sp.cur.diff.Len() == 0 && sp.cur.change.MovePath == "":
			if dest := strings.TrimSpace(trimmed[len(markMove):]); dest != "" {
				sp.cur.change.MovePath = dest
				return true
			}
		case strings.HasPrefix(raw, "@@"):
			sp.blanks = 0
			sp.inHunk = false
			sp.cur.diff.WriteString(trimmed)
			sp.cur.diff.WriteByte('\n')
			return true
		case raw != "" && (raw[0] == ' ' || raw[0] == '-' || raw[0] == '+'):
			if !sp.inHunk {
				sp.blanks = 0
			}
			sp.flushBlanks(" \n")
			sp.inHunk = true
			sp.cur.diff.WriteString(raw)
			sp.cur.diff.WriteByte('\n')
			return true
		case trimmed == markEndOfFile:
			sp.flushBlanks(" \n")
			sp.inHunk = false
			sp.cur.diff.WriteString(markEndOfFile + "\n")
			return true
		case strings.TrimSpace(raw) == "":
			sp.blanks++
		}
	}
	return false
}

func (sp *StreamParser) flushBlanks(as string) {
	for ; sp.blanks > 0; sp.blanks-- {
		sp.cur.diff.WriteString(as)
	}
}

func (sp *StreamParser) header(l string) bool {
	sp.blanks, sp.inHunk, sp.cur = 0, false, nil
	var kind Kind
	var rest string
	switch {
	case l == markEnd:
		sp.state = streamDone
		return false
	case strings.HasPrefix(l, markAdd):
		kind, rest, sp.state = KindAdd, l[len(markAdd):], streamAdd
	case strings.HasPrefix(l, markDelete):
		kind, rest, sp.state = KindDelete, l[len(markDelete):], streamDelete
	default:
		kind, rest, sp.state = KindUpdate, l[len(markUpdate):], streamUpdate
	}
	path := strings.TrimSpace(rest)
	if path == "" {
		sp.state = streamOps // nothing to show for a nameless file
		return false
	}
	sp.cur = &previewFile{change: FileChange{Path: path, Kind: kind}}
	sp.files = append(sp.files, sp.cur)
	return true
}
