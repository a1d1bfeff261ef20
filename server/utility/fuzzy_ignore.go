package utility

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// ignoreStack holds the .gitignore rules of the directories a walk has
// entered, by directory (relative to the root, "" for the root). It
// covers the common subset of gitignore: comments, negation, directory
// patterns, anchored patterns, *, ?, [...] and **. A deeper file's rules
// win over a shallower one's; within a file, the last match wins.
type ignoreStack struct {
	rules map[string][]ignoreRule
}

// ignoreRule is one .gitignore line.
type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
	// anchored rules match the path relative to their file's directory;
	// the others match the name alone.
	anchored bool
}

func newIgnoreStack() *ignoreStack { return &ignoreStack{rules: map[string][]ignoreRule{}} }

// enter reads the .gitignore of dir (abs), whose path relative to the
// root is rel.
func (s *ignoreStack) enter(abs, rel string) {
	f, err := os.Open(filepath.Join(abs, ".gitignore"))
	if err != nil {
		return
	}
	defer f.Close()
	var rules []ignoreRule
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text()); ok {
			rules = append(rules, r)
		}
	}
	if len(rules) > 0 {
		s.rules[rel] = rules
	}
}

// ignored reports whether rel (slash-separated, relative to the root) is
// excluded.
func (s *ignoreStack) ignored(rel string, isDir bool) bool {
	if len(s.rules) == 0 {
		return false
	}
	// Directories from the root down to rel's parent.
	dirs := []string{""}
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' {
			dirs = append(dirs, rel[:i])
		}
	}
	ignored := false
	name := path.Base(rel)
	for _, d := range dirs {
		sub := rel
		if d != "" {
			sub = rel[len(d)+1:]
		}
		for _, r := range s.rules[d] {
			if r.dirOnly && !isDir {
				continue
			}
			target := name
			if r.anchored {
				target = sub
			}
			if r.re.MatchString(target) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}

// parseIgnoreLine parses one .gitignore line.
func parseIgnoreLine(line string) (ignoreRule, bool) {
	var r ignoreRule
	line = strings.TrimRight(line, " \t\r")
	if line == "" || strings.HasPrefix(line, "#") {
		return r, false
	}
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\`) {
		line = line[1:] // \# and \! are literal
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return r, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
	}
	re, err := regexp.Compile("^" + globToRegexp(line) + "$")
	if err != nil {
		return r, false
	}
	r.re = re
	return r, true
}

// globToRegexp translates a gitignore glob.
func globToRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "/**") && i+3 == len(g):
			b.WriteString("/.*")
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(g[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(string(g[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}
