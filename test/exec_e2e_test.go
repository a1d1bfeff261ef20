package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// execRun is one agentd exec process's outcome.
type execRun struct {
	stdout, stderr string
	code           int
}

// execEnv is a home pointed at the mock model, a user home, and a git
// working directory for agentd exec.
type execEnv struct {
	home, userHome, cwd string
}

func newExecEnv(t *testing.T, m *mockmodel.Server, extraConfig string) execEnv {
	t.Helper()
	base, err := filepath.EvalSymlinks(shortTempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	e := execEnv{home: filepath.Join(base, "home"), userHome: filepath.Join(base, "user"), cwd: filepath.Join(base, "work")}
	for _, d := range []string{e.home, e.userHome, filepath.Join(e.cwd, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if m != nil {
		if err := os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(mockConfig(m, extraConfig)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// run runs the built agentd exec in dir with stdin (nil: an empty pipe)
// and args after "exec".
func (e execEnv) run(t *testing.T, dir string, stdin *string, args ...string) execRun {
	t.Helper()
	// A bound so that a hung run fails the test instead of the whole
	// package; not an assertion about speed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"exec", "--home", e.home}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(filteredEnv(), "HOME="+e.userHome)
	in := ""
	if stdin != nil {
		in = *stdin
	}
	cmd.Stdin = strings.NewReader(in)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := execRun{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("agentd exec %v: %v\nstderr:\n%s", args, err, r.stderr)
	}
	return r
}

func strp(s string) *string { return &s }

// execSchema is docs/exec-events.schema.json, compiled.
func execSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "docs", "exec-events.schema.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file://"+path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("file://" + path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// events checks that stdout is JSONL whose every line the documented
// schema accepts, and decodes it.
func events(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	schema := execSchema(t)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		if err := schema.Validate(v); err != nil {
			t.Fatalf("event %s does not follow docs/exec-events.schema.json: %v", line, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// shape is an event's type and, for item events, the item's type and id.
func shape(ev map[string]any) string {
	s, _ := ev["type"].(string)
	if it, ok := ev["item"].(map[string]any); ok {
		s += " " + it["type"].(string) + " " + it["id"].(string)
	}
	return s
}

// agentd exec --json prints codex exec's event stream, every line valid
// against the documented schema: thread and turn events, reasoning and
// the agent's message as completed items, a command started then
// completed under one id, the plan as a todo_list, the usage of the
// model's responses; the final message goes to -o's file; the model got
// the prompt; --output-schema reaches the request.
func TestExecJSONEventStream(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.SSE(mockmodel.Created("resp_1"), mockmodel.Reasoning("rs_1", []string{"**Looking** first"}, ""),
			mockmodel.ExecCommand("call_1", "echo hi; exit 3"), mockmodel.Completed("resp_1", mockmodel.Usage{Input: 100, Cached: 40, Output: 10, Reasoning: 4})),
		mockmodel.SSE(mockmodel.Created("resp_2"), mockmodel.UpdatePlan("call_2", "look", "fix"),
			mockmodel.Completed("resp_2", mockmodel.Usage{Input: 200, Cached: 50, Output: 20, Reasoning: 6})),
		mockmodel.SSE(mockmodel.Created("resp_3"), mockmodel.Text("msg_1", `{"answer":"done"}`),
			mockmodel.Completed("resp_3", mockmodel.Usage{Input: 300, Cached: 60, Output: 30, Reasoning: 8})),
	)
	e := newExecEnv(t, m, "")
	schemaFile := filepath.Join(e.cwd, "schema.json")
	if err := os.WriteFile(schemaFile, []byte(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(e.cwd, "last.txt")
	r := e.run(t, e.cwd, nil, "--json", "-o", last, "--output-schema", schemaFile, "say hi")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	evs := events(t, r.stdout)
	var got []string
	for _, ev := range evs {
		got = append(got, shape(ev))
	}
	want := []string{
		"thread.started",
		"turn.started",
		"item.completed reasoning item_0",
		"item.started command_execution item_1",
		"item.completed command_execution item_1",
		"item.started todo_list item_2",
		"item.completed agent_message item_3",
		"item.completed todo_list item_2",
		"turn.completed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s\nstdout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), r.stdout)
	}
	if id, _ := evs[0]["thread_id"].(string); len(id) != 36 {
		t.Errorf("thread.started %v", evs[0])
	}
	if text := path(evs[2], "item", "text"); text != "**Looking** first" {
		t.Errorf("reasoning text %v", text)
	}
	cmd := evs[4]["item"].(map[string]any)
	if !strings.Contains(cmd["command"].(string), "echo hi; exit 3") || cmd["aggregated_output"] != "hi\n" || cmd["exit_code"] != float64(3) || cmd["status"] != "failed" {
		t.Errorf("completed command %v", cmd)
	}
	if started := evs[3]["item"].(map[string]any); started["status"] != "in_progress" || started["exit_code"] != nil {
		t.Errorf("started command %v", started)
	}
	todo := evs[7]["item"].(map[string]any)["items"].([]any)
	if len(todo) != 2 || todo[0].(map[string]any)["text"] != "look" {
		t.Errorf("todo list %v", todo)
	}
	usage := evs[8]["usage"].(map[string]any)
	wantUsage := map[string]float64{"input_tokens": 600, "cached_input_tokens": 150, "output_tokens": 60, "reasoning_output_tokens": 18, "cache_write_input_tokens": 0}
	for k, v := range wantUsage {
		if usage[k] != v {
			t.Errorf("usage %s = %v, want %v (%v)", k, usage[k], v, usage)
		}
	}
	if got := readFile(t, last); got != `{"answer":"done"}` {
		t.Errorf("-o file holds %q", got)
	}
	req := m.Requests()[0]
	if got := req.LastUserText(); got != "say hi" {
		t.Errorf("the model got %q", got)
	}
	format, _ := path(req.JSON, "text", "format").(map[string]any)
	if format["type"] != "json_schema" || format["name"] != "codex_output_schema" || format["strict"] != true || path(format, "schema", "required") == nil {
		t.Errorf("the request's text.format is %v; want the output schema", format)
	}
}

// Without --json: the transcript on stderr, the final message alone on
// stdout; the prompt from the argument gets piped input in a <stdin>
// block, a prompt from stdin alone is read whole.
func TestExecHumanOutput(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "echo from-the-command")),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_1", "All done.")),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_2", "Read it.")),
	)
	e := newExecEnv(t, m, "")
	r := e.run(t, e.cwd, strp("piped context\n"), "fix it")
	if r.code != 0 || r.stdout != "All done.\n" {
		t.Fatalf("exit %d, stdout %q; want 0 and the final message alone\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"Reading additional input from stdin...", "workdir: " + e.cwd, "model: mock-model", "approval: never",
		"user\nfix it\n\n<stdin>\npiped context\n</stdin>", "exec\n", "echo from-the-command", "succeeded", "from-the-command\n", "codex\nAll done.", "tokens used"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if got := m.Requests()[0].LastUserText(); got != "fix it\n\n<stdin>\npiped context\n</stdin>" {
		t.Errorf("the model got %q", got)
	}

	r = e.run(t, e.cwd, strp("the whole prompt\n"))
	if r.code != 0 || r.stdout != "Read it.\n" || !strings.Contains(r.stderr, "Reading prompt from stdin...") {
		t.Fatalf("prompt from stdin: exit %d, stdout %q\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := m.Requests()[2].LastUserText(); got != "the whole prompt\n" {
		t.Errorf("the model got %q", got)
	}
}

// A failed turn exits 1: in JSON, an error event then turn.failed with
// the model's error; in the transcript, the error on stderr and nothing
// on stdout. Mistakes in the command line exit non-zero before any model
// request.
func TestExecFailuresExitNonZero(t *testing.T) {
	m := mockmodel.New(t)
	body := `{"error":{"message":"bad request from the test","type":"invalid_request_error"}}`
	m.Enqueue(mockmodel.Status(400, body), mockmodel.Status(400, body))
	e := newExecEnv(t, m, "")

	r := e.run(t, e.cwd, nil, "--experimental-json", "fail please")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	evs := events(t, r.stdout)
	last := evs[len(evs)-1]
	if last["type"] != "turn.failed" || !strings.Contains(path(last, "error", "message").(string), "bad request from the test") {
		t.Fatalf("last event %v", last)
	}
	if prev := evs[len(evs)-2]; prev["type"] != "error" {
		t.Errorf("before turn.failed: %v, want an error event", prev)
	}

	r = e.run(t, e.cwd, nil, "fail again")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "ERROR: ") || !strings.Contains(r.stderr, "bad request from the test") {
		t.Fatalf("transcript: exit %d, stdout %q\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// Outside a git repository, without --skip-git-repo-check.
	outside := shortTempDir(t)
	r = e.run(t, outside, nil, "hi")
	if r.code != 1 || !strings.Contains(r.stderr, "Not inside a trusted directory and --skip-git-repo-check was not specified.") {
		t.Errorf("outside a repository: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	// No prompt at all.
	if r = e.run(t, e.cwd, strp("  \n")); r.code != 1 || !strings.Contains(r.stderr, "No prompt provided via stdin.") {
		t.Errorf("empty stdin: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	// A bad flag value, a missing schema file.
	if r = e.run(t, e.cwd, nil, "--sandbox", "everything", "hi"); r.code != 2 {
		t.Errorf("--sandbox everything: exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"review", "x"}, {"fork", "x"}, {"--oss", "hi"}} {
		if r = e.run(t, e.cwd, nil, args...); r.code != 2 {
			t.Errorf("exec %v: exit %d, want 2 (not run as a prompt)\nstderr:\n%s", args, r.code, r.stderr)
		}
	}
	if r = e.run(t, e.cwd, nil, "--output-schema", filepath.Join(outside, "missing.json"), "hi"); r.code == 0 || !strings.Contains(r.stderr, "missing.json") {
		t.Errorf("missing schema: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if len(m.Requests()) != 2 {
		t.Errorf("%d model requests; the refused runs made some", len(m.Requests()))
	}
}

// exec resume --last continues the latest thread of the directory (its
// history reaches the model), resume ID the one named; --last finds
// nothing in another directory unless --all; --skip-git-repo-check lets
// exec run outside a repository.
func TestExecResume(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "First answer.")),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "Second answer.")),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_3", "Third answer.")),
		mockmodel.Reply("resp_4", mockmodel.Text("msg_4", "Fourth answer.")),
	)
	e := newExecEnv(t, m, "")
	first := events(t, e.run(t, e.cwd, nil, "--json", "first question").stdout)
	id := first[0]["thread_id"].(string)

	r := e.run(t, e.cwd, nil, "--json", "resume", "--last", "second question")
	evs := events(t, r.stdout)
	if r.code != 0 || evs[0]["thread_id"] != id {
		t.Fatalf("resume --last: exit %d, events %v; want thread %s\nstderr:\n%s", r.code, evs, id, r.stderr)
	}
	req := m.Requests()[1]
	if users := req.MessageTexts("user"); !strings.Contains(strings.Join(users, "\n"), "first question") || req.LastUserText() != "second question" {
		t.Fatalf("the resumed turn's request has user messages %q", users)
	}

	// The SDK's form: flags first, then resume ID, the prompt on stdin.
	r = e.run(t, e.cwd, strp("third question"), "--experimental-json", "--skip-git-repo-check", "resume", id)
	if evs := events(t, r.stdout); r.code != 0 || evs[0]["thread_id"] != id || m.Requests()[2].LastUserText() != "third question" {
		t.Fatalf("resume ID: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	elsewhere := shortTempDir(t)
	r = e.run(t, elsewhere, nil, "--skip-git-repo-check", "resume", "--last", "fourth")
	if r.code == 0 || !strings.Contains(r.stderr, "no recorded session to resume") {
		t.Fatalf("resume --last elsewhere: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	r = e.run(t, elsewhere, nil, "--skip-git-repo-check", "--json", "resume", "--last", "--all", "fourth")
	if evs := events(t, r.stdout); r.code != 0 || evs[0]["thread_id"] != id {
		t.Fatalf("resume --last --all: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// --remote runs the turn in a running daemon, over its Unix socket or
// WebSocket: same events, and the thread is the daemon's.
func TestExecRemote(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "From the daemon.")), mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "Over WebSocket.")))
	e := newExecEnv(t, m, "")
	d := Start(t, Options{Home: e.home, Listen: []string{"unix://" + filepath.Join(e.home, "d.sock"), "ws://127.0.0.1:0"}})
	r := e.run(t, e.cwd, nil, "--json", "--remote", "unix://"+d.UnixPath(), "remote question")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	evs := events(t, r.stdout)
	if path(evs[len(evs)-2], "item", "text") != "From the daemon." {
		t.Fatalf("events %v", evs)
	}
	c := d.DialUnix()
	c.Initialize("e2e", nil)
	list := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": evs[0]["thread_id"]})))
	if path(list, "thread", "id") != evs[0]["thread_id"] {
		t.Fatalf("the daemon does not know the thread: %v", list)
	}
	if r := e.run(t, e.cwd, nil, "--remote", d.URL("ws"), "over ws"); r.code != 0 || r.stdout != "Over WebSocket.\n" {
		t.Fatalf("--remote %s: exit %d, stdout %q\nstderr:\n%s", d.URL("ws"), r.code, r.stdout, r.stderr)
	}
	if r := e.run(t, e.cwd, nil, "--remote", "unix://"+filepath.Join(e.home, "nobody.sock"), "hi"); r.code == 0 {
		t.Fatalf("a socket nobody listens on: exit 0\nstderr:\n%s", r.stderr)
	}
}

// CODEX_API_KEY (the SDK's apiKey option) is the OpenAI provider's key
// for agentd exec, as for codex exec, when OPENAI_API_KEY is unset.
func TestExecTakesCodexAPIKey(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "Keyed.")))
	e := newExecEnv(t, nil, "")
	cfg := "model = \"mock-model\"\n\n[model_providers.openai]\nbase_url = \"" + m.URL() + "\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
	if err := os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEX_API_KEY", "sk-from-the-sdk")
	r := e.run(t, e.cwd, nil, "hi")
	if r.code != 0 || r.stdout != "Keyed.\n" {
		t.Fatalf("exit %d, stdout %q\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := m.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-from-the-sdk" {
		t.Fatalf("Authorization %q", got)
	}
}

// SIGINT interrupts the running turn: agentd exec asks the agent to stop,
// waits for the turn's end, prints neither turn.completed nor
// turn.failed, and exits 1.
func TestExecInterruptedBySignal(t *testing.T) {
	m := mockmodel.New(t)
	gate := mockmodel.NewGate()
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "never finished")).GateAfter(1, gate))
	e := newExecEnv(t, m, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "exec", "--home", e.home, "--json", "long task")
	cmd.Dir = e.cwd
	cmd.Env = append(filteredEnv(), "HOME="+e.userHome)
	cmd.Stdin = strings.NewReader("")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.Reached(): // the model's stream is in flight
	case <-ctx.Done():
		t.Fatal("the model request never arrived")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\nstdout:\n%s\nstderr:\n%s", err, so.String(), se.String())
	}
	evs := events(t, so.String())
	for _, ev := range evs {
		if ev["type"] == "turn.completed" || ev["type"] == "turn.failed" {
			t.Fatalf("an interrupted turn printed %v", ev)
		}
	}
	if evs[len(evs)-1]["type"] != "turn.started" {
		t.Fatalf("events %v", evs)
	}
}
