package test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// reexecLog is what the re-executed daemon logs first.
const reexecLog = "re-executed without the secret variables in the environment block"

// secretEnv are made-up credentials in the variables the daemon must move
// out of its environment block: a provider's env_key, an env_http_headers
// variable, and the two it always treats as keys.
var secretEnv = map[string]string{
	"E2E_BLOCK_KEY":  "e2e-block-provider-key-71c2",
	"E2E_BLOCK_HDR":  "e2e-block-header-value-3a9d",
	"OPENAI_API_KEY": "sk-e2e-block-openai-5e6f",
	"CODEX_API_KEY":  "e2e-block-codex-key-8b0c",
}

func secretEnvList() []string {
	env := []string{"E2E_PLAIN=plain-in-the-block"}
	for _, name := range slices.Sorted(maps.Keys(secretEnv)) {
		env = append(env, name+"="+secretEnv[name])
	}
	return env
}

// blockConfig is a mock provider reading its key from E2E_BLOCK_KEY and a
// header from E2E_BLOCK_HDR, with the default (read-only) sandbox.
func blockConfig(m *mockmodel.Server) string {
	return strings.Replace(mockConfig(m, `approval_policy = "never"`), "request_max_retries = 0", `request_max_retries = 0
env_key = "E2E_BLOCK_KEY"
env_http_headers = { "X-Block" = "E2E_BLOCK_HDR" }`, 1)
}

// wantCleanBlock fails unless block is an environment block (it holds
// E2E_PLAIN) without any secret value.
func wantCleanBlock(t *testing.T, where, block string) {
	t.Helper()
	if !strings.Contains(block, "E2E_PLAIN=plain-in-the-block") {
		t.Fatalf("%s: not the daemon's environment block:\n%s", where, block)
	}
	for name, v := range secretEnv {
		if strings.Contains(block, v) {
			t.Fatalf("%s holds %s's value:\n%s", where, name, block)
		}
	}
}

// procEnviron reads the kernel's environment block of pid.
func procEnviron(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\x00", "\n")
}

// With the operator's keys in its environment, the daemon re-executes
// itself (same pid) without them in its kernel environment block: neither
// fs/readFile of /proc/self/environ nor a command (read-only sandbox)
// reading its parent's /proc environ finds them, yet the provider still
// gets its key and header. The hand-over variable reaches no child.
func TestSecretsLeaveTheEnvironmentBlock(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hi"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: blockConfig(m), Env: secretEnvList()})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	var file struct{ DataBase64 string }
	fsCall(t, c, "fs/readFile", map[string]any{"path": "/proc/self/environ"}, &file)
	wantCleanBlock(t, "fs/readFile /proc/self/environ", unb64(t, file.DataBase64))
	pid := d.Cmd.Process.Pid
	for _, script := range []string{`tr '\0' '\n' </proc/$PPID/environ`, fmt.Sprintf(`tr '\0' '\n' </proc/%d/environ`, pid)} {
		res := unmarshal(t, WantResult(t, c.Call("command/exec", map[string]any{"command": []string{"sh", "-c", script}})))
		wantCleanBlock(t, "command/exec "+script, str(res, "stdout"))
	}
	wantCleanBlock(t, "/proc/<pid>/environ", procEnviron(t, pid))
	line := d.WaitLog(LogMsg(reexecLog))
	if got := fmt.Sprint(line.Fields["names"]); got != "[CODEX_API_KEY E2E_BLOCK_HDR E2E_BLOCK_KEY OPENAI_API_KEY]" {
		t.Fatalf("moved variables %s", got)
	}
	res := unmarshal(t, WantResult(t, c.Call("command/exec", map[string]any{"command": []string{"env"}})))
	if out := str(res, "stdout"); !strings.Contains(out, "E2E_PLAIN=") || strings.Contains(out, "AGENTD_SECRETS_FD") {
		t.Fatalf("a command's environment:\n%s", out)
	}

	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "hello")
	h := m.Requests()[0].Header
	if h.Get("Authorization") != "Bearer "+secretEnv["E2E_BLOCK_KEY"] || h.Get("X-Block") != secretEnv["E2E_BLOCK_HDR"] {
		t.Fatalf("the model request lacks the provider's credentials: %v", h)
	}
}

// Without a secret variable in its environment the daemon does not
// re-execute: no log line, no hand-over variable in its block.
func TestNoSecretsNoReexec(t *testing.T) {
	d := Start(t, Options{Env: []string{"E2E_PLAIN=plain-in-the-block"}})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	if d.HasLog(LogMsg(reexecLog)) {
		t.Fatalf("re-executed without secrets:\n%s", d.Stderr())
	}
	if block := procEnviron(t, d.Cmd.Process.Pid); strings.Contains(block, "AGENTD_SECRETS_FD") || !strings.Contains(block, "E2E_PLAIN=") {
		t.Fatalf("the environment block:\n%s", block)
	}
}

// Socket activation and readiness notification survive the re-execution:
// the passed socket (fd 3, LISTEN_PID still the daemon's pid) is served,
// READY=1 comes, and the block holds no secret.
func TestSystemdAcrossReexec(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	tcpFile, err := tcp.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	n := newNotifySocket(t)
	m := mockmodel.New(t)
	d := Start(t, Options{ConfigTOML: blockConfig(m), Activate: []*os.File{tcpFile}, ActivateNames: []string{"web"},
		Env: append(secretEnvList(), "NOTIFY_SOCKET="+n.path)})
	_ = tcpFile.Close()
	n.next(t, "READY=1")
	wantCleanBlock(t, "/proc/<pid>/environ", procEnviron(t, d.Cmd.Process.Pid))
	d.WaitLog(LogMsg(reexecLog))
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+tcp.Addr().String(), nil)
	if err != nil {
		t.Fatalf("dial the passed socket: %v", err)
	}
	_ = conn.CloseNow()
	d.Signal(syscall.SIGTERM)
	n.next(t, "STOPPING=1")
	d.Wait()
}
