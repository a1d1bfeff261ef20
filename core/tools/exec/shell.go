package exec

import (
	"os"
	"path/filepath"
)

// Shell is the shell commands run through.
type Shell struct {
	// Path is the shell's executable, e.g. "/bin/bash".
	Path string
}

// Name is the shell's base name ("bash", "zsh", …).
func (s Shell) Name() string { return filepath.Base(s.Path) }

// Argv returns the command line running script: "<shell> -lc script" for
// a login shell (which reads the user's profile, so PATH and tools are
// as in their terminal), "<shell> -c script" otherwise.
func (s Shell) Argv(script string, login bool) []string {
	flag := "-c"
	if login {
		flag = "-lc"
	}
	return []string{s.Path, flag, script}
}

// DetectShell returns the user's shell: $SHELL when it names an
// executable, otherwise bash, otherwise sh.
func DetectShell() Shell {
	if sh := os.Getenv("SHELL"); filepath.IsAbs(sh) && isExecutable(sh) {
		return Shell{Path: sh}
	}
	for _, p := range []string{"/bin/bash", "/usr/bin/bash", "/bin/sh"} {
		if isExecutable(p) {
			return Shell{Path: p}
		}
	}
	return Shell{Path: "/bin/sh"}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
