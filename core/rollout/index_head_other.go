//go:build !unix

package rollout

// runHead is the general path off Unix.
func (j *scanJob) runHead() bool { return false }
