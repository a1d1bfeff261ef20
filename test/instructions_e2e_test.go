package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// The model gets the user's AGENTS.md files as Codex frames them (the
// home's, then the project's from the root down to the cwd, overrides and
// fallbacks, within project_doc_max_bytes), in the message with the
// environment context; thread/start lists them in instructionSources.
// developer_instructions and model_instructions_file reach it too. Files
// are read for each new thread, without a restart.
func TestAgentsMDAndInstructionsReachTheModel(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one")), mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "two")))
	home, tmp := shortTempDir(t), t.TempDir()
	write := func(path, text string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	homeDoc := write(filepath.Join(home, "AGENTS.md"), "Home rule.\n")
	proj := filepath.Join(tmp, "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	rootDoc := write(filepath.Join(proj, "AGENTS.md"), "Root rule.\n")
	write(filepath.Join(proj, "sub", "AGENTS.md"), "Shadowed.\n")
	subDoc := write(filepath.Join(proj, "sub", "AGENTS.override.md"), "Sub override.\n")
	cwd := filepath.Join(proj, "sub", "deep")
	write(filepath.Join(cwd, "NOTES.md"), "Dropped: over the budget.\n")
	modelFile := write(filepath.Join(tmp, "base.md"), "  Base from a file.  \n")
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, `developer_instructions = "Developer rule."
model_instructions_file = "`+modelFile+`"
project_doc_max_bytes = 20
project_doc_fallback_filenames = ["NOTES.md"]
`)})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": cwd})))
	var sources []string
	for _, s := range path(res, "instructionSources").([]any) {
		sources = append(sources, s.(string))
	}
	if want := []string{homeDoc, rootDoc, subDoc}; !slices.Equal(sources, want) {
		t.Fatalf("instructionSources %v, want %v", sources, want)
	}
	id := str(res, "thread", "id")
	c.ReadUntil(isMethod("thread/started"))
	runTurn(t, c, id, "hi")

	req := m.Requests()[0]
	dev := req.MessageTexts("developer")
	if len(dev) != 2 || dev[0] != "Base from a file." || dev[1] != "Developer rule." {
		t.Fatalf("developer messages %q", dev)
	}
	users := req.MessageTexts("user")
	want := "# AGENTS.md instructions for " + cwd + "\n\n<INSTRUCTIONS>\nHome rule.\n\n--- project-doc ---\n\nRoot rule.\n\n\nSub overr\n</INSTRUCTIONS>"
	if len(users) != 2 || !strings.HasPrefix(users[0], want) || !strings.Contains(users[0], "<environment_context>") || users[1] != "hi" {
		t.Fatalf("user messages %q\nwant the first to start with %q", users, want)
	}

	// A new thread reads the files again.
	write(homeDoc, "Home rule, edited.\n")
	res = unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": tmp, "developerInstructions": "Thread rule."})))
	if got := path(res, "instructionSources").([]any); len(got) != 1 || got[0] != homeDoc {
		t.Fatalf("second thread's sources %v", got)
	}
	c.ReadUntil(isMethod("thread/started"))
	runTurn(t, c, str(res, "thread", "id"), "again")
	req = m.Requests()[1]
	if users := req.MessageTexts("user"); !strings.HasPrefix(users[0], "# AGENTS.md instructions\n\n<INSTRUCTIONS>\nHome rule, edited.\n</INSTRUCTIONS>") {
		t.Fatalf("home-only framing %q", users[0])
	}
	if dev := req.MessageTexts("developer"); dev[1] != "Thread rule." {
		t.Fatalf("thread's developerInstructions: %q", dev)
	}
}
