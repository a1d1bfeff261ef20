package threads

import (
	"maps"
	"sync"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

// rateLimitState keeps what the provider's rate-limit headers last said,
// for account/rateLimits/read: the last snapshot that had data (a window
// or credits), and the last one of each bucket. Responses without the
// headers (most providers send none) leave it as it was. It is safe for
// concurrent use.
type rateLimitState struct {
	mu   sync.Mutex
	last *protocol.RateLimitSnapshot
	byID map[string]protocol.RateLimitSnapshot
}

// record notes a snapshot a model response reported.
func (r *rateLimitState) record(s model.RateLimitSnapshot) {
	if s.Primary == nil && s.Secondary == nil && s.Credits == nil {
		return
	}
	w := projection.RateLimits(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = &w
	if r.byID == nil {
		r.byID = map[string]protocol.RateLimitSnapshot{}
	}
	r.byID[s.LimitID] = w
}

// reset forgets what was seen: the account changed (a sign-in or out).
func (r *rateLimitState) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.byID = nil, nil
}

// read returns the snapshots seen, or nil when no response carried the
// headers.
func (r *rateLimitState) read() *protocol.GetAccountRateLimitsResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return nil
	}
	return &protocol.GetAccountRateLimitsResponse{RateLimits: *r.last, RateLimitsByLimitID: maps.Clone(r.byID)}
}
