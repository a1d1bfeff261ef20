package atomicfile

import (
	"io/fs"
	"syscall"
	"time"
)

// Stamp identifies a version of a file by what stat says: missing (the
// zero Stamp), or its inode, size and times. The ctime is there because
// a tool that restores a file's mtime cannot restore it; the inode,
// because a file of the same size renamed into place within one clock
// tick is a new one.
type Stamp struct {
	Exists     bool
	Ino        uint64
	Size       int64
	Mod, Ctime time.Time
}

// StampOf is the stamp of the file st describes.
func StampOf(st fs.FileInfo) Stamp {
	s := Stamp{Exists: true, Size: st.Size(), Mod: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.Ino = sys.Ino
		s.Ctime = time.Unix(sys.Ctim.Sec, sys.Ctim.Nsec)
	}
	return s
}
