package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// everythingVersion pins the MCP project's own test server.
const everythingVersion = "2026.8.31"

// everythingServer installs @modelcontextprotocol/server-everything with
// npm (once, into the user's cache directory) and returns its entry
// point; the test is skipped, saying why, when node or the registry
// cannot be had.
func everythingServer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: not installing @modelcontextprotocol/server-everything")
	}
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed: skipping the test against @modelcontextprotocol/server-everything", bin)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "agentd-test", "server-everything-"+everythingVersion)
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err == nil {
		return entry
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("no cache directory for npm: %v", err)
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "@modelcontextprotocol/server-everything@"+everythingVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm cannot install @modelcontextprotocol/server-everything@%s (no registry?): %v\n%s", everythingVersion, err, out)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Skipf("the installed package has no %s", entry)
	}
	return entry
}

// The reference's own test server, as a new user would configure it:
// started, listed with its tools, and called by the model (text, an
// image, progress reports) as mcpToolCall items.
func TestMCPServerEverything(t *testing.T) {
	entry := everythingServer(t)
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1",
			mockmodel.FunctionCall("call_echo", "mcp__everything__echo", `{"message":"hi there"}`),
			mockmodel.FunctionCall("call_sum", "mcp__everything__get_sum", `{"a":2,"b":3}`),
			mockmodel.FunctionCall("call_img", "mcp__everything__get_tiny_image", `{}`),
			mockmodel.FunctionCall("call_long", "mcp__everything__trigger_long_running_operation", `{"duration":0.6,"steps":3}`),
			mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	cfg := mockConfig(m, "") + "\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [" + `"` + entry + `", "stdio"]` + "\nstartup_timeout_sec = 30\n"
	d := Start(t, Options{ConfigTOML: cfg})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	msgs := runTurn(t, c, id, "exercise it")

	if it := mcpItem(t, msgs, "item/completed", "call_echo"); it["status"] != "completed" || str(it, "result", "content", 0, "text") != "Echo: hi there" || it["tool"] != "echo" {
		t.Errorf("echo %v", it)
	}
	if it := mcpItem(t, msgs, "item/completed", "call_sum"); it["status"] != "completed" || !strings.Contains(str(it, "result", "content", 0, "text"), "5") || it["tool"] != "get-sum" {
		t.Errorf("get-sum %v", it)
	}
	img := mcpItem(t, msgs, "item/completed", "call_img")
	var types []string
	for _, part := range path(img, "result", "content").([]any) {
		types = append(types, str(part, "type"))
	}
	if img["status"] != "completed" || !slices.Contains(types, "image") {
		t.Errorf("get-tiny-image %v", img)
	}
	if it := mcpItem(t, msgs, "item/completed", "call_long"); it["status"] != "completed" {
		t.Errorf("long operation %v", it)
	}
	progress := 0
	for _, msg := range msgs {
		if msg.Method == "item/mcpToolCall/progress" && str(unmarshal(t, msg.Params), "itemId") == "call_long" {
			validNotification(t, msg)
			progress++
		}
		if strings.HasPrefix(msg.Method, "item/") {
			validNotification(t, msg)
		}
	}
	if progress == 0 {
		t.Error("no progress from the long operation")
	}
	if out, _ := m.Requests()[1].ToolOutput("call_img"); !strings.Contains(out, `"type":"input_image"`) {
		t.Errorf("the model did not get the image: %.200s", out)
	}

	list := c.Call("mcpServerStatus/list", map[string]any{})
	var status struct {
		Data []struct {
			Name          string         `json:"name"`
			RuntimeStatus string         `json:"runtimeStatus"`
			Tools         map[string]any `json:"tools"`
			Resources     []any          `json:"resources"`
		} `json:"data"`
	}
	validResult(t, "mcpServerStatus/list", list, &status)
	if len(status.Data) != 1 || status.Data[0].RuntimeStatus != "connected" || status.Data[0].Tools["get-sum"] == nil || len(status.Data[0].Resources) == 0 {
		t.Errorf("status %.600s", list.Raw)
	}
}
