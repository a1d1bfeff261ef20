// Package skills finds the skills a user keeps on disk, as Codex does: a
// skill is a directory with a SKILL.md whose YAML front matter names it
// and says what it is for. The model is given the list (names,
// descriptions, paths) and reads a skill's body itself when it needs it.
//
// Roots, in the order the list shows them (repo first, then user, then
// system):
//
//   - repo: <cwd>/.codex/skills, and .agents/skills in every directory
//     from the project root (the nearest ancestor with a root marker,
//     .git by default) down to the cwd;
//   - user: <home>/skills and ~/.agents/skills;
//   - system: <home>/skills/.system (where Codex keeps the skills it
//     ships, when the home is shared with it).
//
// A root is searched breadth first, at most six directories deep and
// 2,000 directories in all; names starting with a dot are skipped. A
// SKILL.md that cannot be used is reported with its path and the reason;
// it never stops the others.
package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/agentd-dev/agentd/core/projectdoc"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Limits of a skill's fields, in characters, and of the search.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
	maxScanDepth      = 6
	maxDirsPerRoot    = 2000
	// maxHeadBytes is how much of a SKILL.md is read to find its front
	// matter: the body is the model's to read, not ours.
	maxHeadBytes = 256 << 10
)

// Scope is where a skill comes from; the values are the protocol's.
type Scope string

// Scopes, in the order the list shows them.
const (
	ScopeRepo   Scope = "repo"
	ScopeUser   Scope = "user"
	ScopeSystem Scope = "system"
	ScopeAdmin  Scope = "admin"
)

func (s Scope) rank() int {
	switch s {
	case ScopeRepo:
		return 0
	case ScopeUser:
		return 1
	case ScopeSystem:
		return 2
	}
	return 3
}

// Skill is one usable SKILL.md.
type Skill struct {
	Name        string
	Description string
	// ShortDescription is metadata.short-description, or "".
	ShortDescription string
	// Path is the SKILL.md's absolute path, symbolic links resolved.
	Path    string
	Scope   Scope
	Enabled bool
}

// Error is a SKILL.md that could not be used, and why.
type Error struct {
	Path    string
	Message string
}

// Rule enables or disables skills: those at Path, or those named Name
// (exactly one of the two is set). Rules apply in order, a later one
// overriding an earlier one for the same skill ([[skills.config]]).
type Rule struct {
	Name    string
	Path    string
	Enabled bool
}

// Options say where to look.
type Options struct {
	// Home is the agent's home (<home>/skills).
	Home string
	// UserHome is the user's home directory (~/.agents/skills); "" skips
	// it.
	UserHome string
	// RootMarkers find the project root (project_root_markers); nil means
	// projectdoc.DefaultRootMarkers.
	RootMarkers []string
	// Rules enable and disable skills; skills are enabled by default.
	Rules []Rule
}

// Result is what a search found.
type Result struct {
	Skills []Skill
	Errors []Error
}

type root struct {
	path  string
	scope Scope
}

// Discover finds the skills for a thread in cwd. It never fails: what it
// cannot read is an Error, or (a root that cannot be listed) nothing.
func Discover(cwd string, o Options) Result {
	var res Result
	seen := map[string]bool{}
	for _, r := range roots(cwd, o) {
		res.scan(r, seen)
	}
	slices.SortStableFunc(res.Skills, func(a, b Skill) int {
		if d := a.Scope.rank() - b.Scope.rank(); d != 0 {
			return d
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	slices.SortStableFunc(res.Errors, func(a, b Error) int { return strings.Compare(a.Path, b.Path) })
	for i := range res.Skills {
		res.Skills[i].Enabled = true
	}
	ApplyRules(res.Skills, o.Rules)
	return res
}

// roots are the directories searched, without duplicates, in order.
func roots(cwd string, o Options) []root {
	markers := o.RootMarkers
	if markers == nil {
		markers = projectdoc.DefaultRootMarkers
	}
	var out []root
	add := func(path string, scope Scope) {
		path = filepath.Clean(path)
		for _, r := range out {
			if r.path == path {
				return
			}
		}
		out = append(out, root{path, scope})
	}
	if cwd != "" && filepath.IsAbs(cwd) {
		add(filepath.Join(cwd, ".codex", "skills"), ScopeRepo)
		for _, dir := range projectdoc.Dirs(cwd, markers) {
			add(filepath.Join(dir, ".agents", "skills"), ScopeRepo)
		}
	}
	if o.Home != "" {
		add(filepath.Join(o.Home, "skills"), ScopeUser)
	}
	if o.UserHome != "" {
		add(filepath.Join(o.UserHome, ".agents", "skills"), ScopeUser)
	}
	if o.Home != "" {
		add(filepath.Join(o.Home, "skills", ".system"), ScopeSystem)
	}
	return out
}

// scan searches one root breadth first. seen holds the SKILL.md files
// already taken (by resolved path), so a skill reached twice counts once.
func (res *Result) scan(r root, seen map[string]bool) {
	start, err := filepath.EvalSymlinks(r.path)
	if err != nil {
		return
	}
	if st, err := os.Stat(start); err != nil || !st.IsDir() {
		return
	}
	// Codex writes the system skills itself; links are followed
	// elsewhere only.
	follow := r.scope != ScopeSystem
	type entry struct {
		dir   string
		depth int
	}
	visited := map[string]bool{start: true}
	queue := []entry{{start, 0}}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		ents, err := os.ReadDir(cur.dir)
		if err != nil {
			continue
		}
		for _, de := range ents {
			name := de.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			path := filepath.Join(cur.dir, name)
			typ := de.Type()
			if typ&fs.ModeSymlink != 0 {
				if !follow {
					continue
				}
				st, err := os.Stat(path)
				if err != nil || !st.IsDir() {
					// A link to a file is not followed: a SKILL.md is
					// a regular file in its directory.
					continue
				}
				typ = fs.ModeDir
			}
			switch {
			case typ.IsDir():
				next := cur.depth + 1
				if next > maxScanDepth || len(visited) >= maxDirsPerRoot {
					continue
				}
				resolved, err := filepath.EvalSymlinks(path)
				if err != nil || visited[resolved] {
					continue
				}
				visited[resolved] = true
				queue = append(queue, entry{resolved, next})
			case typ.IsRegular() && name == FileName:
				if seen[path] {
					continue
				}
				seen[path] = true
				s, err := parseFile(path)
				if err != nil {
					// The system skills are Codex's: their problems are
					// not the user's to fix.
					if r.scope != ScopeSystem {
						res.Errors = append(res.Errors, Error{Path: path, Message: err.Error()})
					}
					continue
				}
				s.Scope = r.scope
				res.Skills = append(res.Skills, s)
			}
		}
	}
}

// frontMatter is the part of the YAML front matter agentd reads; other
// keys are allowed and ignored.
type frontMatter struct {
	Name        *string `yaml:"name"`
	Description *string `yaml:"description"`
	Metadata    struct {
		ShortDescription *string `yaml:"short-description"`
	} `yaml:"metadata"`
}

// Read reads the front matter of the SKILL.md at path: the skill without
// its scope, or why it cannot be used.
func Read(path string) (Skill, error) { return parseFile(path) }

// parseFile reads a SKILL.md's front matter. The errors are worded as
// Codex words them, so that a user sees the same text from both.
func parseFile(path string) (Skill, error) {
	head, err := readHead(path)
	if err != nil {
		return Skill{}, fmt.Errorf("failed to read file: %v", err)
	}
	text, ok := extractFrontMatter(head)
	if !ok {
		return Skill{}, errors.New("missing YAML frontmatter delimited by ---")
	}
	var fm frontMatter
	if err := yaml.Unmarshal([]byte(text), &fm); err != nil {
		return Skill{}, fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	s := Skill{Path: path}
	if fm.Name != nil {
		s.Name = oneLine(*fm.Name)
	}
	if s.Name == "" {
		// Unnamed: the skill's directory names it.
		s.Name = oneLine(filepath.Base(filepath.Dir(path)))
	}
	if fm.Description != nil {
		s.Description = oneLine(*fm.Description)
	}
	if fm.Metadata.ShortDescription != nil {
		s.ShortDescription = oneLine(*fm.Metadata.ShortDescription)
	}
	if err := checkLen("name", s.Name, MaxNameLen); err != nil {
		return Skill{}, err
	}
	if err := checkLen("description", s.Description, MaxDescriptionLen); err != nil {
		return Skill{}, err
	}
	if s.ShortDescription != "" {
		if err := checkLen("metadata.short-description", s.ShortDescription, MaxDescriptionLen); err != nil {
			return Skill{}, err
		}
	}
	return s, nil
}

// readHead reads the start of a regular file, where the front matter is.
func readHead(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHeadBytes))
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	return string(b), nil
}

// extractFrontMatter returns the lines between a first line "---" and
// the next "---" (spaces around them allowed); ok is false when there is
// no such block or it is empty.
func extractFrontMatter(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimSpace(strings.TrimSuffix(lines[0], "\r")) != "---" {
		return "", false
	}
	var body []string
	for _, line := range lines[1:] {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "---" {
			if len(body) == 0 {
				return "", false
			}
			return strings.Join(body, "\n"), true
		}
		body = append(body, line)
	}
	return "", false
}

// oneLine collapses runs of white space (new lines included) into one
// space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func checkLen(field, value string, max int) error {
	if value == "" {
		return fmt.Errorf("missing field `%s`", field)
	}
	if utf8.RuneCountInString(value) > max {
		return fmt.Errorf("invalid %s: exceeds maximum length of %d characters", field, max)
	}
	return nil
}

// ApplyRules sets each skill's Enabled from rules, in order: a rule by
// path matches the skill at that path (symbolic links resolved), a rule
// by name every skill of that name.
func ApplyRules(list []Skill, rules []Rule) {
	for _, r := range rules {
		switch {
		case r.Path != "" && r.Name == "":
			want := r.Path
			if resolved, err := filepath.EvalSymlinks(want); err == nil {
				want = resolved
			}
			for i := range list {
				if list[i].Path == want {
					list[i].Enabled = r.Enabled
				}
			}
		case r.Name != "" && r.Path == "":
			name := strings.TrimSpace(r.Name)
			for i := range list {
				if list[i].Name == name {
					list[i].Enabled = r.Enabled
				}
			}
		}
	}
}
