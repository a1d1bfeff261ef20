package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

const zeroID = "0000000000000000000000000000000000000000"

// TurnDiffTracker keeps what every file a turn's patches touch looked like
// before the turn first touched it, and renders the turn's aggregated diff
// in git's format (the turn/diff/updated text), with paths relative to the
// git work tree holding the cwd, or to the cwd outside a repository.
//
// The diff compares those baselines with the files on disk when Diff is
// called. It is safe for concurrent use.
type TurnDiffTracker struct {
	root string

	mu       sync.Mutex
	baseline map[string]*baseFile // by absolute path, as patches name it
	origin   map[string]string    // moved file's path → path it came from
}

type baseFile struct {
	real    string // where the file is read (symlinks resolved)
	exists  bool
	content string
	mode    fs.FileMode
}

// NewTurnDiffTracker returns a tracker for a turn running in cwd.
func NewTurnDiffTracker(cwd string) *TurnDiffTracker {
	return &TurnDiffTracker{root: displayRoot(cwd), baseline: map[string]*baseFile{}, origin: map[string]string{}}
}

// displayRoot is the git work tree holding dir, or dir itself.
func displayRoot(dir string) string {
	dir = filepath.Clean(dir)
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// Root is the directory diff paths are relative to.
func (t *TurnDiffTracker) Root() string { return t.root }

// Track records the baselines of the files a plan touches that the turn has
// not touched yet, from the contents the plan read before writing, and
// follows the plan's moves. Call it for every plan the turn commits, once
// Commit succeeds: only then are those contents known to be what was on
// disk (a stale plan's are not).
func (t *TurnDiffTracker) Track(pl *Plan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range pl.files {
		if _, ok := t.baseline[s.path]; !ok {
			t.baseline[s.path] = &baseFile{real: s.real, exists: s.origExists, content: s.orig, mode: s.origMode}
		}
	}
	for _, c := range pl.Changes {
		switch {
		case c.MovePath != "":
			from, ok := t.origin[c.Path]
			if !ok {
				from = c.Path
			}
			delete(t.origin, c.Path)
			if c.MovePath == from {
				delete(t.origin, c.MovePath)
			} else {
				t.origin[c.MovePath] = from
			}
		case c.Kind == KindAdd || c.Kind == KindDelete:
			delete(t.origin, c.Path)
		}
	}
}

// Diff returns the turn's changes so far as one git diff, files in path
// order; "" when nothing differs.
func (t *TurnDiffTracker) Diff() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := make(map[string]*baseFile, len(t.baseline))
	for p, b := range t.baseline {
		cur, err := readCurrent(b.real)
		if err != nil {
			return "", err
		}
		now[p] = cur
	}
	// A move shows as a rename when its source is gone and its
	// destination is new; otherwise as the deletion and the change it is.
	renameTo := map[string]string{}
	renamed := map[string]bool{}
	for dst, src := range t.origin {
		bs, bd := t.baseline[src], t.baseline[dst]
		if bs != nil && bd != nil && bs.exists && !now[src].exists && !bd.exists && now[dst].exists {
			renameTo[src] = dst
			renamed[dst] = true
		}
	}
	paths := make([]string, 0, len(t.baseline))
	for p := range t.baseline {
		if !renamed[p] {
			paths = append(paths, p)
		}
	}
	sort.Slice(paths, func(i, j int) bool { return t.display(paths[i]) < t.display(paths[j]) })
	var b strings.Builder
	for _, p := range paths {
		if dst, ok := renameTo[p]; ok {
			t.render(&b, p, dst, t.baseline[p], now[dst])
		} else {
			t.render(&b, p, p, t.baseline[p], now[p])
		}
	}
	return b.String(), nil
}

func readCurrent(path string) (*baseFile, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &baseFile{real: path}, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return &baseFile{real: path}, nil
	}
	content, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return &baseFile{real: path, exists: true, content: content, mode: fi.Mode().Perm()}, nil
}

// display is a path as the diff shows it: relative to the root, with
// forward slashes.
func (t *TurnDiffTracker) display(p string) string {
	if rel, err := filepath.Rel(t.root, p); err == nil {
		p = rel
	}
	return filepath.ToSlash(p)
}

func gitMode(m fs.FileMode) string {
	if m&0o100 != 0 {
		return "100755"
	}
	return "100644"
}

// render writes one file's section of the diff, in git's layout.
func (t *TurnDiffTracker) render(b *strings.Builder, oldPath, newPath string, old, cur *baseFile) {
	if !old.exists && !cur.exists {
		return
	}
	if oldPath == newPath && old.exists && cur.exists && old.content == cur.content && gitMode(old.mode) == gitMode(cur.mode) {
		return
	}
	aName, bName := "a/"+t.display(oldPath), "b/"+t.display(newPath)
	fmt.Fprintf(b, "diff --git %s %s\n", gitQuote(aName), gitQuote(bName))
	oldID, newID := zeroID, zeroID
	if old.exists {
		oldID = gitBlobID(old.content)
	}
	if cur.exists {
		newID = gitBlobID(cur.content)
	}
	indexMode := ""
	switch {
	case !old.exists:
		fmt.Fprintf(b, "new file mode %s\n", gitMode(cur.mode))
	case !cur.exists:
		fmt.Fprintf(b, "deleted file mode %s\n", gitMode(old.mode))
	case gitMode(old.mode) != gitMode(cur.mode):
		fmt.Fprintf(b, "old mode %s\nnew mode %s\n", gitMode(old.mode), gitMode(cur.mode))
	default:
		indexMode = " " + gitMode(cur.mode)
	}
	if oldPath != newPath {
		if old.content == cur.content {
			b.WriteString("similarity index 100%\n")
		}
		fmt.Fprintf(b, "rename from %s\nrename to %s\n", gitQuote(t.display(oldPath)), gitQuote(t.display(newPath)))
	}
	if oldID == newID {
		return
	}
	fmt.Fprintf(b, "index %s..%s%s\n", oldID, newID, indexMode)
	if !old.exists {
		aName = "/dev/null"
	}
	if !cur.exists {
		bName = "/dev/null"
	}
	if strings.IndexByte(old.content, 0) >= 0 || strings.IndexByte(cur.content, 0) >= 0 {
		fmt.Fprintf(b, "Binary files %s and %s differ\n", aName, bName)
		return
	}
	hunks := unifiedHunks(old.content, cur.content, turnDiffContext)
	if hunks == "" {
		return
	}
	fmt.Fprintf(b, "--- %s\n+++ %s\n", gitQuote(aName), gitQuote(bName))
	b.WriteString(hunks)
}

// gitQuote quotes a name the way git does when it holds a double quote, a
// backslash or a control character. Other bytes are left as they are.
func gitQuote(s string) string {
	needs := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			needs = true
			break
		}
	}
	if !needs {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
