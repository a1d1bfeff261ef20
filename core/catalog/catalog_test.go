package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	c := Builtin()
	for _, tc := range []struct {
		name string
		slug string
		ok   bool
	}{
		{"gpt-5.5", "gpt-5.5", true},
		{"gpt-5.5-2026-01-01", "gpt-5.5", true}, // dated variant: longest prefix
		{"openai/gpt-5.5", "gpt-5.5", true},     // namespaced
		{"gpt-6.1-sol", "gpt-6.1-sol", true},    // not gpt-6-sol
		{"GPT-5.5", "", false},                  // case-sensitive
		{"gpt-5", "", false},                    // a prefix of a slug is not a match
		{"mock-model", "", false},
		{"", "", false},
	} {
		m, ok := c.Lookup(tc.name)
		if ok != tc.ok || m.Slug != tc.slug {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.name, m.Slug, ok, tc.slug, tc.ok)
		}
	}
	var nilCat *Catalog
	if _, ok := nilCat.Lookup("gpt-5.5"); ok {
		t.Error("a nil catalogue knows a model")
	}
}

// The family follows the catalogue and the features in the reference's
// order.
func TestTools(t *testing.T) {
	c, err := Parse([]byte(`{"models":[
		{"slug":"m-shell","shell_type":"default","apply_patch_tool_type":"function"},
		{"slug":"m-local","shell_type":"local","apply_patch_tool_type":null},
		{"slug":"m-cmd","shell_type":"shell_command","apply_patch_tool_type":"freeform","context_window":1000},
		{"slug":"m-off","shell_type":"disabled"},
		{"slug":"m-plain"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	off := map[string]bool{FeatureUnifiedExec: false}
	for _, tc := range []struct {
		model    string
		features map[string]bool
		want     Tools
	}{
		// unified_exec is on by default: exec_command whatever the entry.
		{"m-shell", nil, Tools{ShellUnifiedExec, ApplyPatchFunction, true}},
		{"m-cmd", nil, Tools{ShellUnifiedExec, ApplyPatchFreeform, true}},
		{"unknown", nil, Tools{ShellUnifiedExec, ApplyPatchNone, false}},
		// Off: the entry's family.
		{"m-shell", off, Tools{ShellDefault, ApplyPatchFunction, true}},
		{"m-local", off, Tools{ShellLocal, ApplyPatchNone, true}},
		{"m-cmd", off, Tools{ShellCommand, ApplyPatchFreeform, true}},
		{"m-plain", off, Tools{ShellDefault, ApplyPatchNone, true}},
		{"unknown", off, Tools{ShellUnifiedExec, ApplyPatchNone, false}},
		// disabled wins over unified_exec; shell_tool off over everything.
		{"m-off", nil, Tools{ShellDisabled, ApplyPatchNone, true}},
		{"m-cmd", map[string]bool{FeatureShellTool: false}, Tools{ShellDisabled, ApplyPatchFreeform, true}},
		// apply_patch_freeform fills in a missing form only.
		{"unknown", map[string]bool{FeatureApplyPatchFreeform: true}, Tools{ShellUnifiedExec, ApplyPatchFreeform, false}},
		{"m-shell", map[string]bool{FeatureApplyPatchFreeform: true}, Tools{ShellUnifiedExec, ApplyPatchFunction, true}},
	} {
		if got := c.Tools(tc.model, tc.features); got != tc.want {
			t.Errorf("Tools(%q, %v) = %+v, want %+v", tc.model, tc.features, got, tc.want)
		}
	}
	if got := Builtin().Tools("gpt-5.5", off); got != (Tools{ShellCommand, ApplyPatchFreeform, true}) {
		t.Errorf("built-in gpt-5.5 without unified_exec = %+v", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[]`, "not a JSON model catalogue"},
		{`{}`, `missing field "models"`},
		{`{"models":[{"shell_type":"default"}]}`, `models[0]: missing "slug"`},
		{`{"models":[{"slug":"a","shell_type":"bash"}]}`, `unknown shell_type "bash"`},
		{`{"models":[{"slug":"a","apply_patch_tool_type":"json"}]}`, `unknown apply_patch_tool_type "json"`},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "models.json")
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "read model catalogue") {
		t.Fatalf("Load(missing) = %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"models":[{"slug":"x","shell_type":"local"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := c.Lookup("x"); !ok || m.Shell != ShellLocal {
		t.Fatalf("Lookup(x) = %+v, %v", m, ok)
	}
	if _, ok := c.Lookup("gpt-5.5"); ok {
		t.Fatal("a loaded catalogue replaces the built-in one")
	}
}
