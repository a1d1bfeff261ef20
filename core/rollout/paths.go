package rollout

import (
	"encoding/hex"
	"path/filepath"
	"strings"
	"time"
)

// Directory names under the store's home, as the reference lays them out.
const (
	SessionsDir = "sessions"
	ArchivedDir = "archived_sessions"
)

const (
	filePrefix     = "rollout-"
	fileSuffix     = ".jsonl"
	fileTimeLayout = "2006-01-02T15-04-05"
)

// FileName is the rollout file name of a thread created at t.
func FileName(t time.Time, threadID string) string {
	return filePrefix + t.UTC().Format(fileTimeLayout) + "-" + threadID + fileSuffix
}

// datedDir is the directory a live thread created at t lives in. Dates are
// UTC, like the line timestamps, so a thread's place does not depend on the
// machine's time zone.
func datedDir(home string, t time.Time) string {
	t = t.UTC()
	return filepath.Join(home, SessionsDir, t.Format("2006"), t.Format("01"), t.Format("02"))
}

// isRolloutName reports whether name looks like a rollout file.
func isRolloutName(name string) bool {
	return strings.HasPrefix(name, filePrefix) && strings.HasSuffix(name, fileSuffix) &&
		len(name) > len(filePrefix)+len(fileTimeLayout)+1+len(fileSuffix)
}

// threadIDFromFileName returns the thread id a rollout file name carries.
func threadIDFromFileName(name string) string {
	if !isRolloutName(name) {
		return ""
	}
	return name[len(filePrefix)+len(fileTimeLayout)+1 : len(name)-len(fileSuffix)]
}

// timeFromFileName returns the creation time a rollout file name carries.
func timeFromFileName(name string) (time.Time, bool) {
	if !isRolloutName(name) {
		return time.Time{}, false
	}
	t, err := time.Parse(fileTimeLayout, name[len(filePrefix):len(filePrefix)+len(fileTimeLayout)])
	return t, err == nil
}

// uuidV7Time returns the creation time a UUIDv7 carries in its first 48
// bits, so a thread's dated directory can be guessed from its id.
func uuidV7Time(id string) (time.Time, bool) {
	if len(id) != 36 || id[14] != '7' {
		return time.Time{}, false
	}
	b, err := hex.DecodeString(id[:8] + id[9:13])
	if err != nil {
		return time.Time{}, false
	}
	var ms int64
	for _, c := range b {
		ms = ms<<8 | int64(c)
	}
	return time.UnixMilli(ms), true
}
