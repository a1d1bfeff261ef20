package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// ShellType is a model's shell tool family, by the reference's
// catalogue names.
type ShellType string

const (
	// ShellDefault is the "shell" function: argv as an array of strings.
	ShellDefault ShellType = "default"
	// ShellLocal is the hosted "local_shell" tool (local_shell_call items).
	ShellLocal ShellType = "local"
	// ShellUnifiedExec is exec_command and write_stdin.
	ShellUnifiedExec ShellType = "unified_exec"
	// ShellCommand is the "shell_command" function: one script string run
	// through the user's shell.
	ShellCommand ShellType = "shell_command"
	// ShellDisabled offers no shell tool.
	ShellDisabled ShellType = "disabled"
)

// ApplyPatchType is the form of the apply_patch tool a model is offered.
type ApplyPatchType string

const (
	// ApplyPatchNone offers no apply_patch tool.
	ApplyPatchNone ApplyPatchType = ""
	// ApplyPatchFreeform is the custom (freeform, grammar) tool.
	ApplyPatchFreeform ApplyPatchType = "freeform"
	// ApplyPatchFunction is a JSON function with one "input" string.
	ApplyPatchFunction ApplyPatchType = "function"
)

// Model is one catalogue entry.
type Model struct {
	Slug       string
	Shell      ShellType
	ApplyPatch ApplyPatchType
}

// Catalog is a set of known models. The zero value knows none.
type Catalog struct {
	models map[string]Model
}

// Fallback is what a model missing from the catalogue gets, as the
// reference's fallback metadata: exec_command and no apply_patch (unless
// the apply_patch_freeform feature asks for it).
var Fallback = Model{Shell: ShellUnifiedExec, ApplyPatch: ApplyPatchNone}

// builtinSlugs are the models of the reference's bundled catalogue
// (0.169): all of them shell_command and freeform apply_patch.
var builtinSlugs = []string{
	"gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra", "gpt-6-sol", "gpt-6-luna",
	"gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna",
	"gpt-daybreak-blue-latest", "gpt-daybreak-red-latest", "gpt-5.5", "codex-auto-review",
}

// Builtin returns the catalogue the reference ships with.
func Builtin() *Catalog {
	c := &Catalog{models: make(map[string]Model, len(builtinSlugs))}
	for _, s := range builtinSlugs {
		c.models[s] = Model{Slug: s, Shell: ShellCommand, ApplyPatch: ApplyPatchFreeform}
	}
	return c
}

// Lookup finds the entry for a model name as the reference does: the
// exact slug, else the longest slug the name starts with (a dated
// variant such as "gpt-5.5-2026-01-01"), else the same for the part after
// the last "/" (a provider's namespaced name such as "openai/gpt-5.5").
// Names are case-sensitive.
func (c *Catalog) Lookup(name string) (Model, bool) {
	if c == nil || name == "" {
		return Model{}, false
	}
	if m, ok := c.longestPrefix(name); ok {
		return m, true
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 && i+1 < len(name) {
		return c.longestPrefix(name[i+1:])
	}
	return Model{}, false
}

func (c *Catalog) longestPrefix(name string) (Model, bool) {
	if m, ok := c.models[name]; ok {
		return m, true
	}
	var best Model
	found := false
	for slug, m := range c.models {
		if strings.HasPrefix(name, slug) && len(slug) > len(best.Slug) {
			best, found = m, true
		}
	}
	return best, found
}

// fileModel is one entry of a catalogue file; other fields are ignored.
type fileModel struct {
	Slug       *string         `json:"slug"`
	ShellType  *ShellType      `json:"shell_type"`
	ApplyPatch *ApplyPatchType `json:"apply_patch_tool_type"`
}

// Parse reads a catalogue in the reference's format: {"models": [{"slug":
// …, "shell_type": …, "apply_patch_tool_type": …}, …]}; other fields are
// ignored. shell_type defaults to "default"; apply_patch_tool_type may be
// null or absent (no apply_patch).
func Parse(data []byte) (*Catalog, error) {
	var f struct {
		Models *[]fileModel `json:"models"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a JSON model catalogue: %w", err)
	}
	if f.Models == nil {
		return nil, fmt.Errorf(`missing field "models"`)
	}
	c := &Catalog{models: make(map[string]Model, len(*f.Models))}
	for i, fm := range *f.Models {
		if fm.Slug == nil || *fm.Slug == "" {
			return nil, fmt.Errorf("models[%d]: missing \"slug\"", i)
		}
		m := Model{Slug: *fm.Slug, Shell: ShellDefault}
		if fm.ShellType != nil {
			switch st := *fm.ShellType; st {
			case ShellDefault, ShellLocal, ShellUnifiedExec, ShellCommand, ShellDisabled:
				m.Shell = st
			default:
				return nil, fmt.Errorf("models[%d] (%s): unknown shell_type %q, expected one of default, local, shell_command, unified_exec, disabled", i, m.Slug, st)
			}
		}
		if fm.ApplyPatch != nil {
			switch at := *fm.ApplyPatch; at {
			case ApplyPatchFreeform, ApplyPatchFunction:
				m.ApplyPatch = at
			default:
				return nil, fmt.Errorf("models[%d] (%s): unknown apply_patch_tool_type %q, expected freeform or function", i, m.Slug, at)
			}
		}
		c.models[m.Slug] = m
	}
	return c, nil
}

// Load reads a catalogue file (model_catalog_json).
func Load(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model catalogue: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("model catalogue %s: %w", path, err)
	}
	return c, nil
}
