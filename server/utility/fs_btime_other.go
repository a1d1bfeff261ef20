//go:build !linux

package utility

// birthTimeMs returns 0: creation times are only read on Linux.
func birthTimeMs(string, bool) int64 { return 0 }
