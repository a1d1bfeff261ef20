package core

import (
	"math/rand/v2"
	"time"
)

// backoff is the delay before stream retry n (from 1): 200 ms × 2^(n−1),
// times a jitter in [0.9, 1.1].
func backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 20 {
		n = 20
	}
	d := float64(200*time.Millisecond) * float64(uint64(1)<<(n-1))
	return time.Duration(d * (0.9 + 0.2*rand.Float64()))
}
