package test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/test/proc"
)

// noSandbox is the sandboxPolicy of tests that are not about the sandbox:
// they run the same on hosts that cannot sandbox.
var noSandbox = map[string]any{"type": "dangerFullAccess"}

// execResult is command/exec's result.
type execResult struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// outputDelta is command/exec/outputDelta's params.
type outputDelta struct {
	ProcessID   string `json:"processId"`
	Stream      string `json:"stream"`
	DeltaBase64 string `json:"deltaBase64"`
	CapReached  bool   `json:"capReached"`
}

// streamed is what a streaming command/exec produced.
type streamed struct {
	deltas         []outputDelta
	stdout, stderr string
	result         execResult
}

// nextDelta waits for the next output delta of process pid (or fails).
func nextDelta(t *testing.T, c *Client, pid string) outputDelta {
	t.Helper()
	m := c.ReadUntil(func(m Message) bool { return isDeltaOf(m, pid) })
	validNotification(t, m)
	var d outputDelta
	if err := json.Unmarshal(m.Params, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func isDeltaOf(m Message, pid string) bool {
	if m.Method != "command/exec/outputDelta" {
		return false
	}
	var d outputDelta
	return json.Unmarshal(m.Params, &d) == nil && d.ProcessID == pid
}

// collect reads process pid's deltas until the answer to request id, and
// checks that none comes after it.
func collect(t *testing.T, c *Client, id json.RawMessage, pid string) streamed {
	t.Helper()
	var s streamed
	for {
		m := c.ReadUntil(func(m Message) bool {
			return isDeltaOf(m, pid) || (m.Method == "" && string(m.ID) == string(id))
		})
		if m.Method == "" {
			validResult(t, "command/exec", m, &s.result)
			break
		}
		validNotification(t, m)
		var d outputDelta
		if err := json.Unmarshal(m.Params, &d); err != nil {
			t.Fatal(err)
		}
		s.deltas = append(s.deltas, d)
		if d.Stream == "stdout" {
			s.stdout += unb64(t, d.DeltaBase64)
		} else {
			s.stderr += unb64(t, d.DeltaBase64)
		}
	}
	if _, err := c.ReadUntilTimeout(func(m Message) bool { return isDeltaOf(m, pid) }, QuietWindow); err == nil {
		t.Fatalf("output of %s after its result", pid)
	}
	return s
}

func TestCommandExecBuffered(t *testing.T) {
	_, c := utilClient(t, Options{})
	var r execResult
	validResult(t, "command/exec", c.Call("command/exec", map[string]any{
		"command": []string{"bash", "-c", "echo out; echo err >&2; exit 3"}, "sandboxPolicy": noSandbox,
	}), &r)
	if r != (execResult{ExitCode: 3, Stdout: "out\n", Stderr: "err\n"}) {
		t.Fatalf("got %+v", r)
	}

	// cwd and env: null unsets an inherited variable.
	dir := t.TempDir()
	validResult(t, "command/exec", c.Call("command/exec", map[string]any{
		"command": []string{"bash", "-c", `pwd; echo "${A}-${HOME:-unset}"`}, "cwd": dir,
		"env": map[string]any{"A": "set", "HOME": nil}, "sandboxPolicy": noSandbox,
	}), &r)
	if want := dir + "\nset-unset\n"; r.Stdout != want || r.ExitCode != 0 {
		t.Fatalf("got %+v, want stdout %q", r, want)
	}

	// The per-stream cap cuts each stream.
	validResult(t, "command/exec", c.Call("command/exec", map[string]any{
		"command": []string{"bash", "-c", "printf abcdefgh; printf uvwxyz >&2"}, "outputBytesCap": 5, "sandboxPolicy": noSandbox,
	}), &r)
	if r.Stdout != "abcde" || r.Stderr != "uvwxy" || r.ExitCode != 0 {
		t.Fatalf("capped: got %+v", r)
	}

	// The timeout kills the command: exit code 124.
	validResult(t, "command/exec", c.Call("command/exec", map[string]any{
		"command": []string{"sleep", "30"}, "timeoutMs": 300, "sandboxPolicy": noSandbox,
	}), &r)
	if r.ExitCode != 124 {
		t.Fatalf("timeout: got %+v", r)
	}
}

func TestCommandExecErrors(t *testing.T) {
	_, c := utilClient(t, Options{})
	for _, tc := range []struct {
		params map[string]any
		code   int64
		msg    string
	}{
		{map[string]any{"command": []string{}}, codeInvalidRequest, "command must not be empty"},
		{map[string]any{"command": []string{"echo", "x"}, "streamStdoutStderr": true}, codeInvalidRequest,
			"command/exec tty or streaming requires a client-supplied processId"},
		{map[string]any{"command": []string{"cat"}, "tty": true}, codeInvalidRequest,
			"command/exec tty or streaming requires a client-supplied processId"},
		{map[string]any{"command": []string{"cat"}, "streamStdin": true}, codeInvalidRequest,
			"command/exec tty or streaming requires a client-supplied processId"},
		{map[string]any{"command": []string{"true"}, "timeoutMs": 5, "disableTimeout": true}, codeInvalidRequest,
			"command/exec cannot set both timeoutMs and disableTimeout"},
		{map[string]any{"command": []string{"true"}, "outputBytesCap": 5, "disableOutputCap": true}, codeInvalidRequest,
			"command/exec cannot set both outputBytesCap and disableOutputCap"},
		{map[string]any{"command": []string{"true"}, "timeoutMs": -1}, codeInvalidRequest,
			"command/exec timeoutMs must be non-negative, got -1"},
		{map[string]any{"command": []string{"agentd-no-such-program"}, "sandboxPolicy": noSandbox}, codeInternal,
			"failed to spawn command: No such file or directory (os error 2)"},
		{map[string]any{"command": []string{"true"}, "size": map[string]any{"rows": 2, "cols": 2}}, codeInvalidRequest,
			"command/exec size is only valid when tty is true"},
	} {
		WantError(t, c.Call("command/exec", tc.params), tc.code, tc.msg)
	}
	for _, method := range []string{"command/exec/write", "command/exec/terminate", "command/exec/resize"} {
		p := map[string]any{"processId": "nope", "deltaBase64": b64("x"), "size": map[string]any{"rows": 2, "cols": 2}}
		WantError(t, c.Call(method, p), codeInvalidRequest, `no active command/exec for process id "nope"`)
	}
}

func TestCommandExecStreaming(t *testing.T) {
	_, c := utilClient(t, Options{})
	id := c.Request("command/exec", map[string]any{
		"command": []string{"bash", "-c", "printf a; sleep 0.2; printf b >&2; printf c"}, "processId": "p1",
		"streamStdoutStderr": true, "sandboxPolicy": noSandbox,
	})
	s := collect(t, c, id, "p1")
	if s.stdout != "ac" || s.stderr != "b" || s.result != (execResult{}) {
		t.Fatalf("stdout %q stderr %q result %+v", s.stdout, s.stderr, s.result)
	}

	// Streamed with a cap: one delta, cut, with capReached.
	id = c.Request("command/exec", map[string]any{
		"command": []string{"bash", "-c", "printf 0123456789abcdef"}, "processId": "cap1",
		"streamStdoutStderr": true, "outputBytesCap": 4, "sandboxPolicy": noSandbox,
	})
	s = collect(t, c, id, "cap1")
	if len(s.deltas) != 1 || s.stdout != "0123" || !s.deltas[0].CapReached || s.result.ExitCode != 0 {
		t.Fatalf("capped stream: %+v", s)
	}

	// A process id in use is refused; terminate ends the first one,
	// whose request then answers with a failing exit.
	id = c.Request("command/exec", map[string]any{
		"command": []string{"bash", "-c", "echo started; exec sleep 60"}, "processId": "dup",
		"streamStdoutStderr": true, "sandboxPolicy": noSandbox,
	})
	nextDelta(t, c, "dup")
	WantError(t, c.Call("command/exec", map[string]any{"command": []string{"true"}, "processId": "dup", "sandboxPolicy": noSandbox}),
		codeInvalidRequest, `command/exec process id "dup" is already in use on this connection`)
	WantError(t, c.Call("command/exec/write", map[string]any{"processId": "dup", "deltaBase64": b64("x")}), codeInvalidRequest,
		"command/exec/write requires a process started with streamStdin: true or tty: true")
	validResult(t, "command/exec/terminate", c.Call("command/exec/terminate", map[string]any{"processId": "dup"}), nil)
	var r execResult
	validResult(t, "command/exec", c.Response(id), &r)
	if r.ExitCode == 0 {
		t.Fatalf("terminated command exited 0")
	}
	WantError(t, c.Call("command/exec/terminate", map[string]any{"processId": "dup"}), codeInvalidRequest,
		`no active command/exec for process id "dup"`)
}

func TestCommandExecStdin(t *testing.T) {
	_, c := utilClient(t, Options{})
	id := c.Request("command/exec", map[string]any{
		"command": []string{"head", "-n", "1"}, "processId": "in1", "streamStdin": true,
		"streamStdoutStderr": true, "sandboxPolicy": noSandbox,
	})
	validResult(t, "command/exec/write", c.Call("command/exec/write", map[string]any{"processId": "in1", "deltaBase64": b64("piped\n")}), nil)
	s := collect(t, c, id, "in1")
	if s.stdout != "piped\n" || s.result.ExitCode != 0 {
		t.Fatalf("got %+v", s)
	}
	WantError(t, c.Call("command/exec/write", map[string]any{"processId": "in1", "deltaBase64": b64("late\n")}), codeInvalidRequest,
		`no active command/exec for process id "in1"`)

	// closeStdin on a pipe: the data, then end of file, so cat ends.
	id = c.Request("command/exec", map[string]any{
		"command": []string{"cat"}, "processId": "in2", "streamStdin": true, "streamStdoutStderr": true, "sandboxPolicy": noSandbox,
	})
	WantError(t, c.Call("command/exec/write", map[string]any{"processId": "in2", "deltaBase64": "%%%"}), codeInvalidRequest, "")
	validResult(t, "command/exec/write", c.Call("command/exec/write", map[string]any{"processId": "in2", "deltaBase64": b64("last words"), "closeStdin": true}), nil)
	if s := collect(t, c, id, "in2"); s.stdout != "last words" || s.result.ExitCode != 0 {
		t.Fatalf("after closeStdin: %+v", s)
	}

	// terminate ends a command that keeps reading.
	id = c.Request("command/exec", map[string]any{
		"command": []string{"cat"}, "processId": "in3", "streamStdin": true, "streamStdoutStderr": true, "sandboxPolicy": noSandbox,
	})
	validResult(t, "command/exec/terminate", c.Call("command/exec/terminate", map[string]any{"processId": "in3"}), nil)
	if s := collect(t, c, id, "in3"); s.stdout != "" || s.result.ExitCode == 0 {
		t.Fatalf("after terminate: %+v", s)
	}
}

func TestCommandExecTTY(t *testing.T) {
	_, c := utilClient(t, Options{})
	id := c.Request("command/exec", map[string]any{
		"command": []string{"bash", "--norc", "--noprofile", "-i"}, "processId": "tty1", "tty": true,
		"size": map[string]any{"rows": 24, "cols": 80}, "env": map[string]any{"PS1": "$ "}, "sandboxPolicy": noSandbox,
	})
	// readOut reads terminal output until it contains want.
	readOut := func(want string) string {
		t.Helper()
		out := ""
		for !strings.Contains(out, want) {
			d := nextDelta(t, c, "tty1")
			if d.Stream != "stdout" {
				t.Fatalf("terminal output on %s", d.Stream)
			}
			out += unb64(t, d.DeltaBase64)
		}
		return out
	}
	validResult(t, "command/exec/write", c.Call("command/exec/write", map[string]any{"processId": "tty1", "deltaBase64": b64("echo hi-from-tty\n")}), nil)
	if out := readOut("hi-from-tty\r\n"); !strings.Contains(out, "\r\n") {
		t.Fatalf("no terminal line ends: %q", out)
	}
	validResult(t, "command/exec/resize", c.Call("command/exec/resize", map[string]any{"processId": "tty1", "size": map[string]any{"rows": 40, "cols": 100}}), nil)
	c.Call("command/exec/write", map[string]any{"processId": "tty1", "deltaBase64": b64("stty size\n")})
	readOut("40 100")
	validResult(t, "command/exec/terminate", c.Call("command/exec/terminate", map[string]any{"processId": "tty1"}), nil)
	var r execResult
	validResult(t, "command/exec", c.Response(id), &r)
	if r.ExitCode == 0 || r.Stdout != "" || r.Stderr != "" {
		t.Fatalf("after terminate: %+v", r)
	}

	// closeStdin on a terminal sends end of file.
	id = c.Request("command/exec", map[string]any{"command": []string{"cat"}, "processId": "tty2", "tty": true, "sandboxPolicy": noSandbox})
	c.Call("command/exec/write", map[string]any{"processId": "tty2", "deltaBase64": b64("abc\n"), "closeStdin": true})
	s := collect(t, c, id, "tty2")
	if s.result.ExitCode != 0 || !strings.Contains(s.stdout, "abc\r\n") {
		t.Fatalf("cat on a terminal: %+v", s)
	}
	WantError(t, c.Call("command/exec/resize", map[string]any{"processId": "tty2", "size": map[string]any{"rows": 1, "cols": 1}}),
		codeInvalidRequest, `no active command/exec for process id "tty2"`)
}

// startPidProcess starts `sleep` through a streaming command/exec that
// first prints its pid, and returns the request id and the pid.
func startPidProcess(t *testing.T, c *Client, processID string) (json.RawMessage, int) {
	t.Helper()
	id := c.Request("command/exec", map[string]any{
		"command": []string{"bash", "-c", "echo $$; exec sleep 60"}, "processId": processID,
		"streamStdoutStderr": true, "disableTimeout": true, "sandboxPolicy": noSandbox,
	})
	out := ""
	for !strings.Contains(out, "\n") {
		out += unb64(t, nextDelta(t, c, processID).DeltaBase64)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	return id, pid
}

// waitGone waits until process pid no longer runs (a zombie waiting for
// its new parent to reap it has been killed).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(WaitTimeout); proc.Alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still alive", pid)
		}
	}
}

// Process ids belong to their connection, and closing the connection
// kills its processes.
func TestCommandExecConnectionScope(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}})
	a := d.DialWS(WSOptions{})
	a.Initialize("a", nil)
	b := d.DialWS(WSOptions{})
	b.Initialize("b", nil)

	_, pid := startPidProcess(t, a, "shared-process")
	WantError(t, b.Call("command/exec/terminate", map[string]any{"processId": "shared-process"}), codeInvalidRequest,
		`no active command/exec for process id "shared-process"`)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("process died after another connection's terminate: %v", err)
	}
	a.Close()
	waitGone(t, pid)
	b.AssertNoMessage()
}

// A shutdown kills running commands at once instead of waiting for them;
// so does a stdio client that closes its input (it is leaving), without
// waiting for the shutdown deadline (ten minutes here) as the daemon does
// for the other requests in flight.
func TestCommandExecShutdown(t *testing.T) {
	for name, end := range map[string]func(*Daemon){
		"SIGTERM":   func(d *Daemon) { d.Signal(syscall.SIGTERM) },
		"stdin EOF": (*Daemon).CloseStdin,
	} {
		t.Run(name, func(t *testing.T) {
			d, c := utilClient(t, Options{Config: []string{"server.shutdown_timeout_ms=600000"}})
			id, pid := startPidProcess(t, c, "long")
			end(d)
			var r execResult
			validResult(t, "command/exec", c.Response(id), &r)
			if r.ExitCode == 0 {
				t.Fatalf("killed command exited 0")
			}
			if code := d.Wait(); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			waitGone(t, pid)
		})
	}
}

// Without a sandboxPolicy the configured sandbox (read-only by default)
// applies; a host that cannot sandbox refuses rather than run the command
// unconfined.
func TestCommandExecSandbox(t *testing.T) {
	_, c := utilClient(t, Options{})
	dir := t.TempDir()
	target := filepath.Join(dir, "written")
	m := c.Call("command/exec", map[string]any{"command": []string{"bash", "-c", "echo x > " + target}, "cwd": dir})
	if policy.Detect().MethodFor(policy.ReadOnly()) == policy.MethodNone {
		WantError(t, m, codeInternal, "")
		if !strings.HasPrefix(m.Error.Message, "failed to spawn command: no sandbox is available on this host") {
			t.Fatalf("got %q", m.Error.Message)
		}
		return
	}
	var r execResult
	validResult(t, "command/exec", m, &r)
	if r.ExitCode == 0 {
		t.Fatalf("a read-only sandbox let the command write: %+v", r)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file written under read-only: %v", err)
	}
	validResult(t, "command/exec", c.Call("command/exec", map[string]any{
		"command": []string{"bash", "-c", "echo x > " + target}, "cwd": dir,
		"sandboxPolicy": map[string]any{"type": "workspaceWrite"},
	}), &r)
	if r.ExitCode != 0 {
		t.Fatalf("workspace-write could not write in its cwd: %+v", r)
	}
}
