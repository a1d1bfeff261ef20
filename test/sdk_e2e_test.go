package test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// codexSDKVersion is the @openai/codex-sdk the SDK test drives, pinned.
const codexSDKVersion = "0.163.0"

// codexSDK fetches the published SDK package (npm pack: the package
// alone, without the codex binary it depends on) into a temporary
// directory and returns its entry point; it skips the test when node or
// npm is missing or the registry cannot be reached.
func codexSDK(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping the Codex SDK test: %s is not installed", tool)
		}
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pack := exec.CommandContext(ctx, "npm", "pack", "--silent", "@openai/codex-sdk@"+codexSDKVersion)
	pack.Dir = dir
	out, err := pack.CombinedOutput()
	if err != nil {
		t.Skipf("skipping the Codex SDK test: npm pack @openai/codex-sdk@%s failed (offline?): %v\n%s", codexSDKVersion, err, out)
	}
	tgz := filepath.Join(dir, strings.TrimSpace(string(out)))
	if untar, err := exec.Command("tar", "-xzf", tgz, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", tgz, err, untar)
	}
	entry := filepath.Join(dir, "package", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the SDK package has no %s: %v", entry, err)
	}
	return entry
}

// sdkScriptBody drives the unmodified SDK with agentd as its codex
// binary: a turn, a second one (the SDK resumes the thread by id), a
// streamed one, one with an output schema, and one that fails. It prints
// what it saw as one JSON object.
const sdkScriptBody = `
const { Codex } = await import(process.env.SDK_ENTRY);
const codex = new Codex({
  codexPathOverride: process.env.AGENTD_BIN,
  env: { PATH: process.env.PATH, HOME: process.env.USER_HOME, AGENTD_HOME: process.env.AGENTD_HOME_DIR },
  config: { model_verbosity: "low" },
});
const thread = codex.startThread({
  workingDirectory: process.env.WORK_DIR,
  skipGitRepoCheck: true,
  sandboxMode: "read-only",
  model: "mock-model",
  modelReasoningEffort: "low",
  approvalPolicy: "never",
  networkAccessEnabled: false,
  additionalDirectories: [process.env.WORK_DIR],
});
const out = {};
const first = await thread.run("first from the sdk");
out.threadId = thread.id;
out.first = { final: first.finalResponse, items: first.items.map((i) => i.type), usage: first.usage };
const second = await thread.run("second from the sdk");
out.second = { final: second.finalResponse, threadId: thread.id };
const { events } = await thread.runStreamed("third from the sdk");
out.streamed = [];
for await (const ev of events) out.streamed.push(ev.type);
const structured = await thread.run("fourth from the sdk", {
  outputSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false },
});
out.structured = JSON.parse(structured.finalResponse);
try {
  await thread.run("fifth from the sdk");
  out.failure = "no error";
} catch (err) {
  out.failure = String(err.message);
}
console.log(JSON.stringify(out));
`

// The published Codex TypeScript SDK, unmodified, runs turns with agentd
// as its codex binary (codexPathOverride): it spawns agentd exec
// --experimental-json with its flags, reads the event stream, resumes the
// thread by id for the next turn, passes an output schema, and reports a
// failed turn as an error.
func TestCodexSDKDrivesAgentdExec(t *testing.T) {
	entry := codexSDK(t)
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.SSE(mockmodel.Created("resp_1"), mockmodel.ExecCommand("call_1", "echo sdk"),
			mockmodel.Completed("resp_1", mockmodel.Usage{Input: 10, Output: 2})),
		mockmodel.SSE(mockmodel.Created("resp_2"), mockmodel.Text("msg_1", "First reply."),
			mockmodel.Completed("resp_2", mockmodel.Usage{Input: 20, Cached: 5, Output: 3, Reasoning: 1})),
		mockmodel.Reply("resp_3", mockmodel.Text("msg_2", "Second reply.")),
		mockmodel.Reply("resp_4", mockmodel.Text("msg_3", "Third reply.")),
		mockmodel.Reply("resp_5", mockmodel.Text("msg_4", `{"ok":true}`)),
		mockmodel.Status(400, `{"error":{"message":"refused by the test","type":"invalid_request_error"}}`),
	)
	e := newExecEnv(t, m, "")
	script := filepath.Join(t.TempDir(), "drive.mjs")
	if err := os.WriteFile(script, []byte(sdkScriptBody), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(filteredEnv(), "HOME="+e.userHome, "SDK_ENTRY="+entry, "AGENTD_BIN="+binary,
		"USER_HOME="+e.userHome, "AGENTD_HOME_DIR="+e.home, "WORK_DIR="+e.cwd)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, so.String(), se.String())
	}
	var out struct {
		ThreadID string `json:"threadId"`
		First    struct {
			Final string           `json:"final"`
			Items []string         `json:"items"`
			Usage map[string]int64 `json:"usage"`
		} `json:"first"`
		Second struct {
			Final    string `json:"final"`
			ThreadID string `json:"threadId"`
		} `json:"second"`
		Streamed   []string       `json:"streamed"`
		Structured map[string]any `json:"structured"`
		Failure    string         `json:"failure"`
	}
	if err := json.Unmarshal(so.Bytes(), &out); err != nil {
		t.Fatalf("the script printed %q: %v\nstderr:\n%s", so.String(), err, se.String())
	}
	if len(out.ThreadID) != 36 || out.Second.ThreadID != out.ThreadID {
		t.Errorf("thread ids %q then %q", out.ThreadID, out.Second.ThreadID)
	}
	if out.First.Final != "First reply." || strings.Join(out.First.Items, ",") != "command_execution,agent_message" {
		t.Errorf("first turn: %+v", out.First)
	}
	if out.First.Usage["input_tokens"] != 30 || out.First.Usage["cached_input_tokens"] != 5 || out.First.Usage["output_tokens"] != 5 {
		t.Errorf("first turn's usage %v", out.First.Usage)
	}
	if out.Second.Final != "Second reply." {
		t.Errorf("second turn: %+v", out.Second)
	}
	if got := strings.Join(out.Streamed, ","); got != "thread.started,turn.started,item.completed,turn.completed" {
		t.Errorf("streamed events %s", got)
	}
	if out.Structured["ok"] != true {
		t.Errorf("structured output %v", out.Structured)
	}
	if !strings.Contains(out.Failure, "refused by the test") {
		t.Errorf("the failed turn surfaced as %q", out.Failure)
	}
	// The second turn resumed the thread: its request carries the first.
	reqs := m.Requests()
	if users := strings.Join(reqs[2].MessageTexts("user"), "\n"); !strings.Contains(users, "first from the sdk") {
		t.Errorf("the second turn's request lacks the first turn: %q", users)
	}
	if format, _ := path(reqs[4].JSON, "text", "format").(map[string]any); format["type"] != "json_schema" {
		t.Errorf("the structured turn's request has text.format %v", format)
	}
}
