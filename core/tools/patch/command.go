package patch

import (
	"path/filepath"
	"strings"
)

// commandNames are the names a model runs apply_patch by as a command.
var commandNames = []string{"apply_patch", "applypatch"}

// scriptShells are the shells whose "-c" / "-lc" scripts are searched for
// an apply_patch heredoc.
var scriptShells = []string{"bash", "zsh", "sh", "dash"}

// FromCommand recognises a command that runs apply_patch, which models
// trained on the shell tools do instead of calling the tool: argv
// ["apply_patch", PATCH] (or "applypatch"), or a shell running a script
// "apply_patch <<'EOF' … EOF", optionally after "cd DIR &&". It returns
// the text to Parse and DIR ("" when the script does not change
// directory); ok is false for any other command, which runs as it is.
func FromCommand(argv []string) (text, dir string, ok bool) {
	if len(argv) == 2 && isCommandName(argv[0]) {
		return argv[1], "", true
	}
	if len(argv) != 3 || (argv[1] != "-c" && argv[1] != "-lc") || !isShell(argv[0]) {
		return "", "", false
	}
	script := strings.TrimSpace(argv[2])
	if rest, ok := strings.CutPrefix(script, "cd "); ok {
		d, after, found := strings.Cut(rest, "&&")
		if !found {
			return "", "", false
		}
		dir = unquoteWord(strings.TrimSpace(d))
		if dir == "" || strings.ContainsAny(dir, " \t\n;|&$`") {
			return "", "", false
		}
		script = strings.TrimSpace(after)
	}
	for _, name := range commandNames {
		if rest, found := strings.CutPrefix(script, name); found && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "<<") {
			return script, dir, true
		}
	}
	return "", "", false
}

func isCommandName(s string) bool {
	for _, n := range commandNames {
		if s == n {
			return true
		}
	}
	return false
}

func isShell(path string) bool {
	base := filepath.Base(path)
	for _, s := range scriptShells {
		if base == s {
			return true
		}
	}
	return false
}

// unquoteWord removes one pair of matching quotes around a word.
func unquoteWord(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
