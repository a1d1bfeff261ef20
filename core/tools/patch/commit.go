package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Result is what a committed patch did.
type Result struct {
	// Changes has one entry per operation, as in Plan.Changes.
	Changes []FileChange
	// Summary is the model's success text, e.g.
	// "Success. Updated the following files:\nA hello.txt\nM b.txt\n".
	Summary string
}

// Apply plans the patch against cwd and commits it: the files change all
// together or not at all.
func (p *Patch) Apply(cwd string, opts ApplyOptions) (*Result, error) {
	pl, err := p.Plan(cwd, opts)
	if err != nil {
		return nil, err
	}
	return pl.Commit()
}

// renameFile is os.Rename; tests replace it to fail a write half-way.
var renameFile = os.Rename

// Commit writes the plan. It first checks that no file changed since the
// plan read it (ErrStale), then writes every new content to a temporary file
// beside its target (keeping the file's mode) and only then renames them
// into place and removes deleted files. A failure before the renames leaves
// everything untouched; a failure during them restores the files already
// replaced. A plan must be committed at most once, and not concurrently with
// another plan touching the same files.
func (pl *Plan) Commit() (*Result, error) {
	var writes []*fileState
	for _, s := range pl.files {
		if s.changed() {
			writes = append(writes, s)
		}
	}
	for _, s := range writes {
		if err := s.checkUnchanged(); err != nil {
			return nil, err
		}
	}

	st := &staging{temps: map[*fileState]string{}}
	for _, s := range writes {
		if !s.exists {
			continue
		}
		if err := st.stage(s); err != nil {
			st.cleanup()
			return nil, &ApplyError{Path: s.path, Err: fmt.Errorf("%w: %w", ErrWrite, err), Detail: "; no file was changed"}
		}
	}

	var done []*fileState
	for _, s := range writes {
		var err error
		switch {
		case s.exists:
			err = renameFile(st.temps[s], s.real)
			if err == nil {
				delete(st.temps, s)
			}
		case s.origExists:
			err = os.Remove(s.real)
		}
		if err != nil {
			rbErr := rollback(done)
			st.cleanup()
			detail := "; no file was changed"
			if rbErr != nil {
				detail = "; restoring the files already written also failed, they may be partly patched: " + rbErr.Error()
			}
			return nil, &ApplyError{Path: s.path, Err: fmt.Errorf("%w: %w", ErrWrite, err), Detail: detail}
		}
		done = append(done, s)
	}
	return &Result{Changes: pl.Changes, Summary: pl.Summary}, nil
}

// checkUnchanged fails with ErrStale if the file on disk is no longer what
// the plan read.
func (s *fileState) checkUnchanged() error {
	stale := func(why string) error {
		return &ApplyError{Path: s.path, Err: ErrStale, Detail: ": " + why + "; read it again and redo the patch"}
	}
	fi, err := os.Stat(s.real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if s.origExists {
			return stale("it was deleted")
		}
		return nil
	case err != nil:
		return &ApplyError{Path: s.path, Err: fmt.Errorf("%w: %w", ErrBadPath, err)}
	case !s.origExists:
		return stale("it was created")
	case !fi.Mode().IsRegular():
		return stale("it is no longer a regular file")
	}
	content, err := readLimited(s.real)
	if err != nil {
		return &ApplyError{Path: s.path, Err: err}
	}
	if content != s.orig {
		return stale("its content changed")
	}
	return nil
}

// staging holds the temporary files and directories written before the
// renames, so that a failure can remove them.
type staging struct {
	temps   map[*fileState]string
	created []string // directories made, parents first
}

func (st *staging) stage(s *fileState) error {
	dir := filepath.Dir(s.real)
	if err := st.mkdirs(dir); err != nil {
		return err
	}
	tmp, err := writeTemp(dir, filepath.Base(s.real), s.content, s.mode)
	if err != nil {
		return err
	}
	st.temps[s] = tmp
	return nil
}

// mkdirs creates dir and its missing parents, remembering them.
func (st *staging) mkdirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(d) == d {
			return err
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		st.created = append(st.created, missing[i])
	}
	return nil
}

func (st *staging) cleanup() {
	for _, t := range st.temps {
		os.Remove(t)
	}
	for i := len(st.created) - 1; i >= 0; i-- {
		os.Remove(st.created[i]) // only succeeds while empty
	}
}

// writeTemp writes content to a new temporary file in dir, synced, with
// mode, and returns its name.
func writeTemp(dir, base, content string, mode fs.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, "."+base+".patch-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", err
	}
	if _, err := f.WriteString(content); err != nil {
		return fail(err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// rollback restores files already replaced or removed, newest first.
func rollback(done []*fileState) error {
	var errs []string
	for i := len(done) - 1; i >= 0; i-- {
		s := done[i]
		var err error
		if s.origExists {
			var tmp string
			if tmp, err = writeTemp(filepath.Dir(s.real), filepath.Base(s.real), s.orig, s.origMode); err == nil {
				if err = os.Rename(tmp, s.real); err != nil {
					os.Remove(tmp)
				}
			}
		} else {
			err = os.Remove(s.real)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", s.path, err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
