package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The reference (codex) and agentd share a home: each lists, reads,
// resumes and forks the threads the other wrote. These tests drive the
// reference's own binary, when it is installed, against the mock model.

// referenceBinary returns the reference codex binary: $CODEX_REF_BIN,
// $CODEX_BIN, or where the project's tools install it. The test is skipped
// when there is none.
func referenceBinary(t *testing.T) string {
	t.Helper()
	var candidates []string
	for _, env := range []string{"CODEX_REF_BIN", "CODEX_BIN"} {
		if p := os.Getenv(env); p != "" {
			candidates = append(candidates, p)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, "codex-ref/package/vendor/x86_64-unknown-linux-musl/bin/codex"))
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Skip("the reference codex binary is not installed (set CODEX_REF_BIN, or install it in ~/codex-ref: see /work/shared/tools/README.md)")
	return ""
}

// reference is a running `codex app-server` over stdio.
type reference struct {
	*Client
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startReference starts the reference's app-server on home (its
// CODEX_HOME) in cwd and initializes a client.
func startReference(t *testing.T, bin, home, cwd string) *reference {
	t.Helper()
	cmd := exec.Command(bin, "app-server")
	cmd.Dir = cwd
	cmd.Env = append(filteredEnv(), "CODEX_HOME="+home)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &reference{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, "stdio (reference)")
	var mu sync.Mutex
	c.write = func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := stdin.Write(b)
		return err
	}
	c.close = stdin.Close
	r.Client = c
	go func() {
		c.readLines(stdout)
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("reference stderr:\n%s", r.stderr.String())
		}
	})
	c.Initialize("interop", map[string]any{"experimentalApi": true})
	return r
}

// stop ends the reference (stdin closed, as a client leaves) and waits.
func (r *reference) stop() {
	_ = r.close()
	select {
	case <-r.done:
	case <-time.After(WaitTimeout):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// interopConfig is the config.toml both programs read from the shared
// home: the mock model, no approvals, no sandbox.
func interopConfig(m *mockmodel.Server) string {
	return mockConfig(m, "approval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"")
}

// interopHome makes the shared home and a working directory.
func interopHome(t *testing.T, m *mockmodel.Server) (home, cwd string) {
	t.Helper()
	home, cwd = shortTempDir(t), shortTempDir(t)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(interopConfig(m)), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, cwd
}

func turnItems(t testing.TB, turn any) []map[string]any {
	t.Helper()
	var out []map[string]any
	items, _ := path(turn, "items").([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		out = append(out, m)
	}
	return out
}

func itemTypes(items []map[string]any) string {
	var out []string
	for _, it := range items {
		s, _ := it["type"].(string)
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

func runTurnOn(t *testing.T, c *Client, threadID, text string) map[string]any {
	t.Helper()
	WantResult(t, c.Call("turn/start", map[string]any{"threadId": threadID, "input": textInput(text)}))
	m := c.ReadUntil(func(m Message) bool { return m.Method == "turn/completed" })
	return unmarshal(t, m.Params)
}

func TestInteropReferenceThreadReadByAgentd(t *testing.T) {
	bin := referenceBinary(t)
	m := mockmodel.New(t)
	home, cwd := interopHome(t, m)
	// agentd runs before the thread exists: the reference's file must show
	// up in its list without a restart.
	d := Start(t, Options{Home: home, Command: "app-server"})
	c := d.Stdio()
	c.Initialize("interop", map[string]any{"experimentalApi": true})
	if data, _ := path(unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{}))), "data").([]any); len(data) != 0 {
		t.Fatalf("list before: %v", data)
	}

	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "Hello from the reference's turn."), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.ExecCommand("call_1", "echo interop"), mockmodel.Completed("resp_2", usage())),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "It printed interop."), mockmodel.Completed("resp_3", usage())),
	)
	ref := startReference(t, bin, home, cwd)
	res := unmarshal(t, WantResult(t, ref.Call("thread/start", map[string]any{"cwd": cwd})))
	id, refVersion := str(res, "thread", "id"), str(res, "thread", "cliVersion")
	if st := str(runTurnOn(t, ref.Client, id, "say hello"), "turn", "status"); st != "completed" {
		t.Fatalf("reference turn 1: %s", st)
	}
	if st := str(runTurnOn(t, ref.Client, id, "run it"), "turn", "status"); st != "completed" {
		t.Fatalf("reference turn 2: %s", st)
	}
	WantResult(t, ref.Call("thread/name/set", map[string]any{"threadId": id, "name": "Named by the reference"}))
	ref.stop()

	// Listed, named, previewed.
	list := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{})))
	if got := str(list, "data", 0, "id"); got != id {
		t.Fatalf("list %v", list)
	}
	if str(list, "data", 0, "name") != "Named by the reference" || str(list, "data", 0, "preview") != "say hello" ||
		str(list, "data", 0, "cliVersion") != refVersion || str(list, "data", 0, "source") != "vscode" {
		t.Fatalf("list entry %v", path(list, "data", 0))
	}
	// Read with turns and items.
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	turns, _ := path(read, "thread", "turns").([]any)
	if len(turns) != 2 {
		t.Fatalf("turns %v", path(read, "thread", "turns"))
	}
	if got := itemTypes(turnItems(t, turns[0])); got != "userMessage,agentMessage" {
		t.Fatalf("turn 1 items %s", got)
	}
	items := turnItems(t, turns[1])
	if got := itemTypes(items); got != "userMessage,commandExecution,agentMessage" {
		t.Fatalf("turn 2 items %s", got)
	}
	if out, _ := items[1]["aggregatedOutput"].(string); !strings.Contains(out, "interop") || str(items[1], "status") != "completed" {
		t.Fatalf("command %v", items[1])
	}
	if str(items[2], "text") != "It printed interop." || str(turns[1], "status") != "completed" {
		t.Fatalf("turn 2 %v", turns[1])
	}

	// Resumed and continued by agentd: the model gets the reference's
	// history, without the reference's internal bookkeeping.
	m.Enqueue(mockmodel.Reply("resp_4", mockmodel.Text("msg_4", "agentd carries on."), mockmodel.Completed("resp_4", usage())))
	WantResult(t, c.Call("thread/resume", map[string]any{"threadId": id}))
	if st := str(runTurnOn(t, c, id, "carry on"), "turn", "status"); st != "completed" {
		t.Fatalf("agentd turn: %s", st)
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	if body := string(last.Body); strings.Contains(body, "internal_chat_message_metadata_passthrough") ||
		!strings.Contains(body, "say hello") || !strings.Contains(body, "It printed interop.") || !strings.Contains(body, "call_1") {
		t.Fatalf("agentd's request after resume: %s", body)
	}
	// Forked by agentd.
	fork := unmarshal(t, WantResult(t, c.Call("thread/fork", map[string]any{"threadId": id})))
	fid := str(fork, "thread", "id")
	read = unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": fid, "includeTurns": true})))
	if turns, _ := path(read, "thread", "turns").([]any); len(turns) != 3 || str(read, "thread", "forkedFromId") != id {
		t.Fatalf("fork %v", path(read, "thread"))
	}
	c.Close()
	d.Wait()

	// The reference reads agentd's fork of its thread, and agentd's turn.
	ref = startReference(t, bin, home, cwd)
	read = unmarshal(t, WantResult(t, ref.Call("thread/read", map[string]any{"threadId": fid, "includeTurns": true})))
	turns, _ = path(read, "thread", "turns").([]any)
	if len(turns) != 3 {
		t.Fatalf("reference's read of the fork: %v", path(read, "thread"))
	}
	for i, want := range []string{"userMessage,agentMessage", "userMessage,agentMessage", "userMessage,agentMessage"} {
		if got := itemTypes(turnItems(t, turns[i])); got != want {
			t.Errorf("reference's read of fork turn %d: %s", i, got)
		}
	}
}

func TestInteropAgentdThreadReadByReference(t *testing.T) {
	bin := referenceBinary(t)
	m := mockmodel.New(t)
	home, cwd := interopHome(t, m)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Reasoning("rs_1", []string{"Thinking it over."}, ""),
			mockmodel.ExecCommand("call_1", "echo from-agentd"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "agentd ran it."), mockmodel.Completed("resp_2", usage())),
		mockmodel.Status(400, `{"error":{"message":"bad request from the mock","type":"invalid_request_error"}}`),
	)
	d := Start(t, Options{Home: home, Command: "app-server"})
	c := d.Stdio()
	c.Initialize("interop", map[string]any{"experimentalApi": true})
	id := startThread(t, c, map[string]any{"cwd": cwd})
	if st := str(runTurnOn(t, c, id, "run something"), "turn", "status"); st != "completed" {
		t.Fatalf("agentd turn 1: %s", st)
	}
	if st := str(runTurnOn(t, c, id, "this one fails"), "turn", "status"); st != "failed" {
		t.Fatalf("agentd turn 2: %s", st)
	}
	WantResult(t, c.Call("thread/name/set", map[string]any{"threadId": id, "name": "Named by agentd"}))
	c.Close()
	d.Wait()

	// The reference lists it, with its name and preview.
	ref := startReference(t, bin, home, cwd)
	list := unmarshal(t, WantResult(t, ref.Call("thread/list", map[string]any{})))
	if str(list, "data", 0, "id") != id || str(list, "data", 0, "name") != "Named by agentd" || str(list, "data", 0, "preview") != "run something" {
		t.Fatalf("reference's list %v", list)
	}
	// It reads the turns and their items.
	read := unmarshal(t, WantResult(t, ref.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	turns, _ := path(read, "thread", "turns").([]any)
	if len(turns) != 2 {
		t.Fatalf("reference's turns %v", path(read, "thread", "turns"))
	}
	if got := itemTypes(turnItems(t, turns[0])); got != "userMessage,reasoning,agentMessage" {
		t.Fatalf("reference's turn 1 items %s", got)
	}
	if items := turnItems(t, turns[0]); str(items[2], "text") != "agentd ran it." || str(items[0], "content", 0, "text") != "run something" {
		t.Fatalf("reference's turn 1 %v", turns[0])
	}
	if str(turns[1], "status") != "failed" || !strings.Contains(str(turns[1], "error", "message"), "bad request from the mock") {
		t.Fatalf("reference's turn 2 %v", turns[1])
	}
	// It resumes it and runs a turn, with agentd's history.
	m.Enqueue(mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "The reference carries on."), mockmodel.Completed("resp_3", usage())))
	WantResult(t, ref.Call("thread/resume", map[string]any{"threadId": id}))
	if st := str(runTurnOn(t, ref.Client, id, "reference continues"), "turn", "status"); st != "completed" {
		t.Fatalf("reference's turn: %s", st)
	}
	reqs := m.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "run something") || !strings.Contains(body, "from-agentd") {
		t.Fatalf("the reference's request lacks agentd's history: %s", body)
	}
	ref.stop()

	// And agentd reads the turn the reference added.
	d = Start(t, Options{Home: home, Command: "app-server"})
	c = d.Stdio()
	c.Initialize("interop", nil)
	read = unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	turns, _ = path(read, "thread", "turns").([]any)
	if len(turns) != 3 || itemTypes(turnItems(t, turns[2])) != "userMessage,agentMessage" || str(read, "thread", "name") != "Named by agentd" {
		t.Fatalf("agentd's read after the reference: %v", path(read, "thread"))
	}
	if got := itemTypes(turnItems(t, turns[0])); got != "userMessage,reasoning,commandExecution,agentMessage" {
		t.Fatalf("agentd's turn 1 items %s", got)
	}
}
