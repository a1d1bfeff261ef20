package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// hostilePaths makes, in a temporary tree, the files a careless or
// hostile client may name as a rollout: a named pipe with no writer, a
// directory, a 200 MB file with no newline (sparse), and a JSON file that
// is not a rollout; with /dev/zero (which is only ever stat'ed). Each maps
// to the reason the error must give.
func hostilePaths(t testing.TB) map[string]string {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		fifo:                        "path is a named pipe (FIFO), not a regular file",
		"/dev/zero":                 "path is a character device, not a regular file",
		sparseFile(t, dir, 200<<20): "not a rollout file: no session metadata within its first 1 MiB",
		dir:                         "path is a directory, not a regular file",
		writeTemp(t, dir, "other.jsonl", `{"hello":"world"}`+"\n"): "not a rollout file: the first line is not the session's metadata (session_meta)",
	}
}

// sparseFile makes a file of size zero bytes with no newline, taking no
// disk space.
func sparseFile(t testing.TB, dir string, size int64) string {
	p := filepath.Join(dir, "huge.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeTemp(t testing.TB, dir, name, content string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// thread/resume and thread/fork with a path that is not a rollout are
// answered at once with an error that says what the path is, and the
// daemon still exits at once on stdin EOF.
func TestResumeAndForkOfHostilePaths(t *testing.T) {
	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	for p, why := range hostilePaths(t) {
		for _, method := range []string{"thread/resume", "thread/fork"} {
			m := c.Call(method, map[string]any{"threadId": "00000000-0000-7000-8000-000000000000", "path": p})
			WantError(t, m, codeInvalidRequest, fmt.Sprintf("failed to resolve rollout path `%s`: %s", p, why))
		}
	}
	// The same requests, left in flight when stdin closes: each is
	// answered, and the daemon exits.
	var ids []json.RawMessage
	for p := range hostilePaths(t) {
		ids = append(ids, c.Request("thread/resume", map[string]any{"threadId": "x", "path": p}))
	}
	d.CloseStdin()
	for _, id := range ids {
		if m := c.Response(id); m.Error == nil {
			t.Fatalf("answered %s", m.Raw)
		}
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// A stored thread with a line longer than [server] rollout_max_line_bytes
// is refused, naming the line and the setting, by every read of it.
func TestOverLongLineIsRefused(t *testing.T) {
	home := shortTempDir(t)
	id := "0199c1b6-7d3a-7c4e-9a1b-2f3e4d5c6b7a"
	dir := filepath.Join(home, "sessions", "2026", "11", "29")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf(`{"timestamp":"2026-11-29T23:01:17.115Z","type":"session_meta","payload":{"id":%q,"timestamp":"2026-11-29T23:01:17.115Z","cwd":"/tmp","originator":"e2e","cli_version":"0.0.1"}}`, id)
	long := `{"timestamp":"2026-11-29T23:01:18.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"` +
		strings.Repeat("x", 8192) + `"}]}}`
	p := writeTemp(t, dir, "rollout-2026-11-29T23-01-17-"+id+".jsonl", meta+"\n"+long+"\n")
	d := Start(t, Options{Home: home, Config: []string{"server.rollout_max_line_bytes=4096"}})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	want := fmt.Sprintf("failed to read thread %s: rollout `%s`: line too long: line 2 is longer than the limit of 4096 bytes (set by [server] rollout_max_line_bytes)", id, p)
	WantError(t, c.Call("thread/resume", map[string]any{"threadId": id}), codeInternal, want)
	WantError(t, c.Call("thread/resume", map[string]any{"threadId": "ignored", "path": p}), codeInternal, want)
	WantError(t, c.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true}), codeInternal, want)
	WantError(t, c.Call("thread/fork", map[string]any{"threadId": id}), codeInternal, want)
	WantError(t, c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("hi")}), codeInternal, want)
	WantError(t, c.Call("thread/fork", map[string]any{"threadId": "ignored", "path": p}), codeInvalidRequest,
		fmt.Sprintf("failed to resolve rollout path `%s`: line too long: line 2 is longer than the limit of 4096 bytes (set by [server] rollout_max_line_bytes)", p))
}

// thread/fork with a path forks the rollout at that path, whatever
// threadId says, as the reference does.
func TestForkHonoursPath(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "original"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	src := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, src, "remember 42")
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": src})))
	srcPath := str(read, "thread", "path")
	if srcPath == "" {
		t.Fatalf("no path in %v", read)
	}
	c.Request("thread/fork", map[string]any{"threadId": "00000000-0000-7000-8000-000000000000", "path": srcPath})
	msgs := collectUntil(c, isMethod("thread/started"))
	var res map[string]any
	for _, msg := range msgs {
		if msg.Error != nil {
			t.Fatalf("fork by path: %s", msg.Raw)
		}
		if msg.Result != nil {
			res = unmarshal(t, msg.Result)
		}
	}
	turns, _ := path(res, "thread", "turns").([]any)
	if str(res, "thread", "forkedFromId") != src || str(res, "thread", "id") == src || len(turns) != 1 {
		t.Fatalf("fork by path: %v", res)
	}
}

// A thread another program wrote into the home (the reference's record
// layout) with a damaged line in the middle (a record cut short and a
// line of binary bytes between its two turns): thread/list shows it,
// thread/read has both turns, thread/resume loads it and the model gets
// both turns' history; each skipped line is logged with its file and
// line number.
func TestForeignRolloutWithADamagedLineInTheMiddle(t *testing.T) {
	const id = "01a1f000-0000-7000-8000-0000000000c7"
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "third answer"), mockmodel.Completed("resp_1", usage())))
	home, cwd := shortTempDir(t), t.TempDir()
	meta := fmt.Sprintf(`{"timestamp":"2026-12-01T10:00:00.000Z","type":"session_meta","payload":{"id":%q,"timestamp":"2026-12-01T10:00:00.000Z","cwd":%q,"originator":"codex_cli_rs","cli_version":"0.169.0","source":"cli","model_provider":"mock"}}`, id, cwd)
	turn := func(n int, question, answer string) []string {
		at := fmt.Sprintf("2026-12-01T10:0%d:00", n)
		return []string{
			fmt.Sprintf(`{"timestamp":"%s.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t-%d"}}`, at, n),
			fmt.Sprintf(`{"timestamp":"%s.001Z","type":"turn_context","payload":{"turn_id":"t-%d","cwd":%q,"approval_policy":"never","sandbox_policy":{"type":"read-only"},"model":"mock-model","summary":"auto"}}`, at, n, cwd),
			fmt.Sprintf(`{"timestamp":"%s.002Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}}`, at, question),
			fmt.Sprintf(`{"timestamp":"%s.003Z","type":"event_msg","payload":{"type":"user_message","message":%q,"images":[],"local_images":[],"text_elements":[]}}`, at, question),
			fmt.Sprintf(`{"timestamp":"%s.004Z","type":"event_msg","payload":{"type":"agent_message","message":%q}}`, at, answer),
			fmt.Sprintf(`{"timestamp":"%s.005Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":%q}]}}`, at, answer),
			fmt.Sprintf(`{"timestamp":"%s.006Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t-%d","last_agent_message":%q}}`, at, n, answer),
		}
	}
	lines := append([]string{meta}, turn(1, "first question", "first answer")...)
	lines = append(lines, `{"timestamp":"2026-12-01T10:01:30.000Z","type":"event_msg","payload":{"type":"agent_mess`, "\x00\x01\xff not a record")
	lines = append(lines, turn(2, "second question", "second answer")...)
	dir := filepath.Join(home, "sessions", "2026", "12", "01")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "rollout-2026-12-01T10-00-00-"+id+".jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	list := unmarshal(t, WantResult(t, c.Call("thread/list", map[string]any{})))
	if str(list, "data", 0, "id") != id || path(list, "data", 1) != nil {
		t.Fatalf("thread/list %v", list)
	}
	read := unmarshal(t, WantResult(t, c.Call("thread/read", map[string]any{"threadId": id, "includeTurns": true})))
	turns, _ := path(read, "thread", "turns").([]any)
	if len(turns) != 2 || !strings.Contains(fmt.Sprint(turns[0]), "first answer") || !strings.Contains(fmt.Sprint(turns[1]), "second answer") {
		t.Fatalf("thread/read turns %v", turns)
	}
	for _, n := range []int{9, 10} {
		want := fmt.Sprintf("%s:%d: unreadable record skipped", file, n)
		d.WaitLog(func(l LogLine) bool {
			return l.Level == "warn" && l.Msg == "rollout" && strings.Contains(l.Str("warning"), want)
		})
	}
	WantResult(t, c.Call("thread/resume", map[string]any{"threadId": id}))
	runTurn(t, c, id, "third question")
	req := m.Requests()[0]
	if users := req.MessageTexts("user"); !slicesContains(users, "first question") || !slicesContains(users, "second question") || users[len(users)-1] != "third question" {
		t.Fatalf("the model's history: users %q", users)
	}
	if as := req.MessageTexts("assistant"); !slicesContains(as, "first answer") || !slicesContains(as, "second answer") {
		t.Fatalf("the model's history: assistants %q", as)
	}
}
