package model

// SetMaxEventSize sets the SSE parser's event limit for a test and
// returns what restores it.
func SetMaxEventSize(n int) (restore func()) {
	old := sseReadConfig.MaxEventSize
	sseReadConfig.MaxEventSize = n
	return func() { sseReadConfig.MaxEventSize = old }
}
