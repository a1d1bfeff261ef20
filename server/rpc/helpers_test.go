package rpc

import (
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// testLimits are the daemon's defaults.
var testLimits = Limits{
	MaxInflightPerConnection: 128,
	MaxInflight:              1024,
	MaxQueuedRequestBytes:    8 << 20,
	MaxMessageBytes:          16 << 20,
	OutboundQueueSize:        1024,
	ShutdownTimeout:          30 * time.Second,
}

// newTestServer returns an engine whose initialize result echoes the
// client's name and version as userAgent.
func newTestServer(t testing.TB, mutate func(*Options)) *Server {
	t.Helper()
	opts := Options{
		Limits: testLimits,
		Home:   t.TempDir(),
		Logger: zaptest.NewLogger(t),
		Initialize: func(ci ClientInfo) (any, []Notification) {
			return map[string]string{"userAgent": ci.Name + "/" + ci.Version}, nil
		},
	}
	if mutate != nil {
		mutate(&opts)
	}
	return New(opts)
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }
