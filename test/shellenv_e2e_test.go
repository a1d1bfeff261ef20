package test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// shell_environment_policy shapes the environment of the commands the
// model runs, of thread/shellCommand and of command/exec, inspected from a
// real child's env: excluded names (globs, any case) and the default
// excludes are gone, set adds, CODEX_THREAD_ID names the thread, and the
// provider's key variable never reaches a command.
func TestShellEnvironmentPolicy(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "env"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "done"), mockmodel.Completed("resp_2", usage())),
	)
	cfg := strings.Replace(mockConfig(m, `approval_policy = "never"
sandbox_mode = "danger-full-access"
[shell_environment_policy]
exclude = ["e2e_drop_*"]
set = { E2E_ADDED = "from-set" }
`), "[model_providers.mock]\n", "[model_providers.mock]\nenv_key = \"E2E_PROVIDER_CRED\"\n", 1)
	d := Start(t, Options{ConfigTOML: cfg, Env: []string{
		"E2E_KEEP=kept", "E2E_DROP_ME=x", "E2E_DEPLOY_TOKEN=t", "E2E_PROVIDER_CRED=operator-secret",
	}})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})

	check := func(where, env string) {
		t.Helper()
		vars := map[string]string{}
		for _, line := range strings.Split(env, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[k] = v
			}
		}
		if vars["E2E_KEEP"] != "kept" || vars["E2E_ADDED"] != "from-set" || vars["PATH"] == "" {
			t.Fatalf("%s: kept or set variables missing:\n%s", where, env)
		}
		for _, gone := range []string{"E2E_DROP_ME", "E2E_DEPLOY_TOKEN", "E2E_PROVIDER_CRED"} {
			if _, ok := vars[gone]; ok {
				t.Fatalf("%s: %s reached the command", where, gone)
			}
		}
		if strings.Contains(env, "operator-secret") {
			t.Fatalf("%s: the provider key reached the command", where)
		}
	}

	runTurn(t, c, id, "show env")
	out, ok := m.Requests()[1].ToolOutput("call_1")
	if !ok {
		t.Fatal("no output for call_1")
	}
	check("model command", out)
	if !strings.Contains(out, "CODEX_THREAD_ID="+id+"\n") {
		t.Fatalf("model command: no CODEX_THREAD_ID=%s:\n%s", id, out)
	}

	c.Request("thread/shellCommand", map[string]any{"threadId": id, "command": "env"})
	msgs := collectUntil(c, isMethod("turn/completed"))
	i := slices.IndexFunc(msgs, isMethod("item/completed"))
	if i < 0 {
		t.Fatalf("no item: %v", methods(msgs))
	}
	check("thread/shellCommand", str(unmarshal(t, msgs[i].Params), "item", "aggregatedOutput"))

	res := unmarshal(t, WantResult(t, c.Call("command/exec", map[string]any{"command": []string{"env"}})))
	check("command/exec", str(res, "stdout"))
}
