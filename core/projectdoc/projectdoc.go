// Package projectdoc finds the instructions a user keeps in files for the
// agent (AGENTS.md), as Codex does: the home's file, then one file per
// directory from the project root down to the working directory.
package projectdoc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Names of the files read in each directory, before the configured
// fallbacks: an override shadows the plain file.
const (
	OverrideName = "AGENTS.override.md"
	DefaultName  = "AGENTS.md"
)

// DefaultMaxBytes is project_doc_max_bytes's default: the budget of the
// project's files together. The home's file is not counted in it (as in
// the reference, which sends the home's file and the project's budget in
// full); it has a cap of its own, the same number of bytes.
const DefaultMaxBytes = 32 << 10

// DefaultRootMarkers is project_root_markers's default.
var DefaultRootMarkers = []string{".git"}

// Options are the config keys that shape the search.
type Options struct {
	// Home is the agent's home; its AGENTS.override.md or AGENTS.md comes
	// first.
	Home string
	// MaxBytes caps the project's files together; each is cut to what is
	// left of it, and files past it are dropped. 0 leaves them all out.
	// The home's file is cut to MaxBytes on its own (to DefaultMaxBytes
	// when MaxBytes is 0: the home's file is still read then).
	MaxBytes int
	// RootMarkers are the names whose presence makes a directory the
	// project root (the nearest ancestor of the working directory that
	// has one). Without one found, only the working directory is read.
	RootMarkers []string
	// FallbackNames are read in a directory that has neither
	// AGENTS.override.md nor AGENTS.md, in order.
	FallbackNames []string
}

// Doc is what was found.
type Doc struct {
	// Home is the home file's text, trimmed; Project the project files'
	// texts joined, root first. Either may be empty.
	Home, Project string
	// Sources are the files used, in the order their texts come.
	Sources []string
	// Warnings say what was cut or could not be read as text.
	Warnings []string
}

// Empty reports whether no instructions were found.
func (d Doc) Empty() bool { return d.Home == "" && d.Project == "" }

// Load finds the instructions for cwd. A file that cannot be read is
// skipped with a warning; Load itself never fails.
func Load(cwd string, o Options) Doc {
	var d Doc
	if o.Home != "" {
		// The reference reads the home's file whole, however large; a
		// daemon that sends it with every request caps it.
		limit := o.MaxBytes
		if limit <= 0 {
			limit = DefaultMaxBytes
		}
		for _, name := range []string{OverrideName, DefaultName} {
			path := filepath.Join(o.Home, name)
			text, _, ok := d.read(path, limit)
			if !ok {
				continue
			}
			d.Home = strings.TrimSpace(text)
			d.Sources = append(d.Sources, path)
			break
		}
	}
	if o.MaxBytes <= 0 {
		return d
	}
	budget := o.MaxBytes
	var parts []string
	for _, dir := range searchDirs(cwd, o.RootMarkers) {
		if budget <= 0 {
			break
		}
		path, ok := pick(dir, o.FallbackNames)
		if !ok {
			continue
		}
		text, used, ok := d.read(path, budget)
		if !ok {
			continue
		}
		budget -= used
		d.Sources = append(d.Sources, path)
		if strings.TrimSpace(text) != "" {
			parts = append(parts, text)
		}
	}
	d.Project = strings.Join(parts, "\n\n")
	return d
}

// Dirs are the directories from the project root (the nearest ancestor of
// cwd holding one of markers) down to cwd, root first; without a root,
// cwd alone. The skills search walks the same directories.
func Dirs(cwd string, markers []string) []string { return searchDirs(cwd, markers) }

// searchDirs are the directories from the project root down to cwd.
func searchDirs(cwd string, markers []string) []string {
	cwd = filepath.Clean(cwd)
	root := ""
	for dir := cwd; root == ""; {
		for _, m := range markers {
			if _, err := os.Lstat(filepath.Join(dir, m)); err == nil {
				root = dir
				break
			}
		}
		parent := filepath.Dir(dir)
		if root != "" || parent == dir {
			break
		}
		dir = parent
	}
	if root == "" {
		return []string{cwd}
	}
	var dirs []string
	for dir := cwd; ; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
		if dir == root {
			break
		}
	}
	for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
		dirs[i], dirs[j] = dirs[j], dirs[i]
	}
	return dirs
}

// pick returns the file a directory contributes: the first of the names
// that is a regular file.
func pick(dir string, fallbacks []string) (string, bool) {
	seen := map[string]bool{}
	for _, name := range append([]string{OverrideName, DefaultName}, fallbacks...) {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		path := filepath.Join(dir, name)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			return path, true
		}
	}
	return "", false
}

// read reads a regular file as text, at most limit bytes (-1: all), with
// invalid UTF-8 replaced, and says how many bytes of the file it used; ok
// is false when there is no such file or it cannot be read (a warning then
// says why).
func (d *Doc) read(path string, limit int) (text string, used int, ok bool) {
	st, err := os.Stat(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.Warnings = append(d.Warnings, fmt.Sprintf("cannot read %s: %v", path, err))
		}
		return "", 0, false
	}
	if !st.Mode().IsRegular() {
		return "", 0, false
	}
	f, err := os.Open(path)
	if err != nil {
		d.Warnings = append(d.Warnings, fmt.Sprintf("cannot read %s: %v", path, err))
		return "", 0, false
	}
	defer f.Close()
	size := st.Size()
	cut := limit >= 0 && size > int64(limit)
	if cut {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s is %d bytes; only the first %d are used (project_doc_max_bytes)", path, size, limit))
		size = int64(limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, size))
	if err != nil {
		d.Warnings = append(d.Warnings, fmt.Sprintf("cannot read %s: %v", path, err))
		return "", 0, false
	}
	used = len(b)
	if cut {
		// Not half a character at the cut.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	if !utf8.Valid(b) {
		d.Warnings = append(d.Warnings, fmt.Sprintf("instructions from %s contain invalid UTF-8: replaced", path))
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	return string(b), used, true
}
