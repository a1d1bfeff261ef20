package exec

import (
	"maps"
	"path"
	"slices"
	"strings"
)

// ModelEnv returns the environment overrides for commands the model runs.
// Nobody reads their screen: pagers would wait forever for a keypress and
// colour codes waste tokens. With a terminal, TERM stays as it is so
// that full-screen programs still work.
func ModelEnv(tty bool) map[string]string {
	env := map[string]string{
		"NO_COLOR":  "1",
		"PAGER":     "cat",
		"GIT_PAGER": "cat",
		"GH_PAGER":  "cat",
		"LANG":      "C.UTF-8",
		"LC_CTYPE":  "C.UTF-8",
		"LC_ALL":    "C.UTF-8",
	}
	if !tty {
		env["TERM"] = "dumb"
	}
	return env
}

// Inherit says which of the daemon's variables a command starts from
// (shell_environment_policy.inherit).
type Inherit string

const (
	InheritAll  Inherit = "all"
	InheritCore Inherit = "core"
	InheritNone Inherit = "none"
)

// coreVars are the variables "core" keeps (matched ignoring case): what a
// shell needs to find programs, the user and a temporary directory.
var coreVars = []string{
	"PATH", "SHELL", "TMPDIR", "TEMP", "TMP", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "USER",
}

// defaultExcludes are removed unless IgnoreDefaultExcludes: names that
// usually hold credentials.
var defaultExcludes = []string{"*KEY*", "*SECRET*", "*TOKEN*"}

// ThreadIDEnv names the variable that tells a command which thread ran it.
const ThreadIDEnv = "CODEX_THREAD_ID"

// EnvPolicy is shell_environment_policy: which of the daemon's environment
// variables the commands of a thread see. The zero value passes every
// variable except the default excludes. Patterns are shell globs (*, ?
// and [...]) matched against the whole name, ignoring case.
type EnvPolicy struct {
	Inherit Inherit
	// IgnoreDefaultExcludes keeps names matching *KEY*, *SECRET* and
	// *TOKEN*.
	IgnoreDefaultExcludes bool
	// Exclude removes matching names; Hidden removes these exact names
	// (the operator's provider keys, the service manager's variables)
	// whatever the rest says, unless Set gives them a value.
	Exclude []string
	Hidden  []string
	// Set adds or replaces variables after the excludes.
	Set map[string]string
	// IncludeOnly, when not empty, keeps only matching names, Set's too.
	IncludeOnly []string
}

// Environ applies the policy to environ (KEY=VALUE entries, as from
// os.Environ) in the reference's order: inherit, default excludes,
// excludes, set, include-only; then, when threadID is not empty,
// CODEX_THREAD_ID. The result is never nil, so that it replaces the
// daemon's environment even when empty.
func (p EnvPolicy) Environ(environ []string, threadID string) []string {
	vars := make(map[string]string, len(environ))
	var order []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		switch p.Inherit {
		case InheritNone:
			continue
		case InheritCore:
			if !matchAny(name, coreVars) {
				continue
			}
		}
		if _, seen := vars[name]; !seen {
			order = append(order, name)
		}
		vars[name] = value
	}
	drop := func(patterns []string) {
		for name := range vars {
			if matchAny(name, patterns) {
				delete(vars, name)
			}
		}
	}
	if !p.IgnoreDefaultExcludes {
		drop(defaultExcludes)
	}
	drop(p.Exclude)
	for _, name := range p.Hidden {
		delete(vars, name)
	}
	set := func(name, value string) {
		if _, seen := vars[name]; !seen {
			order = append(order, name)
		}
		vars[name] = value
	}
	for _, name := range slices.Sorted(maps.Keys(p.Set)) {
		set(name, p.Set[name])
	}
	if len(p.IncludeOnly) > 0 {
		for name := range vars {
			if !matchAny(name, p.IncludeOnly) {
				delete(vars, name)
			}
		}
	}
	if threadID != "" {
		set(ThreadIDEnv, threadID)
	}
	out := make([]string, 0, len(vars))
	for _, name := range order {
		if value, ok := vars[name]; ok {
			out = append(out, name+"="+value)
			delete(vars, name) // a name set twice is listed once
		}
	}
	return out
}

// ChildEnv is the environment of a program agentd starts outside the
// shell policy, such as the notify program or an MCP server: environ less
// the hidden variables (the providers' API keys, the service manager's),
// then explicit, the variables the configuration gives that program by
// name, which alone may hand it a hidden one. The result is never nil.
func (p EnvPolicy) ChildEnv(environ []string, explicit map[string]string) []string {
	out := make([]string, 0, len(environ)+len(explicit))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(p.Hidden, name) {
			continue
		}
		if _, set := explicit[name]; set {
			continue
		}
		out = append(out, kv)
	}
	for _, name := range slices.Sorted(maps.Keys(explicit)) {
		out = append(out, name+"="+explicit[name])
	}
	return out
}

// matchAny reports whether name matches one of the globs, ignoring case.
// A malformed pattern matches nothing.
func matchAny(name string, patterns []string) bool {
	upper := strings.ToUpper(name)
	for _, p := range patterns {
		if ok, err := path.Match(strings.ToUpper(p), upper); err == nil && ok {
			return true
		}
	}
	return false
}

// ValidPattern reports whether a shell_environment_policy pattern is a
// well-formed glob.
func ValidPattern(p string) bool {
	_, err := path.Match(p, "")
	return err == nil
}
