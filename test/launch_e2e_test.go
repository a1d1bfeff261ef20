package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// launch runs the binary with args in a new home (through AGENTD_HOME,
// as an IDE would not pass --home) and returns the command, its stdin and
// its stdout.
func launch(t *testing.T, home string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	return launchEnv(t, []string{"AGENTD_HOME=" + home}, args...)
}

// launchEnv runs the binary with args and env added to the test's
// filtered environment (no home variable but those in env).
func launchEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(Binary(), args...)
	cmd.Env = append(filteredEnv(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		outR.Close()
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	return cmd, in, bufio.NewReader(outR)
}

// The launch lines IDE extensions use for `codex app-server` start agentd,
// which answers over stdio and exits at stdin's end; -c works after the
// subcommand and before it, --enable is -c features.<name>=true.
func TestIDELaunchLines(t *testing.T) {
	for _, args := range [][]string{
		{"app-server", "--analytics-default-enabled"},
		{"app-server", "--stdio", "-c", `model="from-flag"`, "--enable", "unified_exec", "--disable", "web_search_request"},
		{"-c", `model="from-flag"`, "app-server", "--analytics-default-enabled"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			home := t.TempDir()
			cmd, in, out := launch(t, home, args...)
			io.WriteString(in, `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"vscode","version":"1"}}}`+"\n")
			io.WriteString(in, `{"id":2,"method":"config/read","params":{}}`+"\n")
			for id := 1; id <= 2; id++ {
				line, err := out.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				var m struct {
					ID     int             `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal([]byte(line), &m) != nil || m.ID != id || m.Result == nil {
					t.Fatalf("answer %d: %s", id, line)
				}
				if id == 2 && slicesContains(args, "-c") && !strings.Contains(string(m.Result), `"model":"from-flag"`) {
					t.Fatalf("-c after the subcommand not applied: %s", m.Result)
				}
			}
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v", err)
			}
		})
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// run runs the binary to completion and returns its exit code, stdout and
// stderr.
func run(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(Binary(), args...)
	cmd.Env = append(filteredEnv(), "AGENTD_HOME="+home)
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// Command-line mistakes exit with 2 and say what is wrong; --listen off
// alone has nothing to serve; an unknown feature is named.
func TestCommandLineErrors(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"app-server", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"app-server", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"nosuchcommand"}, 2, "unknown command"},
		{[]string{"app-server", "generate-ts"}, 2, "--out DIR is required"},
		{[]string{"app-server", "--listen", "off"}, 1, "no transport configured; use --listen"},
		{[]string{"app-server", "--enable", "no_such_feature"}, 1, "Unknown feature flag: no_such_feature"},
	} {
		code, _, stderr := run(t, home, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.says)
		}
	}
}

// --strict-config refuses a config.toml with a key agentd does not know,
// naming the file, the position and the key; without it the daemon starts.
// --print-startup-config says the same as JSON, or prints the version and
// the requirements.
func TestStrictAndStartupConfig(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.toml")
	code, stdout, _ := run(t, home, "app-server", "--print-startup-config")
	var ok struct {
		Version      string          `json:"appServerVersion"`
		Requirements json.RawMessage `json:"configRequirements"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &ok) != nil || !strings.HasPrefix(ok.Version, "0.") || ok.Requirements == nil {
		t.Fatalf("print-startup-config: exit %d, %q", code, stdout)
	}
	if err := os.WriteFile(path, []byte("model = \"m\"\nbogus_key = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := path + ":2:1: unknown configuration field `bogus_key`"
	code, _, stderr := run(t, home, "app-server", "--strict-config")
	if code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("strict: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, stdout, _ = run(t, home, "app-server", "--strict-config", "--print-startup-config")
	var bad struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Reason   string `json:"reason"`
				FilePath string `json:"filePath"`
				Line     int    `json:"line"`
			} `json:"data"`
		} `json:"error"`
	}
	if code != 1 || json.Unmarshal([]byte(stdout), &bad) != nil || bad.Error.Code != -32600 ||
		bad.Error.Message != "failed to load configuration: "+want || bad.Error.Data.FilePath != path || bad.Error.Data.Line != 2 {
		t.Fatalf("strict print-startup-config: exit %d, %s", code, stdout)
	}
	// Not strict: a warning, and the daemon serves.
	d := Start(t, Options{Home: home, Command: "app-server"})
	d.Stdio().Initialize("lenient", nil)
}

// --startup-sign-out removes the stored API key first, as the reference
// does (with --print-startup-config, the launch IDEs use).
func TestStartupSignOut(t *testing.T) {
	home := t.TempDir()
	authFile := filepath.Join(home, "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"auth_mode":"apikey","OPENAI_API_KEY":"sk-x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, home, "app-server", "--print-startup-config"); code != 0 {
		t.Fatalf("print-startup-config: %d %s", code, stderr)
	}
	if _, err := os.Stat(authFile); err != nil {
		t.Fatalf("signed out without --startup-sign-out: %v", err)
	}
	if code, _, stderr := run(t, home, "app-server", "--print-startup-config", "--startup-sign-out"); code != 0 {
		t.Fatalf("print-startup-config --startup-sign-out: %d %s", code, stderr)
	}
	if _, err := os.Stat(authFile); !os.IsNotExist(err) {
		t.Fatalf("auth.json after --startup-sign-out: %v", err)
	}
}

// generate-json-schema writes the bundle under the reference's names;
// generate-ts writes one declaration file per type and an index, which a
// TypeScript compiler accepts when one is at hand.
func TestGenerateSchemaAndTypeScript(t *testing.T) {
	home, out := t.TempDir(), t.TempDir()
	if code, _, stderr := run(t, home, "app-server", "generate-json-schema", "--out", out, "--experimental"); code != 0 {
		t.Fatalf("generate-json-schema: %d %s", code, stderr)
	}
	for _, name := range []string{"codex_app_server_protocol.schemas.json", "codex_app_server_protocol.v2.schemas.json"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !json.Valid(b) || !bytes.Contains(b, []byte(`"collaborationMode/list"`)) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	ts := t.TempDir()
	if code, _, stderr := run(t, home, "app-server", "generate-ts", "--out", ts); code != 0 {
		t.Fatalf("generate-ts: %d %s", code, stderr)
	}
	index, err := os.ReadFile(filepath.Join(ts, "index.ts"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(ts, "ThreadStatus.ts"))
	if err != nil || !bytes.Contains(b, []byte(`export type ThreadStatus = { type: "notLoaded", } | { type: "idle", } | { type: "systemError", } | { activeFlags: Array<ThreadActiveFlag>, type: "active", };`)) ||
		!bytes.Contains(b, []byte(`import type { ThreadActiveFlag } from "./ThreadActiveFlag";`)) || !bytes.Contains(index, []byte(`export type { ThreadStatus } from "./ThreadStatus";`)) {
		t.Fatalf("ThreadStatus.ts: %v\n%s", err, b)
	}
	compileTS(t, ts)
}

// compileTS compiles the declarations in dir with a TypeScript compiler
// ($AGENTD_TSC, else tsc on PATH); without one, only that step is
// skipped, with a message.
func compileTS(t *testing.T, dir string) {
	t.Helper()
	tsc := os.Getenv("AGENTD_TSC")
	if tsc == "" {
		tsc, _ = exec.LookPath("tsc")
	}
	if tsc == "" {
		t.Log("no TypeScript compiler (set AGENTD_TSC or put tsc on PATH): the declarations are not compiled")
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ts"))
	cmd := exec.Command(tsc, append([]string{"--noEmit", "--strict", "--isolatedModules"}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
}

// generate-ts --experimental adds the experimental methods' types and
// the experimental fields of stable types, which the stable output
// leaves out; both compile.
func TestGenerateTypeScriptExperimental(t *testing.T) {
	home, stable, exp := t.TempDir(), t.TempDir(), t.TempDir()
	if code, _, stderr := run(t, home, "app-server", "generate-ts", "--out", stable); code != 0 {
		t.Fatalf("generate-ts: %d %s", code, stderr)
	}
	if code, _, stderr := run(t, home, "app-server", "generate-ts", "--experimental", "--out", exp); code != 0 {
		t.Fatalf("generate-ts --experimental: %d %s", code, stderr)
	}
	stableIndex, expIndex := readFile(t, filepath.Join(stable, "index.ts")), readFile(t, filepath.Join(exp, "index.ts"))
	for _, name := range []string{"CollaborationModeListResponse", "DynamicToolSpec"} {
		if _, err := os.Stat(filepath.Join(stable, name+".ts")); err == nil || strings.Contains(stableIndex, name) {
			t.Errorf("the stable output has the experimental type %s", name)
		}
		if _, err := os.Stat(filepath.Join(exp, name+".ts")); err != nil || !strings.Contains(expIndex, `export type { `+name+` } from "./`+name+`";`) {
			t.Errorf("the experimental output lacks %s: %v", name, err)
		}
	}
	if strings.Contains(readFile(t, filepath.Join(stable, "ThreadStartParams.ts")), "experimentalRawEvents") ||
		!strings.Contains(readFile(t, filepath.Join(exp, "ThreadStartParams.ts")), "experimentalRawEvents") {
		t.Error("ThreadStartParams.experimentalRawEvents: want it in the experimental output only")
	}
	compileTS(t, stable)
	compileTS(t, exp)
}

// stdioConn is a net.Conn over a child's stdin and stdout.
type stdioConn struct {
	io.Reader
	io.WriteCloser
}

func (stdioConn) LocalAddr() net.Addr              { return &net.UnixAddr{Name: "proxy", Net: "unix"} }
func (stdioConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Name: "proxy", Net: "unix"} }
func (stdioConn) SetDeadline(time.Time) error      { return nil }
func (stdioConn) SetReadDeadline(time.Time) error  { return nil }
func (stdioConn) SetWriteDeadline(time.Time) error { return nil }

// `app-server proxy` pipes stdio to a running daemon's Unix socket: a
// client speaks WebSocket through it, as remote front ends do over SSH.
func TestProxyToARunningDaemon(t *testing.T) {
	home := shortTempDir(t)
	Start(t, Options{Home: home, Listen: []string{"unix://"}})
	cmd, in, out := launch(t, home, "app-server", "proxy")
	conn := stdioConn{Reader: out, WriteCloser: in}
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://localhost/", &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil },
	}}})
	if err != nil {
		t.Fatalf("websocket through the proxy: %v", err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"ssh","version":"1"}}}`)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := ws.Read(ctx)
	if err != nil || !bytes.Contains(msg, []byte(`"userAgent":"ssh/`)) {
		t.Fatalf("initialize through the proxy: %s %v", msg, err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("proxy exit: %v", err)
		}
	case <-time.After(WaitTimeout):
		t.Fatal("the proxy did not exit when both ends were done")
	}
	// Without a daemon the proxy says so.
	code, _, stderr := run(t, t.TempDir(), "app-server", "proxy")
	if code != 1 || !strings.Contains(stderr, "cannot connect to the app-server socket") {
		t.Fatalf("no daemon: exit %d, %q", code, stderr)
	}
}

// Running as root is logged loudly at startup (the tests run as root on
// these machines; as another user there is nothing to see).
func TestRootIsWarnedAbout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not running as root")
	}
	d := Start(t, Options{})
	if !d.HasLog(func(l LogLine) bool { return l.Level == "warn" && strings.HasPrefix(l.Msg, "RUNNING AS ROOT") }) {
		t.Fatalf("no warning:\n%s", d.Stderr())
	}
}

// answerTo writes request id (method, params) to in and reads out up to
// its answer's result, failing on an error.
func answerTo(t *testing.T, in io.Writer, out *bufio.Reader, id int, method string, params any) map[string]any {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var m struct {
			ID     *int           `json:"id"`
			Method string         `json:"method"`
			Result map[string]any `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m.ID != nil && *m.ID == id && m.Method == "" {
			if m.Result == nil {
				t.Fatalf("%s failed: %s", method, line)
			}
			return m.Result
		}
	}
}

// With neither --home nor AGENTD_HOME, CODEX_HOME is the home, as the
// reference has it: its config.toml, its AGENTS.md and its sessions
// directory are the ones used. AGENTD_HOME comes before it.
func TestCodexHomeIsTheHome(t *testing.T) {
	codexHome, work := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte("model = \"from-codex-home\"\nmodel_provider = \"demo\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(codexHome, "AGENTS.md")
	if err := os.WriteFile(doc, []byte("Codex home rule.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, in, out := launchEnv(t, []string{"CODEX_HOME=" + codexHome, "HOME=" + t.TempDir()}, "app-server")
	if got := answerTo(t, in, out, 1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "ide", "version": "1"}}); got["codexHome"] != codexHome {
		t.Fatalf("codexHome %v, want %s", got["codexHome"], codexHome)
	}
	io.WriteString(in, `{"method":"initialized"}`+"\n")
	if got := answerTo(t, in, out, 2, "config/read", map[string]any{}); path(got, "config", "model") != "from-codex-home" {
		t.Fatalf("config/read model %v", path(got, "config", "model"))
	}
	res := answerTo(t, in, out, 3, "thread/start", map[string]any{"cwd": work, "config": map[string]any{"persist_on_start": true}})
	if src, _ := res["instructionSources"].([]any); len(src) != 1 || src[0] != doc {
		t.Fatalf("instructionSources %v, want [%s]", res["instructionSources"], doc)
	}
	if rollout := str(res, "thread", "path"); !strings.HasPrefix(rollout, filepath.Join(codexHome, "sessions")+"/") {
		t.Fatalf("the thread was written to %q, not under %s/sessions", rollout, codexHome)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}

	agentdHome := t.TempDir()
	_, in, out = launchEnv(t, []string{"CODEX_HOME=" + codexHome, "AGENTD_HOME=" + agentdHome, "HOME=" + t.TempDir()}, "app-server")
	if got := answerTo(t, in, out, 1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "ide", "version": "1"}}); got["codexHome"] != agentdHome {
		t.Fatalf("with AGENTD_HOME too, codexHome %v, want %s", got["codexHome"], agentdHome)
	}
}

// `--version` and `-V` print the version line, as `codex --version` does
// (with agentd's line, the one `agentd version` prints); `e` is exec.
func TestVersionFlagAndExecAlias(t *testing.T) {
	home := t.TempDir()
	_, want, _ := run(t, home, "version")
	for _, flag := range []string{"--version", "-V"} {
		code, stdout, stderr := run(t, home, flag)
		if code != 0 || stdout != want || !strings.HasPrefix(stdout, "agentd ") {
			t.Errorf("%s: exit %d, stdout %q (want %q), stderr %q", flag, code, stdout, want, stderr)
		}
	}
	// `e` is exec, as in the reference.
	if code, stdout, _ := run(t, home, "e", "--help"); code != 0 || !strings.Contains(stdout, "codex exec") {
		t.Errorf("e --help: exit %d, %q", code, stdout)
	}
}
