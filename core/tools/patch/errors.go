package patch

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sentinel errors, compared with errors.Is.
var (
	// ErrInvalidPatch: the text is not a valid patch (a *ParseError).
	ErrInvalidPatch = errors.New("invalid patch")
	// ErrContextNotFound: a hunk's lines are not in the file.
	ErrContextNotFound = errors.New("context not found")
	// ErrAmbiguous: a hunk's lines occur in more than one place and no
	// '@@' header says which.
	ErrAmbiguous = errors.New("ambiguous context")
	// ErrFileNotFound: an update or delete names a file that does not exist.
	ErrFileNotFound = errors.New("file not found")
	// ErrNotRegular: the path is a directory or another non-regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than MaxFileSize.
	ErrTooLarge = errors.New("file too large")
	// ErrBadPath: the path cannot be resolved (relative without a cwd...).
	ErrBadPath = errors.New("bad path")
	// ErrRefused: the caller's path check refused a path.
	ErrRefused = errors.New("path refused")
	// ErrStale: a file changed on disk between Plan and Commit.
	ErrStale = errors.New("file changed since the patch was planned")
	// ErrWrite: writing the files failed; nothing was changed (or what was
	// written has been rolled back, unless the error says otherwise).
	ErrWrite = errors.New("write failed")
)

// ParseError is a syntax error in a patch, at a 1-based line of the text as
// the model wrote it.
type ParseError struct {
	Line int
	Msg  string
}

// Error implements error.
func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid patch: line %d: %s", e.Line, e.Msg)
}

// Is makes errors.Is(err, ErrInvalidPatch) true for a *ParseError.
func (e *ParseError) Is(target error) bool { return target == ErrInvalidPatch }

// ApplyError is a failure to apply one file operation of a patch. Err is one
// of the sentinels above (or wraps one).
type ApplyError struct {
	// Path is the file as written in the patch.
	Path string
	// Hunk is the 1-based hunk number, 0 when the error is not about a hunk.
	Hunk int
	// Line is the 1-based patch line of the op or hunk.
	Line int
	// Err is the cause.
	Err error
	// Detail is extra text for the model (the lines that were not found).
	Detail string
}

// Error implements error. The text is written for the model: it names the
// file, the hunk and the patch line, and says what to do about it.
func (e *ApplyError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Hunk > 0 {
		fmt.Fprintf(&b, ": hunk %d (patch line %d)", e.Hunk, e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Detail != "" {
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *ApplyError) Unwrap() error { return e.Err }

// quote shows a line of model text in an error, shortened.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return "'" + s + "'"
}
