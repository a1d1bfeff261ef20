//go:build linux

package utility

import "golang.org/x/sys/unix"

// birthTimeMs returns a file's creation time in Unix milliseconds, 0 when
// the file system does not record it. follow says whether to describe a
// symbolic link's target rather than the link.
func birthTimeMs(path string, follow bool) int64 {
	flags := unix.AT_STATX_SYNC_AS_STAT
	if !follow {
		flags |= unix.AT_SYMLINK_NOFOLLOW
	}
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, flags, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return st.Btime.Sec*1000 + int64(st.Btime.Nsec)/1e6
}
