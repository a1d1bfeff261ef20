package policy

import (
	"path"
	"strings"
)

// ParseCommandActions describes what argv does, for display: reading a
// file, listing files or searching. A "<shell> -c" script is split into
// its commands; "cd" and output filters on the right of a pipe (head, wc,
// sort…) are left out. When any part is not recognised, the result is a
// single unknown action whose Command is the whole command (the inner
// script for a shell invocation).
func ParseCommandActions(argv []string) []CommandAction {
	if len(argv) == 0 {
		return []CommandAction{{Kind: ActionUnknown}}
	}
	var cmds []simpleCommand
	whole := ShellQuote(argv)
	if script, ok := shellScript(argv); ok {
		whole = script
		parsed, ok := parseScript(script)
		if !ok {
			return []CommandAction{{Kind: ActionUnknown, Command: script}}
		}
		cmds = parsed
	} else {
		c := simpleCommand{Text: whole}
		for _, a := range argv {
			c.Words = append(c.Words, shellWord{Value: a})
		}
		cmds = []simpleCommand{c}
	}
	unknown := []CommandAction{{Kind: ActionUnknown, Command: whole}}
	var out []CommandAction
	for _, c := range cmds {
		a, keep, known := classify(c)
		if !known {
			return unknown
		}
		if keep {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return unknown
	}
	return out
}

// pipeFilters only reshape the output of the command before them.
var pipeFilters = map[string]bool{
	"head": true, "tail": true, "wc": true, "sort": true, "uniq": true, "cut": true,
	"tr": true, "nl": true, "cat": true, "column": true,
}

// classify returns the action for one command; keep is false for a
// command that adds nothing to the display (cd, a pipe filter); known is
// false when the command is not recognised.
func classify(c simpleCommand) (a CommandAction, keep, known bool) {
	words := c.values()
	name := path.Base(words[0])
	args := words[1:]
	text := c.Text
	if text == "" {
		text = ShellQuote(words)
	}
	if name == "cd" {
		return CommandAction{}, false, true
	}
	if c.Piped && pipeFilters[name] && len(positionals(args, valueFlags[name])) == 0 {
		return CommandAction{}, false, true
	}
	switch name {
	case "cat", "head", "tail", "nl":
		files := positionals(args, valueFlags[name])
		if len(files) != 1 {
			return a, false, false
		}
		return readAction(text, files[0]), true, true
	case "sed":
		if len(args) == 3 && args[0] == "-n" && sedPrint().MatchString(args[1]) {
			return readAction(text, args[2]), true, true
		}
		return a, false, false
	case "ls", "tree":
		return listAction(text, firstOrEmpty(positionals(args, valueFlags[name]))), true, true
	case "find":
		p := ""
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "(" && args[0] != "!" {
			p = args[0]
		}
		return listAction(text, p), true, true
	case "rg", "grep", "egrep", "fgrep":
		return searchAction(text, name, args), true, true
	}
	return a, false, false
}

func readAction(cmd, file string) CommandAction {
	return CommandAction{Kind: ActionRead, Command: cmd, Name: path.Base(file), Path: file}
}

func listAction(cmd, p string) CommandAction {
	return CommandAction{Kind: ActionListFiles, Command: cmd, Path: p}
}

// searchAction finds the pattern and the first path of a grep or rg
// command. "rg --files" lists files instead.
func searchAction(cmd, name string, args []string) CommandAction {
	var query string
	hasQuery := false
	for i := 0; i < len(args); i++ {
		v := args[i]
		if name == "rg" && v == "--files" {
			return listAction(cmd, firstOrEmpty(positionals(args, valueFlags[name])))
		}
		if v == "-e" || v == "--regexp" {
			if i+1 < len(args) && !hasQuery {
				query, hasQuery = args[i+1], true
			}
			i++
		} else if strings.HasPrefix(v, "--regexp=") && !hasQuery {
			query, hasQuery = strings.TrimPrefix(v, "--regexp="), true
		}
	}
	pos := positionals(args, valueFlags[name])
	if !hasQuery && len(pos) > 0 {
		query, pos = pos[0], pos[1:]
	}
	return CommandAction{Kind: ActionSearch, Command: cmd, Query: query, Path: firstOrEmpty(pos)}
}

// valueFlags lists, per command, the options that take the next word as
// their value, so that it is not mistaken for a file or pattern.
var valueFlags = map[string]map[string]bool{
	"head": set("-n", "-c", "--lines", "--bytes"),
	"tail": set("-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid"),
	"nl":   set("-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"),
	"ls":   set("-I", "--ignore", "-w", "--width", "-T", "--tabsize", "--hide", "--format", "--sort", "--time", "--color"),
	"tree": set("-L", "-P", "-I", "--filelimit", "--charset", "-H", "-T", "--sort"),
	"rg": set("-e", "--regexp", "-f", "--file", "-g", "--glob", "--iglob", "-t", "--type", "-T", "--type-not",
		"-m", "--max-count", "--max-depth", "-A", "--after-context", "-B", "--before-context", "-C", "--context",
		"-j", "--threads", "-M", "--max-columns", "-E", "--encoding", "--sort", "--sortr", "--type-add",
		"-r", "--replace", "--colors", "--color", "--path-separator", "--max-filesize", "-d", "--dfa-size-limit"),
	"grep": grepValueFlags, "egrep": grepValueFlags, "fgrep": grepValueFlags,
}

var grepValueFlags = set("-e", "--regexp", "-f", "--file", "-m", "--max-count", "-A", "--after-context",
	"-B", "--before-context", "-C", "--context", "-d", "--directories", "-D", "--devices", "--include",
	"--exclude", "--exclude-dir", "--label", "--color", "--colour")

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// positionals returns the arguments that are not options or option values.
// Everything after "--" is positional.
func positionals(args []string, withValue map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		v := args[i]
		if v == "--" {
			return append(out, args[i+1:]...)
		}
		if strings.HasPrefix(v, "-") && v != "-" {
			if withValue[v] {
				i++
			}
			continue
		}
		out = append(out, v)
	}
	return out
}

func firstOrEmpty(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}
