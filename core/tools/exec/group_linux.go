//go:build linux

package exec

import (
	"os"
	"strconv"
	"strings"
)

// member is a process of a group, named by its pid and its start time
// (clock ticks since boot), so that a pid reused later is not taken for
// it.
type member struct {
	pid   int
	start uint64
}

// groupMembers lists the processes of group pgid, from /proc.
func groupMembers(pgid int) []member {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []member
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, start, ok := procGroup(pid); ok && g == pgid {
			out = append(out, member{pid: pid, start: start})
		}
	}
	return out
}

// stillIn reports whether the process is still alive, the same one, and
// still in group pgid.
func (m member) stillIn(pgid int) bool {
	g, start, ok := procGroup(m.pid)
	return ok && g == pgid && start == m.start
}

// procGroup reads a process's group and start time from
// /proc/PID/stat; a zombie counts as gone.
func procGroup(pid int) (pgid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22
	// (starttime).
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, 0, false
	}
	g, err1 := strconv.Atoi(f[2])
	st, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return g, st, true
}
