package server

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
)

// The daemon's initialize result says who it is and where its home is;
// each configuration warning follows it as a configWarning.
func TestInitializeResultAndConfigWarnings(t *testing.T) {
	cfg := config.Default(t.TempDir())
	cfg.Warnings = []config.Warning{{Summary: "first"}, {Summary: "second", Details: "why"}}
	s := New(cfg, zaptest.NewLogger(t))
	c := rpctest.Connect(t, s.ServeStream)
	m := c.Initialize(nil)
	var res protocol.InitializeResponse
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.UserAgent, "unit/"+Version+" (") || !strings.HasSuffix(res.UserAgent, "(unit; 1.2.3)") {
		t.Errorf("userAgent %q", res.UserAgent)
	}
	if string(res.CodexHome) != cfg.Home || res.PlatformFamily != "unix" || res.PlatformOs != runtime.GOOS {
		t.Errorf("result %+v", res)
	}
	for _, want := range []string{`{"summary":"first","details":null}`, `{"summary":"second","details":"why"}`} {
		if m := c.Next(); m.Method != "configWarning" || string(m.Params) != want {
			t.Fatalf("got %s, want configWarning %s", m.Raw, want)
		}
	}
}

// Every method the daemon registers has the protocol table's types
// (rpc.Handle panics otherwise), and the built-in methods answer.
func TestDaemonRegistersTypedMethods(t *testing.T) {
	s := New(config.Default(t.TempDir()), zaptest.NewLogger(t))
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	for _, method := range []string{"thread/loaded/list", "model/list", "config/read", "account/read"} {
		if m := c.Call(method, map[string]any{}); m.Error != nil {
			t.Errorf("%s: %s", method, m.Raw)
		}
	}
}
