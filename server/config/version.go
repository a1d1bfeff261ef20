package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/agentd-dev/agentd/server/atomicfile"
)

// racyWindow is how long after its last change a file's times cannot be
// trusted to tell a later change apart: file systems stamp times with a
// coarse clock (a tick of a few milliseconds, or whole seconds), so a
// second write of the same size within one tick leaves the same stamp.
// Within it, the content is compared (as git does for "racily clean"
// index entries).
const racyWindow = 2 * time.Second

// fileVersion is the version of config.toml a load read: its stamp, a
// digest of its bytes, and when the bytes were known to match the stamp.
type fileVersion struct {
	stamp atomicfile.Stamp
	sum   [sha256.Size]byte
	// checked is when the bytes were last read and found to be these.
	checked time.Time
}

// readVersioned reads path and the version it read (a missing file is
// an empty one, with a stamp that says so). The stamp is taken before
// the bytes are read: a write during the read changes the stamp again,
// so the next check sees it.
func readVersioned(path string) ([]byte, fileVersion, error) {
	v := fileVersion{checked: time.Now()}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		v.sum = sha256.Sum256(nil)
		return nil, v, nil
	}
	if err != nil {
		if st, serr := os.Stat(path); serr == nil {
			v.stamp = atomicfile.StampOf(st)
		}
		return nil, v, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, v, err
	}
	v.stamp = atomicfile.StampOf(st)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, v, err
	}
	v.sum = sha256.Sum256(buf.Bytes())
	return buf.Bytes(), v, nil
}

// changed reports whether the file at path is no longer version v. A
// stamp that differs is a change; an equal stamp is trusted only when
// the file was last changed well before v was checked (racyWindow);
// otherwise the bytes are read and compared, and when they still match
// v.checked is moved on (so that, once the file is quiet, a stat is all
// a check costs).
func (v *fileVersion) changed(path string) bool {
	now := atomicfile.Stamp{}
	if st, err := os.Stat(path); err == nil {
		now = atomicfile.StampOf(st)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return true // cannot be looked at: let a load say why
	}
	if now != v.stamp {
		return true
	}
	if !now.Exists || v.checked.Sub(now.Mod) > racyWindow && v.checked.Sub(now.Ctime) > racyWindow {
		return false
	}
	checked := time.Now()
	data, err := os.ReadFile(path)
	if err != nil || sha256.Sum256(data) != v.sum {
		return true
	}
	v.checked = checked
	return false
}
