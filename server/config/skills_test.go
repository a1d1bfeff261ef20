package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentd-dev/agentd/core/skills"
)

// [[skills.config]] becomes the skill rules, in order; an entry without
// enabled, with both selectors or neither, or with a relative path is
// skipped with a warning, never an error (a skill setting never stops
// the daemon). The inline form (as agentd writes it) reads the same.
func TestSkillsConfigRules(t *testing.T) {
	home := writeConfig(t, `
skills.config = [{ name = "inline", enabled = false }]
`)
	cfg, err := Load(Options{Home: home, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]skills.Rule{{Name: "inline"}}, cfg.SkillRules); diff != "" {
		t.Fatalf("inline form (-want +got):\n%s", diff)
	}

	home = writeConfig(t, `
[[skills.config]]
path = "/abs/one/SKILL.md"
enabled = false

[[skills.config]]
name = " two "
enabled = true

[[skills.config]]
name = "no-enabled"

[[skills.config]]
name = "both"
path = "/abs/x/SKILL.md"
enabled = false

[[skills.config]]
enabled = false

[[skills.config]]
path = "rel/SKILL.md"
enabled = false
`)
	cfg, err = Load(Options{Home: home, Getenv: env(), Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []skills.Rule{{Path: "/abs/one/SKILL.md"}, {Name: "two", Enabled: true}}
	if diff := cmp.Diff(want, cfg.SkillRules); diff != "" {
		t.Fatalf("rules (-want +got):\n%s", diff)
	}
	var warned []string
	for _, w := range cfg.Warnings {
		if strings.HasPrefix(w.Summary, "Ignoring skills.config entry") {
			warned = append(warned, w.Summary)
		}
	}
	if len(warned) != 4 {
		t.Fatalf("want 4 warnings for the bad entries, got %q", warned)
	}
}
