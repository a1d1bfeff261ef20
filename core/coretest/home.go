// Package coretest holds what the tests of several packages share: it is
// imported by tests only.
package coretest

import (
	"os"
	"testing"
)

// RunWithTempHome runs the tests of m with HOME set to a temporary
// directory (and XDG_CONFIG_HOME unset), removed afterwards, and returns
// their exit code. The commands the tests run (login shells, git) then
// read none of the machine's dotfiles: slow under load, hung on a stale
// lock, or changing what git shows, those made tests fail.
func RunWithTempHome(m *testing.M) int {
	home, err := os.MkdirTemp("", "agentd-test-home")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Unsetenv("XDG_CONFIG_HOME")
	defer os.RemoveAll(home)
	return m.Run()
}
