package test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

// wantSmallError checks that m is an error response under 9 KiB (its
// message is at most protocol.MaxErrorMessage) that
// repeats no more than protocol.MaxEcho bytes of huge, and carries the cut
// marker where it repeats any of it.
func wantSmallError(t testing.TB, what string, m Message, huge string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("%s: want an error, got %.200s", what, m.Raw)
	}
	if len(m.Raw) >= protocol.MaxErrorMessage+1024 {
		t.Fatalf("%s: error response of %d bytes: %.300s", what, len(m.Raw), m.Raw)
	}
	if strings.Contains(string(m.Raw), huge[:protocol.MaxEcho+1]) {
		t.Fatalf("%s: more than %d bytes of the client's string echoed: %.400s", what, protocol.MaxEcho, m.Raw)
	}
	if strings.Contains(m.Error.Message, huge[:64]) && !strings.Contains(m.Error.Message, protocol.CutMarker) {
		t.Fatalf("%s: echo without the cut marker: %.400s", what, m.Raw)
	}
}

// A megabyte method name, thread id or path comes back cut, with the
// marker, in an error of a few hundred bytes.
func TestHugeStringsAreCutInErrors(t *testing.T) {
	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	mb := strings.Repeat("a", 1<<20)
	m := c.Call(mb, map[string]any{})
	wantSmallError(t, "method", m, mb)
	mustContain(t, m.Error.Message, protocol.CutMarker+"1048576 bytes in all]")

	for _, method := range []string{"thread/resume", "thread/read", "thread/archive", "thread/name/set", "turn/start", "thread/unsubscribe"} {
		m := c.Call(method, map[string]any{"threadId": mb, "name": "n", "input": textInput("hi")})
		if method == "thread/unsubscribe" {
			// Answers notLoaded for any id: a result, not an echo.
			WantResult(t, m)
			continue
		}
		wantSmallError(t, method+" threadId", m, mb)
		if method == "thread/resume" {
			mustContain(t, m.Error.Message, "no rollout found for thread id aaaa")
			mustContain(t, m.Error.Message, protocol.CutMarker)
		}
	}

	dir := t.TempDir()
	huge := filepath.Join(dir, mb)
	wantSmallError(t, "fs/readFile path", c.Call("fs/readFile", map[string]any{"path": huge}), huge)
	wantSmallError(t, "fs/getMetadata path", c.Call("fs/getMetadata", map[string]any{"path": huge}), huge)
	m = c.Call("thread/resume", map[string]any{"threadId": "x", "path": huge})
	wantSmallError(t, "thread/resume path", m, huge)
	mustContain(t, m.Error.Message, "failed to resolve rollout path `"+dir)
	mustContain(t, m.Error.Message, protocol.CutMarker)
	wantSmallError(t, "thread/start model provider", c.Call("thread/start", map[string]any{"modelProvider": mb}), mb)
}

// Every method of the protocol, sent 64 KiB strings in each of its string
// params, answers errors under 4 KB that echo no more than MaxEcho bytes
// of them. Paths among them lie in the test's temporary tree.
func TestEveryMethodBoundsItsErrors(t *testing.T) {
	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	huge := filepath.Join(t.TempDir(), strings.Repeat("b", 64<<10))
	errorsSeen := 0
	for _, info := range protocol.Methods(protocol.ClientRequest) {
		if info.Method == "initialize" {
			continue
		}
		m := c.Call(info.Method, hugeParams(info.Params, huge))
		if m.Error != nil {
			errorsSeen++
			wantSmallError(t, info.Method, m, huge)
		}
	}
	if errorsSeen < 20 {
		t.Fatalf("only %d methods answered an error: the params did not reach them", errorsSeen)
	}
}

// hugeParams fills every top-level string field of a params type (a
// string, a pointer to one, a list of them) with s.
func hugeParams(typ reflect.Type, s string) map[string]any {
	out := map[string]any{}
	if typ == nil || typ.Kind() != reflect.Struct {
		return out
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.String:
			out[name] = s
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			out[name] = []string{s}
		}
	}
	return out
}
