package policy

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellWord is one word of a parsed command, after quote removal.
type shellWord struct {
	Value string
	// Expands is set when unquoted glob or brace characters may turn the
	// word into other words when the shell runs it.
	Expands bool
	// MayLeadDash is set when the word, once expanded, might begin with
	// '-' and so be read as an option: it expands and its first character
	// is not a plain literal other than '-'. A file named "-delete" must
	// not turn "find *" into "find -delete".
	MayLeadDash bool
}

// simpleCommand is one command of a plain shell list.
type simpleCommand struct {
	Words []shellWord
	// Text is the command as written in the script.
	Text string
	// Piped is set when the command reads the output of a pipe.
	Piped bool
}

// values returns the words of c after quote removal.
func (c simpleCommand) values() []string {
	out := make([]string, len(c.Words))
	for i, w := range c.Words {
		out[i] = w.Value
	}
	return out
}

// shellNames are the shells whose "-c" scripts we look into.
var shellNames = map[string]bool{"bash": true, "sh": true, "zsh": true, "dash": true}

// shellScript returns the script of a "<shell> -c script" or
// "<shell> -lc script" invocation.
func shellScript(argv []string) (string, bool) {
	if len(argv) != 3 || !shellNames[filepath.Base(argv[0])] {
		return "", false
	}
	if argv[1] != "-c" && argv[1] != "-lc" {
		return "", false
	}
	return argv[2], true
}

// parseScript splits a script into its simple commands when the script is
// a plain list: simple commands of literal words joined by &&, ||, ;, | or
// |&, possibly grouped in ( ) or { }, with no assignments, background
// jobs, substitutions, control flow or redirections other than to
// /dev/null, from a file, or between descriptors. ok is false for anything
// else: the caller then treats the script as opaque.
func parseScript(script string) (cmds []simpleCommand, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil || len(f.Stmts) == 0 {
		return nil, false
	}
	p := scriptParser{src: script}
	for _, st := range f.Stmts {
		if !p.stmt(st, false) {
			return nil, false
		}
	}
	return p.cmds, true
}

type scriptParser struct {
	src  string
	cmds []simpleCommand
}

func (p *scriptParser) stmt(st *syntax.Stmt, piped bool) bool {
	if st.Background || st.Coprocess || st.Disown {
		return false
	}
	for _, r := range st.Redirs {
		if !plainRedirect(r) {
			return false
		}
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 || len(c.Args) == 0 {
			return false
		}
		cmd := simpleCommand{Piped: piped}
		for _, w := range c.Args {
			sw, ok := literalWord(w)
			if !ok {
				return false
			}
			cmd.Words = append(cmd.Words, sw)
		}
		// The command name itself must be exactly what runs.
		if cmd.Words[0].Expands || cmd.Words[0].Value == "" {
			return false
		}
		start, end := c.Pos().Offset(), c.End().Offset()
		if int(end) <= len(p.src) && start <= end {
			cmd.Text = p.src[start:end]
		}
		p.cmds = append(p.cmds, cmd)
		return true
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt:
			return p.stmt(c.X, piped) && p.stmt(c.Y, false)
		case syntax.Pipe, syntax.PipeAll:
			return p.stmt(c.X, piped) && p.stmt(c.Y, true)
		}
		return false
	case *syntax.Subshell:
		return p.list(c.Stmts, piped)
	case *syntax.Block:
		return p.list(c.Stmts, piped)
	}
	return false
}

func (p *scriptParser) list(stmts []*syntax.Stmt, piped bool) bool {
	if len(stmts) == 0 {
		return false
	}
	for i, st := range stmts {
		if !p.stmt(st, piped && i == 0) {
			return false
		}
	}
	return true
}

// plainRedirect accepts redirections that neither write files nor run
// anything: reading a literal file, writing to /dev/null, and duplicating
// or closing descriptors.
func plainRedirect(r *syntax.Redirect) bool {
	if r.N != nil && !allDigits(r.N.Value) {
		return false // {var}> assigns a variable
	}
	w, ok := literalWord(r.Word)
	if !ok || w.Expands {
		return false
	}
	switch r.Op {
	case syntax.RdrIn:
		return w.Value != ""
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob:
		return w.Value == "/dev/null"
	case syntax.DplIn, syntax.DplOut:
		// ">&file" sends both streams to a file; only numbers and "-"
		// (close) are descriptor operations.
		return w.Value == "-" || allDigits(w.Value)
	}
	return false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// literalWord returns the value of a word made only of literals and quotes
// without expansions. ok is false for parameter expansions, command or
// process substitutions, arithmetic, extended globs and $'…' strings.
func literalWord(w *syntax.Word) (shellWord, bool) {
	if w == nil {
		return shellWord{}, false
	}
	var b strings.Builder
	var sw shellWord
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v, expands, leadMeta := unquotedLit(x.Value)
			if expands {
				sw.Expands = true
			}
			if i == 0 && (leadMeta || strings.HasPrefix(v, "-")) {
				sw.MayLeadDash = true
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if x.Dollar {
				return shellWord{}, false
			}
			if i == 0 && strings.HasPrefix(x.Value, "-") {
				sw.MayLeadDash = true
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				return shellWord{}, false
			}
			for _, dp := range x.Parts {
				lit, ok := dp.(*syntax.Lit)
				if !ok {
					return shellWord{}, false
				}
				v := unescapeDouble(lit.Value)
				if i == 0 && b.Len() == 0 && strings.HasPrefix(v, "-") {
					sw.MayLeadDash = true
				}
				b.WriteString(v)
			}
		default:
			return shellWord{}, false
		}
	}
	sw.Value = b.String()
	if !sw.Expands {
		// A literal word is exactly its value: it begins with '-' or not.
		sw.MayLeadDash = strings.HasPrefix(sw.Value, "-")
	}
	return sw, true
}

// unquotedLit removes backslash escapes from an unquoted literal and says
// whether it holds unescaped glob or brace characters (expands), and
// whether its first character is one (leadMeta).
func unquotedLit(s string) (v string, expands, leadMeta bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			if s[i] != '\n' { // a backslash-newline joins lines
				b.WriteByte(s[i])
			}
			continue
		}
		if c == '*' || c == '?' || c == '[' || c == '{' {
			expands = true
			if i == 0 {
				leadMeta = true
			}
		}
		b.WriteByte(c)
	}
	return b.String(), expands, leadMeta
}

// unescapeDouble removes the backslash escapes that are special inside
// double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '"', '\\', '$', '`':
				i++
				b.WriteByte(s[i])
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// commandWords returns the commands argv runs, each as its words: the
// simple commands of a plain shell script, or argv itself.
func commandWords(argv []string) [][]string {
	if script, ok := shellScript(argv); ok {
		if cmds, ok := parseScript(script); ok {
			out := make([][]string, len(cmds))
			for i, c := range cmds {
				out[i] = c.values()
			}
			return out
		}
		return [][]string{argv}
	}
	return [][]string{argv}
}
