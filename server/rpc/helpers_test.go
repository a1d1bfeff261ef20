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
	s := New(opts)
	// A handler still running when the test returns (its connection is
	// closed by rpctest's cleanup, which runs before this one) logs
	// through t: wait for it, so that nothing logs once the test is over.
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() {
			s.work.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	return s
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }
