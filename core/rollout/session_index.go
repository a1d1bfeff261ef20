package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

// SessionIndexName is the file of thread names under the home, as the
// reference keeps them: one JSON line per rename,
// {"id":…,"thread_name":…,"updated_at":…}, appended; the last line of an
// id wins.
const SessionIndexName = "session_index.jsonl"

type sessionIndexLine struct {
	ID         string `json:"id"`
	ThreadName string `json:"thread_name"`
	UpdatedAt  string `json:"updated_at"`
}

// nameIndex is the session index in memory. It reads only what was
// appended since it last looked, and starts over when the file was
// replaced or shrank.
type nameIndex struct {
	path string
	warn func(string)

	mu    sync.Mutex
	names map[string]string
	ino   uint64
	size  int64
	modNs int64
	// offset is the end of the last whole line read.
	offset int64
}

func newNameIndex(home string, warn func(string)) *nameIndex {
	return &nameIndex{path: filepath.Join(home, SessionIndexName), warn: warn, names: map[string]string{}}
}

// refresh reads what the file gained since the last refresh.
func (n *nameIndex) refresh() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refreshLocked()
}

func (n *nameIndex) refreshLocked() {
	st, err := os.Stat(n.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			n.warnf("session index %s unreadable: %v", n.path, err)
		}
		n.names, n.ino, n.size, n.modNs, n.offset = map[string]string{}, 0, 0, 0, 0
		return
	}
	ino, size, mod := inode(st), st.Size(), st.ModTime().UnixNano()
	if ino == n.ino && size == n.size && mod == n.modNs {
		return
	}
	if ino != n.ino || size < n.size || (size == n.size && mod != n.modNs) {
		n.names, n.offset = map[string]string{}, 0
	}
	f, _, err := openRegular(n.path)
	if err != nil {
		n.warnf("session index unreadable: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.Seek(n.offset, io.SeekStart); err != nil {
		n.warnf("session index %s unreadable: %v", n.path, err)
		return
	}
	bad, firstBad := 0, ""
	// A line longer than any name is skipped, never held whole.
	lim := scanLimits{maxLine: DefaultMaxLineBytes, skipLong: true}
	end, err := scanLines(context.Background(), f, size-n.offset, lim, func(b []byte, _ int, torn bool) error {
		if torn {
			return nil // a rename still being written, read again next time
		}
		var l sessionIndexLine
		if json.Unmarshal(b, &l) != nil || l.ID == "" {
			if bad == 0 {
				firstBad = string(b[:min(len(b), 80)])
			}
			bad++
			return nil
		}
		n.names[l.ID] = l.ThreadName
		return nil
	})
	if err != nil {
		n.warnf("session index %s unreadable: %v", n.path, err)
		return
	}
	if bad > 0 {
		n.warnf("session index %s: %d damaged line(s) skipped, the first begins %q", n.path, bad, firstBad)
	}
	n.offset += end
	n.ino, n.size, n.modNs = ino, n.offset, mod
	if n.offset != size {
		n.size = -1 // a torn last line: look again next time
	}
}

// set appends a thread's name and returns once it is durable. Appends are
// single writes to a file opened for appending, so that lines written by
// the reference at the same time are not interleaved with ours.
func (n *nameIndex) set(id, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	line, err := model.MarshalNoEscape(sessionIndexLine{ID: id, ThreadName: name, UpdatedAt: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return err
	}
	// The index's reader skips a longer line: the name would be lost.
	if len(line) > DefaultMaxLineBytes {
		return fmt.Errorf("%w: the name would take %s in session_index.jsonl, more than the limit of %s", ErrLineTooLong, byteSize(int64(len(line))), byteSize(DefaultMaxLineBytes))
	}
	line = append(line, '\n')
	if torn, err := endsTorn(n.path); err == nil && torn {
		line = append([]byte{'\n'}, line...)
	}
	_, statErr := os.Lstat(n.path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(n.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("rollout: session index: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("rollout: session index: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("rollout: session index: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("rollout: session index: %w", err)
	}
	// A new file's name must be durable too, or a power loss loses every
	// rename in it.
	if created {
		if err := syncDirFunc(filepath.Dir(n.path)); err != nil {
			return fmt.Errorf("rollout: session index: %w", err)
		}
	}
	n.refreshLocked()
	n.names[id] = name
	return nil
}

func (n *nameIndex) warnf(format string, args ...any) {
	if n.warn != nil {
		n.warn(fmt.Sprintf(format, args...))
	}
}

// nameOf is a thread's name: the session index's, else the one its file
// recorded (format 1).
func (n *nameIndex) nameOf(id, recorded string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nameOfLocked(id, recorded)
}

// nameOfLocked is nameOf with n.mu held.
func (n *nameIndex) nameOfLocked(id, recorded string) string {
	if name, ok := n.names[id]; ok {
		return name
	}
	return recorded
}
