package test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
	"github.com/agentd-dev/agentd/test/proc"
)

// Children a command leaves running in the background (in its process
// group) do not outlive agentd: after stdin EOF the daemon exits and
// kills what command/exec and the model's commands left behind.
func TestNoOrphanAfterStdinEOF(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "sleep 341 >/dev/null 2>&1 & echo pid=$!"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "started"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)

	res := unmarshal(t, WantResult(t, c.Call("command/exec", map[string]any{"command": []string{"sh", "-c", "sleep 342 >/dev/null 2>&1 & echo $!"}})))
	execPid, err := strconv.Atoi(strings.TrimSpace(str(res, "stdout")))
	if err != nil || !proc.Alive(execPid) {
		t.Fatalf("background child of command/exec: %q %v", str(res, "stdout"), err)
	}

	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "start something")
	out, _ := m.Requests()[1].ToolOutput("call_1")
	_, after, ok := strings.Cut(out, "pid=")
	toolPid, err := strconv.Atoi(strings.TrimSpace(after))
	if !ok || err != nil || !proc.Alive(toolPid) {
		t.Fatalf("background child of the model's command: %q", out)
	}

	d.CloseStdin()
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	waitGone(t, execPid)
	waitGone(t, toolPid)
}
