package inprocess

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The utility methods' concurrent paths (streaming, writes, terminate,
// watches), in process so that the race detector sees the server side.
func TestUtilityConcurrency(t *testing.T) {
	c, ctx := start(t)
	b64 := base64.StdEncoding.EncodeToString
	noSandbox := map[string]any{"type": "dangerFullAccess"}

	type result struct {
		ExitCode int
		err      error
	}
	execDone := make(chan result, 1)
	go func() {
		var r result
		r.err = c.Request(ctx, "command/exec", map[string]any{
			"command": []string{"cat"}, "processId": "tty", "tty": true, "sandboxPolicy": noSandbox,
		}, &r)
		execDone <- r
	}()
	for i := 0; i < 20; i++ {
		if err := c.Request(ctx, "command/exec/write", map[string]any{"processId": "tty", "deltaBase64": b64([]byte("line\n"))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	out := ""
	for strings.Count(out, "line\r\n") < 40 { // echoed by the terminal, then by cat
		ev := nextEvent(t, c, method("command/exec/outputDelta"))
		var d struct{ DeltaBase64 string }
		_ = json.Unmarshal(ev.Params, &d)
		b, _ := base64.StdEncoding.DecodeString(d.DeltaBase64)
		out += string(b)
	}
	if err := c.Request(ctx, "command/exec/terminate", map[string]any{"processId": "tty"}, nil); err != nil {
		t.Fatal(err)
	}
	if r := <-execDone; r.err != nil || r.ExitCode == 0 {
		t.Fatalf("terminated: %+v", r)
	}

	dir := t.TempDir()
	if err := c.Request(ctx, "fs/watch", map[string]any{"watchId": "w", "path": dir}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := os.WriteFile(filepath.Join(dir, "f"+string(rune('0'+i))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nextEvent(t, c, method("fs/changed"))
	if err := c.Request(ctx, "fs/unwatch", map[string]any{"watchId": "w"}, nil); err != nil {
		t.Fatal(err)
	}
}
