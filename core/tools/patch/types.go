package patch

// Kind says what a patch does to one file. The values are the ones the wire
// protocol's PatchChangeKind uses.
type Kind string

// The kinds of file change.
const (
	KindAdd    Kind = "add"
	KindDelete Kind = "delete"
	KindUpdate Kind = "update"
)

// Patch is a parsed apply_patch input: file operations in the order the
// model wrote them. Paths are as written (relative or absolute).
type Patch struct {
	Ops []Op
}

// Op is one file operation of a patch.
type Op struct {
	Kind Kind
	// Path is the file as written after the header.
	Path string
	// MoveTo is the destination of an update that renames, as written.
	MoveTo string
	// Content is the whole new content of an added file.
	Content string
	// Hunks are the changes of an update, in file order.
	Hunks []Hunk
	// Line is the 1-based line of the op's header in the patch text.
	Line int
}

// Hunk is one change of an update: the lines to find (context and removed
// lines) and what replaces them.
type Hunk struct {
	// Anchors are the texts of the hunk's '@@ text' headers, outermost
	// first. Each is searched for in turn before the hunk's lines; they
	// disambiguate context that occurs more than once.
	Anchors []string
	// Lines are the hunk's body lines in order.
	Lines []HunkLine
	// EOF is set when the hunk ends with '*** End of File': its lines must
	// be the last lines of the file.
	EOF bool
	// Line is the 1-based patch line where the hunk starts (its first '@@'
	// header, or its first body line).
	Line int
}

// HunkLine is one body line of a hunk.
type HunkLine struct {
	// Op is ' ' (context), '-' (removed) or '+' (added).
	Op byte
	// Text is the line without its op and without a line ending.
	Text string
}

// FileChange is a patch's effect on one file, as the fileChange item shows
// it.
type FileChange struct {
	// Path is absolute (relative as written in a streaming preview).
	Path string
	Kind Kind
	// MovePath is the absolute destination of an update that renames.
	MovePath string
	// Diff is a unified diff (hunks only, no file headers, one line of
	// context) of the old content to the new; for an add, the new content;
	// for a delete, the deleted content. In a streaming preview, an
	// update's Diff is its hunks as written so far ('@@' headers and
	// ' ', '-', '+' lines), since the file is not read.
	Diff string
}
