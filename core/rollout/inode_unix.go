//go:build unix

package rollout

import (
	"io/fs"
	"syscall"
)

// inode identifies a file across renames, so the index can follow a file
// moved behind its back without reading it again.
func inode(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}
