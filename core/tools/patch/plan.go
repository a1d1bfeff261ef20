package patch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileSize is the largest file the applier reads. Patching larger files
// through a model is a mistake worth reporting rather than a slow turn.
const MaxFileSize = 64 << 20

// newFileMode is the mode of files the patch creates.
const newFileMode fs.FileMode = 0o644

// ApplyOptions tune planning and applying a patch. The zero value is ready.
type ApplyOptions struct {
	// Check, if set, is called with every absolute path the patch would
	// write or delete (both the source and the destination of a move, and
	// the resolved target of a symlink) before anything is written. An
	// error refuses the whole patch.
	Check func(absPath string) error
	// WritableRoots, if not empty, refuses any path outside these absolute
	// directories (symlinks resolved), like a Check.
	WritableRoots []string
	// StrictPunctuation turns off the last matching tier, which folds
	// typographic dashes, quotes and spaces to ASCII.
	StrictPunctuation bool
}

// Plan is a patch computed against the files on disk but not written: what
// each operation changes, and the final content of every file it touches.
// Commit writes it.
type Plan struct {
	// Changes has one entry per operation of the patch, in order, with
	// absolute paths.
	Changes []FileChange
	// Summary is the text the model gets back once the plan is committed.
	Summary string

	files []*fileState // every file touched, in order of first touch
}

// fileState is one file of a plan: how it was on disk, how it ends.
type fileState struct {
	path string // absolute, as the patch names it
	real string // where to read and write it: path with symlinks resolved

	origExists bool
	orig       string
	origMode   fs.FileMode

	exists  bool
	content string
	mode    fs.FileMode
}

func (s *fileState) changed() bool {
	return s.exists != s.origExists || (s.exists && (s.content != s.orig || s.mode != s.origMode))
}

// Plan computes the patch against the files under cwd (an absolute
// directory that relative paths are resolved against) without writing
// anything. It fails with an *ApplyError if any operation cannot be applied,
// or if opts refuse a path.
func (p *Patch) Plan(cwd string, opts ApplyOptions) (*Plan, error) {
	if !filepath.IsAbs(cwd) {
		return nil, fmt.Errorf("%w: cwd %q is not absolute", ErrBadPath, cwd)
	}
	pl := &Plan{}
	byPath := map[string]*fileState{}
	get := func(op *Op, path string) (*fileState, error) {
		if s, ok := byPath[path]; ok {
			return s, nil
		}
		s, err := loadFile(path)
		if err != nil {
			return nil, &ApplyError{Path: op.Path, Line: op.Line, Err: err}
		}
		for _, o := range pl.files {
			if o.real == s.real {
				// Two names for one file would be written twice, the
				// second write losing the first.
				return nil, &ApplyError{Path: op.Path, Line: op.Line, Err: ErrBadPath,
					Detail: fmt.Sprintf(": it is the same file as %s (through a symbolic link); name it one way only", o.path)}
			}
		}
		byPath[path] = s
		pl.files = append(pl.files, s)
		return s, nil
	}
	var added, modified, deleted []string
	for i := range p.Ops {
		op := &p.Ops[i]
		path := resolve(cwd, op.Path)
		s, err := get(op, path)
		if err != nil {
			return nil, err
		}
		opErr := func(err error, detail string) error {
			return &ApplyError{Path: op.Path, Line: op.Line, Err: err, Detail: detail}
		}
		switch op.Kind {
		case KindAdd:
			if !s.exists {
				s.mode = newFileMode
			}
			s.exists, s.content = true, op.Content
			pl.Changes = append(pl.Changes, FileChange{Path: path, Kind: KindAdd, Diff: op.Content})
			added = append(added, op.Path)
		case KindDelete:
			if !s.exists {
				return nil, opErr(ErrFileNotFound, ": cannot delete a file that does not exist")
			}
			pl.Changes = append(pl.Changes, FileChange{Path: path, Kind: KindDelete, Diff: s.content})
			s.exists, s.content = false, ""
			deleted = append(deleted, op.Path)
		case KindUpdate:
			if !s.exists {
				return nil, opErr(ErrFileNotFound, ": cannot update a file that does not exist (use '*** Add File:' to create it)")
			}
			content, err := applyHunks(s.content, op, !opts.StrictPunctuation)
			if err != nil {
				return nil, err
			}
			ch := FileChange{Path: path, Kind: KindUpdate, Diff: unifiedHunks(s.content, content, itemDiffContext)}
			shown := op.Path
			if dest := resolve(cwd, op.MoveTo); op.MoveTo != "" && dest != path {
				d, err := get(op, dest)
				if err != nil {
					return nil, err
				}
				d.exists, d.content, d.mode = true, content, s.mode
				s.exists, s.content = false, ""
				ch.MovePath, shown = dest, op.MoveTo
			} else {
				s.content = content
			}
			pl.Changes = append(pl.Changes, ch)
			modified = append(modified, shown)
		default:
			return nil, opErr(ErrInvalidPatch, fmt.Sprintf(": unknown operation %q", op.Kind))
		}
	}
	pl.Summary = summary(added, modified, deleted)
	if err := pl.check(opts); err != nil {
		return nil, err
	}
	return pl, nil
}

// resolve makes a patch path absolute against cwd.
func resolve(cwd, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(cwd, path)
}

// loadFile reads a file's current state. A missing file is a state, not an
// error; a directory or device is an error.
func loadFile(path string) (*fileState, error) {
	s := &fileState{path: path, real: path}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// Write through the link: replacing it with a file would change
		// what it means.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			s.real = real
			fi, err = os.Stat(real)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadPath, err)
			}
		} else {
			return nil, fmt.Errorf("%w: %s is a dangling symbolic link", ErrNotRegular, path)
		}
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, describeMode(fi.Mode()))
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%w: %s has %d bytes (limit %d)", ErrTooLarge, path, fi.Size(), MaxFileSize)
	}
	content, err := readLimited(s.real)
	if err != nil {
		return nil, err
	}
	s.origExists, s.orig, s.origMode = true, content, fi.Mode().Perm()
	s.exists, s.content, s.mode = true, content, s.origMode
	return s, nil
}

func readLimited(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	if len(b) > MaxFileSize {
		return "", fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, path, MaxFileSize)
	}
	return string(b), nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "non-regular file"
}

// summary is the model's success text: added, then modified, then deleted
// files, as the patch names them.
func summary(added, modified, deleted []string) string {
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	seen := map[string]bool{}
	for _, group := range []struct {
		letter string
		paths  []string
	}{{"A", added}, {"M", modified}, {"D", deleted}} {
		for _, p := range group.paths {
			key := group.letter + " " + p
			if !seen[key] {
				seen[key] = true
				b.WriteString(key + "\n")
			}
		}
	}
	return b.String()
}

// Paths returns every absolute path the plan writes or deletes, including
// both ends of moves and resolved symlink targets, in order of first touch.
func (pl *Plan) Paths() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range pl.files {
		for _, p := range []string{s.path, s.real} {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Check calls fn with every path of Paths and returns the first refusal,
// wrapped in an *ApplyError (errors.Is ErrRefused).
func (pl *Plan) Check(fn func(absPath string) error) error {
	for _, p := range pl.Paths() {
		if err := fn(p); err != nil {
			return &ApplyError{Path: p, Err: fmt.Errorf("%w: %w", ErrRefused, err)}
		}
	}
	return nil
}

func (pl *Plan) check(opts ApplyOptions) error {
	if len(opts.WritableRoots) > 0 {
		if err := pl.Check(WithinRoots(opts.WritableRoots)); err != nil {
			return err
		}
	}
	if opts.Check != nil {
		return pl.Check(opts.Check)
	}
	return nil
}
