package projection

import (
	"math"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/protocol"
)

// RateLimits maps the rate limits a provider reported to the wire's
// snapshot: what it did not report is null.
func RateLimits(s model.RateLimitSnapshot) protocol.RateLimitSnapshot {
	out := protocol.RateLimitSnapshot{
		LimitID:   strPtr(s.LimitID),
		LimitName: strPtr(s.LimitName),
		Primary:   rateLimitWindow(s.Primary),
		Secondary: rateLimitWindow(s.Secondary),
	}
	if c := s.Credits; c != nil {
		out.Credits = &protocol.CreditsSnapshot{HasCredits: c.HasCredits, Unlimited: c.Unlimited, Balance: strPtr(c.Balance)}
	}
	return out
}

// rateLimitWindow rounds the used percentage to the nearest integer,
// halves away from zero, as the reference does.
func rateLimitWindow(w *model.RateLimitWindow) *protocol.RateLimitWindow {
	if w == nil {
		return nil
	}
	used := math.Round(w.UsedPercent)
	used = max(min(used, math.MaxInt32), math.MinInt32)
	return &protocol.RateLimitWindow{UsedPercent: int32(used), WindowDurationMins: w.WindowMinutes, ResetsAt: w.ResetsAt}
}
