//go:build !unix

package rollout

// openNonblock is not needed off Unix, where the type check before the
// open is what refuses a pipe.
const openNonblock = 0
