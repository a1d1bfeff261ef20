//go:build unix

package rollout

import (
	"bytes"
	"errors"
	"sync"
	"syscall"
)

// headBufs are the buffers of readHead.
var headBufs = sync.Pool{New: func() any { b := make([]byte, headReadBytes); return &b }}

// runHead reads the first line of a file a listing found, new to the
// index, with four system calls and no other allocation than the
// summary's: a cold build does it for every thread in the home. It
// reports false when the file is not the common case (a first line longer
// than the buffer, or empty), which the general path reads instead.
func (j *scanJob) runHead() bool {
	noteOpen(j.path)
	fd, err := syscall.Open(j.path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			j.gone = true
		} else {
			j.bad = true
		}
		return true
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > j.x.lim.maxFile() {
		syscall.Close(fd)
		j.bad = true
		return true
	}
	k := statKey{ino: uint64(st.Ino), size: st.Size, mod: st.Mtim.Sec*1e9 + st.Mtim.Nsec}
	if j.useFirst(k) {
		syscall.Close(fd)
		j.key = k
		return true
	}
	bp := headBufs.Get().(*[]byte)
	defer headBufs.Put(bp)
	buf := (*bp)[:min(int64(len(*bp)), st.Size)]
	n, err := syscall.Pread(fd, buf, 0)
	syscall.Close(fd)
	if err != nil || n < 0 {
		j.bad = true
		return true
	}
	j.key = k
	nl := bytes.IndexByte(buf[:n], '\n')
	if nl <= 0 {
		return false // a long first line, an empty one, or a torn one
	}
	if j.movedHere(k) {
		return true
	}
	body := bytes.TrimRight(buf[:nl], "\r")
	if len(body) == 0 || int64(len(body)) > j.x.lim.maxLine() || !isMetaLine(body) {
		return false // the general path says why
	}
	s := &summary{ids: interner{}}
	_, _ = applyRecovering(body, s.apply)
	s.ids = nil
	end := int64(nl) + 1
	j.result = fileEntry(j.path, j.archived, k, end, s, end < k.size, true)
	return true
}
