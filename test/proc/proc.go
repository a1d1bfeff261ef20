// Package proc reads what tests and the load harness measure of a process
// from Linux's /proc: whether it runs, its CPU time, and its memory.
package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// stat returns the fields of /proc/<pid>/stat after the command name,
// which may hold spaces and parentheses: the first is the state.
func stat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

// Alive reports whether pid runs. A zombie (Z) does not, nor one its
// parent is reaping (X, for a moment).
func Alive(pid int) bool {
	f, err := stat(pid)
	if err != nil || len(f) == 0 {
		return false
	}
	switch f[0] {
	case "Z", "X", "x":
		return false
	}
	return true
}

// CPU is the CPU time (user + system) pid has used so far, in clock ticks
// of 10 ms (USER_HZ is 100 on Linux).
func CPU(pid int) (time.Duration, error) {
	f, err := stat(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad times in /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// StatusBytes reads a "<field>: <n> kB" line of /proc/<pid>/status
// (VmRSS, VmHWM, RssAnon, …) in bytes.
func StatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bad %s line %q", field, line)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
