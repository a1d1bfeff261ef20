package model

import (
	"math/rand/v2"
	"time"
)

// backoffBase is the delay before the first retry.
const backoffBase = 200 * time.Millisecond

// Backoff returns the delay before retry number attempt (1 for the first
// retry): 200 ms × 2^(attempt−1), times a random jitter in [0.9, 1.1) so
// that many clients failing together do not retry in step. The client uses
// it for connection retries and the turn loop for stream retries; a delay
// the server asked for (Error.RetryAfter) takes precedence over it.
func Backoff(attempt int) time.Duration {
	exp := max(attempt-1, 0)
	// Beyond 2^24 (about 39 days) the value only risks overflow.
	exp = min(exp, 24)
	d := float64(backoffBase) * float64(int64(1)<<exp)
	return time.Duration(d * (0.9 + 0.2*rand.Float64()))
}
