package policy

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

// IsKnownSafe reports whether argv only reads: every command it runs is a
// known read-only command used without options that write, delete or run
// other programs. A "<shell> -c" or "-lc" script is safe when it is a
// plain list of such commands (joined by &&, ||, ;, |) with no
// substitutions, assignments, background jobs or redirections into files.
// Unknown or unparsable input is not safe: the answer errs towards asking.
func IsKnownSafe(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if script, ok := shellScript(argv); ok {
		cmds, ok := parseScript(script)
		if !ok {
			return false
		}
		for _, c := range cmds {
			if !safeCommand(c.Words) {
				return false
			}
		}
		return true
	}
	words := make([]shellWord, len(argv))
	for i, a := range argv {
		// Arguments given directly are not expanded by any shell.
		words[i] = shellWord{Value: a, MayLeadDash: strings.HasPrefix(a, "-")}
	}
	return safeCommand(words)
}

// argChecker inspects the arguments of one known command. It sees the
// words after quote removal.
type argChecker func(args []shellWord) bool

// safeCommands maps a command name to the check of its arguments. A nil
// check means the command has no option that writes or runs anything: it
// takes any argument, including globs. Commands with a check must see each
// option as written, so a glob that could expand into an option is refused.
var safeCommands = map[string]argChecker{
	"ls": nil, "cat": nil, "head": nil, "tail": nil, "wc": nil,
	"grep": nil, "egrep": nil, "fgrep": nil, "nl": nil,
	"pwd": nil, "echo": nil, "true": nil, "false": nil,
	"which": nil, "stat": nil, "du": nil, "df": nil,
	"uname": nil, "whoami": nil, "cut": nil, "tr": nil,
	"diff": nil, "cmp": nil, "basename": nil, "dirname": nil,
	"realpath": nil, "readlink": nil, "cd": nil, "printf": nil,
	"id": nil,

	"rg":   checkRg,
	"find": checkFind,
	"git":  checkGit,
	"sed":  checkSed,
	"sort": checkSort,
	"uniq": checkUniq,
	"tree": checkTree,
	"file": checkFile,
	"date": checkDate,
	"env":  func(args []shellWord) bool { return len(args) == 0 },
}

// trustedBinDirs are where a command named by absolute path may live and
// still count as the known command of that name.
var trustedBinDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true}

func safeCommand(words []shellWord) bool {
	if len(words) == 0 || words[0].Expands {
		return false
	}
	name := words[0].Value
	if strings.Contains(name, "/") {
		if !trustedBinDirs[path.Dir(name)] {
			return false
		}
		name = path.Base(name)
	}
	check, ok := safeCommands[name]
	if !ok {
		return false
	}
	if check == nil {
		return true
	}
	args := words[1:]
	for _, a := range args {
		if a.MayLeadDash && a.Expands {
			return false // a glob could expand into an option
		}
	}
	return check(args)
}

// shortCluster reports whether arg is a cluster of short options (such as
// "-iz") containing any of the letters.
func shortCluster(arg, letters string) bool {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return false
	}
	return strings.ContainsAny(arg[1:], letters)
}

func longOpt(arg string, names ...string) bool {
	for _, n := range names {
		if arg == n || strings.HasPrefix(arg, n+"=") {
			return true
		}
	}
	return false
}

// checkRg refuses the options that run other programs: --pre and
// --pre-glob (preprocessors), -z/--search-zip (decompressors) and
// --hostname-bin.
func checkRg(args []shellWord) bool {
	for _, a := range args {
		v := a.Value
		if longOpt(v, "--pre", "--pre-glob", "--search-zip", "--hostname-bin") || shortCluster(v, "z") {
			return false
		}
	}
	return true
}

// findUnsafe are the find primaries that run programs, delete, or write.
var findUnsafe = map[string]bool{
	"-exec": true, "-execdir": true, "-ok": true, "-okdir": true, "-delete": true,
	"-fls": true, "-fprint": true, "-fprint0": true, "-fprintf": true,
}

func checkFind(args []shellWord) bool {
	for _, a := range args {
		if findUnsafe[a.Value] {
			return false
		}
	}
	return true
}

// gitReadOnly are the git subcommands that only read, given the options
// checkGitArgs lets through.
var gitReadOnly = map[string]bool{"status": true, "log": true, "diff": true, "show": true, "branch": true}

func checkGit(args []shellWord) bool {
	// Global options before the subcommand: only -C <dir> and a few
	// harmless switches. -c and --config-env could set a pager, an
	// external diff or hooks.
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].Value, "-") {
		switch v := args[i].Value; v {
		case "-C":
			i += 2
		case "--no-pager", "--no-optional-locks", "-P":
			i++
		default:
			return false
		}
	}
	if i >= len(args) {
		return false
	}
	sub := args[i].Value
	if !gitReadOnly[sub] {
		return false
	}
	rest := args[i+1:]
	for _, a := range rest {
		v := a.Value
		// --output writes a file; --ext-diff and --textconv run the
		// programs the repository configures.
		if strings.HasPrefix(v, "--output") || longOpt(v, "--ext-diff", "--textconv") {
			return false
		}
	}
	if sub == "branch" {
		return checkGitBranch(rest)
	}
	return true
}

// gitBranchListing are the options of "git branch" that list branches.
// Anything else (a name to create, -d, -m, -c, --set-upstream-to, …)
// changes the repository.
var gitBranchListing = map[string]bool{
	"-a": true, "--all": true, "-r": true, "--remotes": true, "-l": true, "--list": true,
	"-v": true, "-vv": true, "--verbose": true, "--show-current": true, "--no-color": true,
	"--color": true, "--no-column": true, "--column": true, "-i": true, "--ignore-case": true,
	"--omit-empty": true, "-q": true, "--quiet": true,
}

// gitBranchFilters take one value.
var gitBranchFilters = map[string]bool{
	"--contains": true, "--no-contains": true, "--merged": true, "--no-merged": true, "--points-at": true,
	"--sort": true, "--format": true,
}

func checkGitBranch(args []shellWord) bool {
	listing := false
	var positional int
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "-l" || v == "--list":
			listing = true
		case gitBranchListing[v]:
		case gitBranchFilters[v]:
			i++ // its value
		case longOpt(v, "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "--color", "--column", "--abbrev"):
		case strings.HasPrefix(v, "-"):
			return false
		default:
			positional++
		}
	}
	// "git branch name" creates a branch; with --list it is a pattern.
	return positional == 0 || listing
}

// sedPrint matches the print-only scripts "Np", "N,Mp" and "N,$p";
// compiled at first use, not at the daemon's start.
var sedPrint = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(,([0-9]+|\$))?p$`) })

// checkSed accepts only "sed -n <range>p [file…]".
func checkSed(args []shellWord) bool {
	if len(args) < 2 || args[0].Value != "-n" || !sedPrint().MatchString(args[1].Value) {
		return false
	}
	for _, a := range args[2:] {
		if a.MayLeadDash {
			return false
		}
	}
	return true
}

// checkSort refuses -o/--output (writes a file) and --compress-program
// (runs one).
func checkSort(args []shellWord) bool {
	for _, a := range args {
		v := a.Value
		if longOpt(v, "--output", "--compress-program") || shortCluster(v, "o") {
			return false
		}
	}
	return true
}

// checkUniq refuses a second file name, which uniq writes to.
func checkUniq(args []shellWord) bool {
	files := 0
	for _, a := range args {
		if !strings.HasPrefix(a.Value, "-") || a.Value == "-" {
			files++
		}
	}
	return files <= 1
}

// checkTree refuses -o (write the listing to a file).
func checkTree(args []shellWord) bool {
	for _, a := range args {
		if strings.HasPrefix(a.Value, "-o") {
			return false
		}
	}
	return true
}

// checkFile refuses -C/--compile, which writes a compiled magic file.
func checkFile(args []shellWord) bool {
	for _, a := range args {
		if a.Value == "--compile" || shortCluster(a.Value, "C") {
			return false
		}
	}
	return true
}

// checkDate refuses -s/--set and a bare operand, both of which set the
// clock; "+FORMAT" only formats.
func checkDate(args []shellWord) bool {
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch {
		case strings.HasPrefix(v, "+"), strings.HasPrefix(v, "-I"), strings.HasPrefix(v, "--iso-8601"), strings.HasPrefix(v, "--rfc-"):
		case v == "-d" || v == "--date" || v == "-r" || v == "--reference":
			i++
		case longOpt(v, "--set") || shortCluster(v, "s"):
			return false
		case strings.HasPrefix(v, "-"):
		default:
			return false
		}
	}
	return true
}
