package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// skillsTree is a user home, an agent home and a git project, each in a
// temporary directory (symbolic links resolved, as skill paths are).
type skillsTree struct{ userHome, home, project string }

func newSkillsTree(t *testing.T) skillsTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(shortTempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := skillsTree{userHome: filepath.Join(base, "user"), home: filepath.Join(base, "home"), project: filepath.Join(base, "proj")}
	for _, d := range []string{tr.userHome, tr.home, filepath.Join(tr.project, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func writeSkill(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// skillsConfig is config.toml's [[skills.config]].
func skillsConfig(t *testing.T, home string) []map[string]any {
	t.Helper()
	var doc struct {
		Skills struct {
			Config []map[string]any `toml:"config"`
		} `toml:"skills"`
	}
	if err := toml.Unmarshal([]byte(readFile(t, filepath.Join(home, "config.toml"))), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Skills.Config
}

// skillsByPath decodes skills/list's single entry: each skill by path,
// and the errors by path.
func skillsByPath(t *testing.T, raw map[string]any) (map[string]map[string]any, map[string]string) {
	t.Helper()
	data := path(raw, "data").([]any)
	if len(data) != 1 {
		t.Fatalf("want one entry, got %v", raw)
	}
	entry := data[0].(map[string]any)
	skills := map[string]map[string]any{}
	for _, s := range entry["skills"].([]any) {
		m := s.(map[string]any)
		skills[m["path"].(string)] = m
	}
	errs := map[string]string{}
	for _, e := range entry["errors"].([]any) {
		m := e.(map[string]any)
		errs[m["path"].(string)] = m["message"].(string)
	}
	return skills, errs
}

// Skills in the home, in ~/.agents/skills and in the project are listed
// per cwd with their scope; a malformed SKILL.md is one of the errors, not
// a failure; the model is given the enabled skills (name, description,
// path) in a developer message; skills/config/write disables a skill in
// config.toml for skills/list and new threads; and a skill added on disk
// shows in the next thread without a restart.
func TestSkillsDiscoveryListAndModel(t *testing.T) {
	tr := newSkillsTree(t)
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "one")), mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "two")))

	homeSkill := writeSkill(t, filepath.Join(tr.home, "skills", "deploy", "SKILL.md"),
		"---\nname: deploy\ndescription: Ship the service\n  to production.\nmetadata:\n  short-description: Ship it\n---\n# Deploy\nSecret body text.\n")
	userSkill := writeSkill(t, filepath.Join(tr.userHome, ".agents", "skills", "notes", "SKILL.md"),
		"---\nname: notes\ndescription: Keep release notes.\n---\nbody\n")
	repoSkill := writeSkill(t, filepath.Join(tr.project, ".agents", "skills", "lint", "SKILL.md"),
		"---\nname: lint\ndescription: Run the project's linters.\n---\nbody\n")
	noFrontMatter := writeSkill(t, filepath.Join(tr.home, "skills", "broken", "SKILL.md"), "# just markdown\n")
	badYAML := writeSkill(t, filepath.Join(tr.project, ".agents", "skills", "bad", "SKILL.md"), "---\nname: [unclosed\ndescription: x\n---\n")
	noDescription := writeSkill(t, filepath.Join(tr.home, "skills", "nodesc", "SKILL.md"), "---\nname: nodesc\n---\n")

	d := Start(t, Options{Home: tr.home, ConfigTOML: mockConfig(m, ""), Env: []string{"HOME=" + tr.userHome}})
	c := d.Stdio()
	c.Initialize("e2e", nil)

	list := func() (map[string]map[string]any, map[string]string) {
		t.Helper()
		return skillsByPath(t, unmarshal(t, WantResult(t, c.Call("skills/list", map[string]any{"cwds": []string{tr.project}}))))
	}
	skills, errs := list()
	want := map[string]string{homeSkill: "user", userSkill: "user", repoSkill: "repo"}
	if len(skills) != len(want) {
		t.Fatalf("skills %v, want %v", skills, want)
	}
	for p, scope := range want {
		s := skills[p]
		if s == nil || s["scope"] != scope || s["enabled"] != true {
			t.Errorf("skill %s = %v, want scope %s, enabled", p, s, scope)
		}
	}
	if s := skills[homeSkill]; s["name"] != "deploy" || s["description"] != "Ship the service to production." || s["shortDescription"] != "Ship it" {
		t.Errorf("deploy = %v", s)
	}
	wantErrs := map[string]string{
		noFrontMatter: "missing YAML frontmatter delimited by ---",
		badYAML:       "invalid YAML: ",
		noDescription: "missing field `description`",
	}
	for p, prefix := range wantErrs {
		if !strings.HasPrefix(errs[p], prefix) {
			t.Errorf("error for %s = %q, want it to start with %q", p, errs[p], prefix)
		}
	}
	if len(errs) != len(wantErrs) {
		t.Errorf("errors %v, want %d", errs, len(wantErrs))
	}

	// The model is told about the enabled skills, not given their bodies.
	id := startThread(t, c, map[string]any{"cwd": tr.project})
	runTurn(t, c, id, "hi")
	skillsText := func(req mockmodel.Request) string {
		for _, text := range req.MessageTexts("developer") {
			if strings.HasPrefix(text, "<skills_instructions>") {
				return text
			}
		}
		return ""
	}
	text := skillsText(m.Requests()[0])
	for _, line := range []string{
		"- deploy: Ship the service to production. (file: " + homeSkill + ")",
		"- notes: Keep release notes. (file: " + userSkill + ")",
		"- lint: Run the project's linters. (file: " + repoSkill + ")",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("the model's skill list lacks %q:\n%s", line, text)
		}
	}
	if strings.Contains(text, "Secret body text") || strings.Contains(text, "nodesc") {
		t.Errorf("the skill list holds a body or an unusable skill:\n%s", text)
	}

	// Disabled by name: written to config.toml, listed as disabled, left
	// out for a new thread. A skill added meanwhile is offered.
	res := unmarshal(t, WantResult(t, c.Call("skills/config/write", map[string]any{"name": "notes", "enabled": false})))
	if res["effectiveEnabled"] != false {
		t.Fatalf("skills/config/write = %v", res)
	}
	if got := skillsConfig(t, tr.home); len(got) != 1 || got[0]["name"] != "notes" || got[0]["enabled"] != false {
		t.Fatalf("skills.config after the write: %v", got)
	}
	skills, _ = list()
	if skills[userSkill]["enabled"] != false || skills[homeSkill]["enabled"] != true {
		t.Fatalf("after disabling notes: %v", skills)
	}
	added := writeSkill(t, filepath.Join(tr.project, ".agents", "skills", "added", "SKILL.md"), "---\nname: added\ndescription: Added while running.\n---\n")
	id = startThread(t, c, map[string]any{"cwd": tr.project})
	runTurn(t, c, id, "again")
	text = skillsText(m.Requests()[1])
	if strings.Contains(text, "- notes:") || !strings.Contains(text, "- added: Added while running. (file: "+added+")") {
		t.Fatalf("the second thread's skill list:\n%s", text)
	}

	// Enabling removes the entry again.
	res = unmarshal(t, WantResult(t, c.Call("skills/config/write", map[string]any{"name": "notes", "enabled": true})))
	if got := skillsConfig(t, tr.home); res["effectiveEnabled"] != true || len(got) != 0 {
		t.Fatalf("enabling notes: %v, skills.config %v", res, got)
	}
}

// skills/config/write by path, and its refusals: no selector or both,
// a relative path.
func TestSkillsConfigWriteByPathAndErrors(t *testing.T) {
	tr := newSkillsTree(t)
	skill := writeSkill(t, filepath.Join(tr.home, "skills", "one", "SKILL.md"), "---\nname: one\ndescription: The one.\n---\n")
	d := Start(t, Options{Home: tr.home, Env: []string{"HOME=" + tr.userHome}, ConfigTOML: "# my settings\nmodel = \"m\"\n"})
	c := d.Stdio()
	c.Initialize("e2e", nil)

	WantError(t, c.Call("skills/config/write", map[string]any{"enabled": false}), -32602, "skills/config/write requires exactly one of path or name")
	WantError(t, c.Call("skills/config/write", map[string]any{"enabled": false, "name": "one", "path": skill}), -32602, "skills/config/write requires exactly one of path or name")
	WantError(t, c.Call("skills/config/write", map[string]any{"enabled": false, "path": "rel/SKILL.md"}), -32600, "")
	WantError(t, c.Call("skills/config/write", map[string]any{"path": skill}), -32600, "")

	for range 2 { // written once, whatever the repeats
		res := unmarshal(t, WantResult(t, c.Call("skills/config/write", map[string]any{"path": skill, "enabled": false})))
		if res["effectiveEnabled"] != false {
			t.Fatalf("disable by path: %v", res)
		}
	}
	if got := skillsConfig(t, tr.home); len(got) != 1 || got[0]["path"] != skill || got[0]["enabled"] != false {
		t.Fatalf("skills.config after two writes: %v", got)
	}
	if cfg := readFile(t, filepath.Join(tr.home, "config.toml")); !strings.Contains(cfg, "# my settings\nmodel = \"m\"\n") {
		t.Fatalf("the rest of config.toml was not kept as it was:\n%s", cfg)
	}
	skills, _ := skillsByPath(t, unmarshal(t, WantResult(t, c.Call("skills/list", map[string]any{"cwds": []string{tr.project}}))))
	if skills[skill]["enabled"] != false {
		t.Fatalf("skills/list after disabling by path: %v", skills)
	}
	res := unmarshal(t, WantResult(t, c.Call("skills/config/write", map[string]any{"path": skill, "enabled": true})))
	if res["effectiveEnabled"] != true {
		t.Fatalf("enable by path: %v", res)
	}
}
