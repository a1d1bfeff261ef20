package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func skill(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n# Body\nNot read by agentd.\n"
}

// tree is a user home, an agent home and a project with a sub-directory,
// all in one temporary directory (symbolic links resolved).
type tree struct{ userHome, home, project, sub string }

func newTree(t *testing.T) tree {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{userHome: base, home: filepath.Join(base, "agentd-home"), project: filepath.Join(base, "proj")}
	tr.sub = filepath.Join(tr.project, "sub")
	for _, d := range []string{tr.home, filepath.Join(tr.project, ".git"), tr.sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func (tr tree) options() Options { return Options{Home: tr.home, UserHome: tr.userHome} }

type found struct {
	Name  string
	Scope Scope
	Path  string
}

func names(r Result) []found {
	var out []found
	for _, s := range r.Skills {
		out = append(out, found{s.Name, s.Scope, s.Path})
	}
	return out
}

func TestDiscoverRootsAndOrder(t *testing.T) {
	tr := newTree(t)
	userSkill := write(t, filepath.Join(tr.home, "skills", "b-user", FileName), skill("beta", "user skill"))
	agentsUser := write(t, filepath.Join(tr.userHome, ".agents", "skills", "x", FileName), skill("alpha", "from ~/.agents"))
	repoRoot := write(t, filepath.Join(tr.project, ".agents", "skills", "r", FileName), skill("zed", "repo root"))
	repoSub := write(t, filepath.Join(tr.sub, ".agents", "skills", "s", FileName), skill("beta", "repo sub"))
	codexSub := write(t, filepath.Join(tr.sub, ".codex", "skills", "c", FileName), skill("codex-dir", "the cwd's .codex"))
	// The project root's .codex/skills is not a root for a cwd below it.
	write(t, filepath.Join(tr.project, ".codex", "skills", "no", FileName), skill("not-listed", "x"))
	system := write(t, filepath.Join(tr.home, "skills", ".system", "sys", FileName), skill("sys", "shipped by Codex"))
	// Dot directories are skipped, except as the system root itself.
	write(t, filepath.Join(tr.home, "skills", ".hidden", FileName), skill("hidden", "x"))

	got := names(Discover(tr.sub, tr.options()))
	want := []found{
		{"beta", ScopeRepo, repoSub},
		{"codex-dir", ScopeRepo, codexSub},
		{"zed", ScopeRepo, repoRoot},
		{"alpha", ScopeUser, agentsUser},
		{"beta", ScopeUser, userSkill},
		{"sys", ScopeSystem, system},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("skills for %s (-want +got):\n%s", tr.sub, diff)
	}
	// Outside the project: only the user's and the system's.
	if got := names(Discover(tr.userHome, tr.options())); len(got) != 3 {
		t.Fatalf("outside the project, want the 3 user and system skills, got %v", got)
	}
}

func TestDiscoverReportsBadFilesAndKeepsGoing(t *testing.T) {
	tr := newTree(t)
	root := filepath.Join(tr.home, "skills")
	good := write(t, filepath.Join(root, "good", FileName), "---\nname: good\ndescription: Does   good\n  things.\nmetadata:\n  short-description: short\nextra: ignored\n---\nbody\n")
	nameless := write(t, filepath.Join(root, "nameless", FileName), "---\ndescription: named by its directory\n---\n")
	cases := map[string]string{
		"nofm":     "# no front matter\n",
		"unclosed": "---\nname: x\ndescription: y\n",
		"empty":    "---\n---\n",
		"badyaml":  "---\nname: x\n  description: : y\n\t- z\n---\n",
		"notstr":   "---\nname: [a, b]\ndescription: y\n---\n",
		"nodesc":   "---\nname: nodesc\n---\n",
		"longname": "---\nname: " + strings.Repeat("n", MaxNameLen+1) + "\ndescription: y\n---\n",
		"longdesc": "---\nname: longdesc\ndescription: " + strings.Repeat("d", MaxDescriptionLen+1) + "\n---\n",
	}
	paths := map[string]string{}
	for dir, text := range cases {
		paths[dir] = write(t, filepath.Join(root, dir, FileName), text)
	}
	res := Discover(tr.sub, tr.options())
	if diff := cmp.Diff([]found{{"good", ScopeUser, good}, {"nameless", ScopeUser, nameless}}, names(res)); diff != "" {
		t.Fatalf("usable skills (-want +got):\n%s", diff)
	}
	g := res.Skills[0]
	if g.Description != "Does good things." || g.ShortDescription != "short" || !g.Enabled {
		t.Errorf("good skill = %+v; want its description on one line, its short description, enabled", g)
	}
	want := map[string]string{
		"nofm":     "missing YAML frontmatter delimited by ---",
		"unclosed": "missing YAML frontmatter delimited by ---",
		"empty":    "missing YAML frontmatter delimited by ---",
		"badyaml":  "invalid YAML: ",
		"notstr":   "invalid YAML: ",
		"nodesc":   "missing field `description`",
		"longname": "invalid name: exceeds maximum length of 64 characters",
		"longdesc": "invalid description: exceeds maximum length of 1024 characters",
	}
	got := map[string]string{}
	for _, e := range res.Errors {
		got[filepath.Base(filepath.Dir(e.Path))] = e.Message
		if e.Path != paths[filepath.Base(filepath.Dir(e.Path))] {
			t.Errorf("error path %s is not the file's", e.Path)
		}
	}
	for dir, prefix := range want {
		if !strings.HasPrefix(got[dir], prefix) {
			t.Errorf("%s: error %q, want one starting %q", dir, got[dir], prefix)
		}
	}
	if len(res.Errors) != len(want) {
		t.Errorf("got %d errors, want %d: %v", len(res.Errors), len(want), res.Errors)
	}
	for i := 1; i < len(res.Errors); i++ {
		if res.Errors[i-1].Path > res.Errors[i].Path {
			t.Errorf("errors not in path order: %v", res.Errors)
		}
	}
}

func TestDiscoverSymlinksDepthAndDuplicates(t *testing.T) {
	tr := newTree(t)
	elsewhere := filepath.Join(tr.userHome, "elsewhere")
	target := write(t, filepath.Join(elsewhere, "linked", FileName), skill("linked", "reached through a link"))
	root := filepath.Join(tr.home, "skills")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// Two links to one skill directory: one skill, at its real path.
	for _, name := range []string{"l1", "l2"} {
		if err := os.Symlink(filepath.Join(elsewhere, "linked"), filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A loop does not hang the search.
	if err := os.Symlink(root, filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	deep := write(t, filepath.Join(root, "1", "2", "3", "4", "5", "6", FileName), skill("deep", "six levels down"))
	write(t, filepath.Join(root, "1", "2", "3", "4", "5", "6", "7", FileName), skill("too-deep", "seven levels down"))
	got := names(Discover(tr.sub, tr.options()))
	want := []found{{"deep", ScopeUser, deep}, {"linked", ScopeUser, target}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestRules(t *testing.T) {
	tr := newTree(t)
	a := write(t, filepath.Join(tr.home, "skills", "a", FileName), skill("same", "a"))
	b := write(t, filepath.Join(tr.sub, ".agents", "skills", "b", FileName), skill("same", "b"))
	c := write(t, filepath.Join(tr.home, "skills", "c", FileName), skill("other", "c"))
	enabled := func(rules ...Rule) map[string]bool {
		o := tr.options()
		o.Rules = rules
		out := map[string]bool{}
		for _, s := range Discover(tr.sub, o).Skills {
			out[s.Path] = s.Enabled
		}
		return out
	}
	if got := enabled(); !got[a] || !got[b] || !got[c] {
		t.Fatalf("without rules every skill is enabled: %v", got)
	}
	got := enabled(Rule{Name: "same", Enabled: false})
	if got[a] || got[b] || !got[c] {
		t.Errorf("a rule by name disables every skill of that name only: %v", got)
	}
	got = enabled(Rule{Name: "same", Enabled: false}, Rule{Path: b, Enabled: true})
	if got[a] || !got[b] {
		t.Errorf("a later rule by path re-enables that skill: %v", got)
	}
	got = enabled(Rule{Path: c, Enabled: false}, Rule{Name: "other", Enabled: true})
	if !got[c] {
		t.Errorf("a later rule by name overrides an earlier one by path: %v", got)
	}
}

func TestInstructions(t *testing.T) {
	if text, _ := Instructions(nil); text != "" {
		t.Fatalf("no skills: %q, want nothing", text)
	}
	list := []Skill{
		{Name: "on", Description: "used", Path: "/s/on/SKILL.md", Enabled: true},
		{Name: "off", Description: "disabled", Path: "/s/off/SKILL.md"},
	}
	text, omitted := Instructions(list)
	if omitted != 0 || !strings.Contains(text, "- on: used (file: /s/on/SKILL.md)") || strings.Contains(text, "off") {
		t.Fatalf("instructions list the enabled skills with their paths only:\n%s", text)
	}
	if !strings.HasPrefix(text, "<skills_instructions>") || !strings.HasSuffix(text, "</skills_instructions>") {
		t.Errorf("instructions are not one <skills_instructions> block:\n%s", text)
	}
	var many []Skill
	for i := range 100 {
		many = append(many, Skill{Name: strings.Repeat("n", 60), Description: strings.Repeat("d", 1000), Path: "/p", Enabled: true, ShortDescription: string(rune('a' + i%26))})
	}
	text, omitted = Instructions(many)
	if omitted == 0 || len(text) > MaxInstructionBytes+2048 {
		t.Errorf("100 long skills: %d bytes, %d omitted; want the list bounded", len(text), omitted)
	}
}
