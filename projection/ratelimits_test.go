package projection

import (
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/protocol"
)

// A snapshot becomes account/rateLimits/updated: every field written,
// null when not reported, percentages rounded halves away from zero.
func TestRateLimitsNotification(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	minutes, reset := int64(300), int64(1704069000)
	out := apply(p, core.TurnStarted{StartedAt: t0},
		core.RateLimits{Snapshot: model.RateLimitSnapshot{LimitID: "codex"}},
		core.RateLimits{Snapshot: model.RateLimitSnapshot{
			LimitID: "codex", LimitName: "nm",
			Primary:   &model.RateLimitWindow{UsedPercent: 12.5, WindowMinutes: &minutes, ResetsAt: &reset},
			Secondary: &model.RateLimitWindow{UsedPercent: -2.5},
			Credits:   &model.Credits{HasCredits: true, Balance: "42.5"},
		}},
		core.RateLimits{Snapshot: model.RateLimitSnapshot{LimitID: "codex", Primary: &model.RateLimitWindow{UsedPercent: 1e12}}},
	)
	expect(t, out, `status{"type":"active","activeFlags":[]}`, "turn/started",
		"account/rateLimits/updated", "account/rateLimits/updated", "account/rateLimits/updated")
	validate(t, out)
	want := []string{
		`{"rateLimits":{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":null,"secondary":null,"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}}`,
		`{"rateLimits":{"limitId":"codex","limitName":"nm","normalModelSlug":null,"primary":{"usedPercent":13,"windowDurationMins":300,"resetsAt":1704069000},"secondary":{"usedPercent":-3,"windowDurationMins":null,"resetsAt":null},"credits":{"hasCredits":true,"unlimited":false,"balance":"42.5"},"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}}`,
		`{"rateLimits":{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":{"usedPercent":2147483647,"windowDurationMins":null,"resetsAt":null},"secondary":null,"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}}`,
	}
	for i, o := range out[2:] {
		b, err := json.Marshal(o.Params)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want[i] {
			t.Errorf("notification %d:\n got %s\nwant %s", i, b, want[i])
		}
	}
}
