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

// writeDoc writes text at path, making its directory.
func writeDoc(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sourcesOf is a response's instructionSources.
func sourcesOf(t *testing.T, res map[string]any) []string {
	t.Helper()
	raw, ok := res["instructionSources"].([]any)
	if !ok {
		t.Fatalf("no instructionSources in %v", res)
	}
	var out []string
	for _, s := range raw {
		out = append(out, s.(string))
	}
	return out
}

// thread/resume of a stored thread after a restart, and thread/fork,
// list the AGENTS.md files of the thread's cwd in instructionSources, as
// thread/start does: found again by the new daemon from the thread's cwd.
func TestInstructionSourcesOnResumeAndFork(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one"), mockmodel.Completed("resp_1", usage())))
	home, tmp := shortTempDir(t), t.TempDir()
	homeDoc := writeDoc(t, filepath.Join(home, "AGENTS.md"), "Home rule.\n")
	proj := filepath.Join(tmp, "proj")
	rootDoc := writeDoc(t, filepath.Join(proj, "AGENTS.md"), "Root rule.\n")
	if err := os.Mkdir(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(proj, "sub")
	subDoc := writeDoc(t, filepath.Join(cwd, "AGENTS.md"), "Sub rule.\n")
	want := []string{homeDoc, rootDoc, subDoc}
	cfg := mockConfig(m, "")
	d := Start(t, Options{Home: home, ConfigTOML: cfg})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": cwd})))
	if got := sourcesOf(t, res); !slices.Equal(got, want) {
		t.Fatalf("thread/start's sources %v, want %v", got, want)
	}
	id := str(res, "thread", "id")
	c.ReadUntil(isMethod("thread/started"))
	runTurn(t, c, id, "hi")
	_, c2 := restarted(t, d, Options{})
	res = unmarshal(t, WantResult(t, c2.Call("thread/resume", map[string]any{"threadId": id})))
	if got := sourcesOf(t, res); !slices.Equal(got, want) {
		t.Fatalf("thread/resume's sources after a restart %v, want %v", got, want)
	}
	res = unmarshal(t, WantResult(t, c2.Call("thread/fork", map[string]any{"threadId": id})))
	if got := sourcesOf(t, res); !slices.Equal(got, want) {
		t.Fatalf("thread/fork's sources %v, want %v", got, want)
	}
	if str(res, "thread", "id") == id {
		t.Fatal("the fork has the source's id")
	}
}

// thread/start's baseInstructions replace agentd's own base instructions
// in the first developer message the model gets.
func TestBaseInstructionsParamReachesTheModel(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one"), mockmodel.Completed("resp_1", usage())),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "two"), mockmodel.Completed("resp_2", usage())),
	)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	runTurn(t, c, startThread(t, c, map[string]any{"cwd": t.TempDir()}), "hi")
	runTurn(t, c, startThread(t, c, map[string]any{"cwd": t.TempDir(), "baseInstructions": "Base from the client."}), "hi")
	reqs := m.Requests()
	builtin := reqs[0].MessageTexts("developer")
	if len(builtin) == 0 || builtin[0] == "Base from the client." {
		t.Fatalf("without the param: developer messages %q", builtin)
	}
	dev := reqs[1].MessageTexts("developer")
	if len(dev) == 0 || dev[0] != "Base from the client." || slices.Contains(dev, builtin[0]) {
		t.Fatalf("with baseInstructions: developer messages %q", dev)
	}
}

// project_root_markers decides where the project's AGENTS.md files start:
// a custom marker makes its directory the root; an empty list makes only
// the cwd count, even inside a git repository. Each thread/start reads
// config.toml as it is then.
func TestProjectRootMarkers(t *testing.T) {
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitDoc := writeDoc(t, filepath.Join(proj, "AGENTS.md"), "Git root.\n")
	marked := filepath.Join(proj, "inner")
	writeDoc(t, filepath.Join(marked, ".project-root"), "")
	markedDoc := writeDoc(t, filepath.Join(marked, "AGENTS.md"), "Marked root.\n")
	cwd := filepath.Join(marked, "cwd")
	cwdDoc := writeDoc(t, filepath.Join(cwd, "AGENTS.md"), "Cwd.\n")
	m := mockmodel.New(t)
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	file := filepath.Join(d.Home, "config.toml")
	c := d.Stdio()
	c.Initialize("e2e", nil)
	for _, tc := range []struct {
		markers string
		want    []string
	}{
		{"", []string{gitDoc, markedDoc, cwdDoc}},
		{`project_root_markers = [".hg", ".project-root"]`, []string{markedDoc, cwdDoc}},
		{`project_root_markers = []`, []string{cwdDoc}},
	} {
		if err := os.WriteFile(file, []byte(mockConfig(m, tc.markers)), 0o600); err != nil {
			t.Fatal(err)
		}
		res := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": cwd})))
		c.ReadUntil(isMethod("thread/started"))
		if got := sourcesOf(t, res); !slices.Equal(got, tc.want) {
			t.Fatalf("%q: sources %v, want %v", tc.markers, got, tc.want)
		}
	}
}

// An AGENTS.md that is not text, and one past project_doc_max_bytes (the
// home's, and a project's), are used as far as they can be, each with a
// warning in the log naming it; the thread starts and its turn runs.
func TestMalformedAgentsMDEndToEnd(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one"), mockmodel.Completed("resp_1", usage())))
	home, tmp := shortTempDir(t), t.TempDir()
	homeDoc := writeDoc(t, filepath.Join(home, "AGENTS.md"), strings.Repeat("h", 100))
	proj := filepath.Join(tmp, "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	binDoc := writeDoc(t, filepath.Join(proj, "AGENTS.md"), "bin\x00\xff\xfe\n")
	cwd := filepath.Join(proj, "sub")
	bigDoc := writeDoc(t, filepath.Join(cwd, "AGENTS.md"), strings.Repeat("b", 100))
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, "project_doc_max_bytes = 40\n")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	res := unmarshal(t, WantResult(t, c.Call("thread/start", map[string]any{"cwd": cwd})))
	if got, want := sourcesOf(t, res), []string{homeDoc, binDoc, bigDoc}; !slices.Equal(got, want) {
		t.Fatalf("sources %v, want %v", got, want)
	}
	id := str(res, "thread", "id")
	c.ReadUntil(isMethod("thread/started"))
	if msgs := runTurn(t, c, id, "hi"); str(unmarshal(t, msgs[len(msgs)-1].Params), "turn", "status") != "completed" {
		t.Fatalf("the turn did not complete: %s", msgs[len(msgs)-1].Raw)
	}
	for _, w := range []struct{ file, text string }{
		{homeDoc, "only the first 40"},
		{binDoc, "invalid UTF-8"},
		{bigDoc, "only the first 33"},
	} {
		d.WaitLog(func(l LogLine) bool {
			return l.Level == "warn" && strings.HasPrefix(l.Msg, "project instructions: ") &&
				strings.Contains(l.Msg, w.file) && strings.Contains(l.Msg, w.text) && l.Str("cwd") == cwd
		})
	}
	user := m.Requests()[0].MessageTexts("user")[0]
	want := "<INSTRUCTIONS>\n" + strings.Repeat("h", 40) + "\n\n--- project-doc ---\n\nbin\x00\uFFFD\n\n\n" + strings.Repeat("b", 33) + "\n</INSTRUCTIONS>"
	if !strings.Contains(user, want) {
		t.Fatalf("the model got %q, want it to contain %q", user, want)
	}
}
