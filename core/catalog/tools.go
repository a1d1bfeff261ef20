package catalog

// Tools is what one model is offered.
type Tools struct {
	Shell      ShellType
	ApplyPatch ApplyPatchType
	// SearchImages: the hosted web search may return images as well as
	// text (search_content_types), which the reference asks for a model
	// of its catalogue and not for an unknown one.
	SearchImages bool
}

// Default is what a session offers when it has no catalogue:
// exec_command/write_stdin and the freeform apply_patch.
var Default = Tools{Shell: ShellUnifiedExec, ApplyPatch: ApplyPatchFreeform, SearchImages: true}

// The feature flags ([features], --enable/--disable) that change what is
// offered.
const (
	// FeatureShellTool, on by default, offers a shell tool at all.
	FeatureShellTool = "shell_tool"
	// FeatureUnifiedExec, on by default, offers exec_command/write_stdin
	// whatever family the model names; off, the model's own family.
	FeatureUnifiedExec = "unified_exec"
	// FeatureApplyPatchFreeform, off by default, offers the freeform
	// apply_patch to a model whose entry names no apply_patch form.
	FeatureApplyPatchFreeform = "apply_patch_freeform"
)

// Tools resolves what model is offered, with features (the flags that
// were set, by name; an absent flag has its default) applied in the
// reference's order: shell_tool off disables the shell tool; a model
// whose entry says "disabled" gets none; unified_exec (on unless turned
// off) gives exec_command; otherwise the entry's family. A model the
// catalogue does not know gets Fallback.
func (c *Catalog) Tools(model string, features map[string]bool) Tools {
	m, ok := c.Lookup(model)
	if !ok {
		m = Fallback
	}
	t := Tools{Shell: m.Shell, ApplyPatch: m.ApplyPatch, SearchImages: ok}
	switch {
	case !enabled(features, FeatureShellTool, true):
		t.Shell = ShellDisabled
	case m.Shell == ShellDisabled:
	case enabled(features, FeatureUnifiedExec, true):
		t.Shell = ShellUnifiedExec
	}
	if t.ApplyPatch == ApplyPatchNone && enabled(features, FeatureApplyPatchFreeform, false) {
		t.ApplyPatch = ApplyPatchFreeform
	}
	return t
}

func enabled(features map[string]bool, name string, def bool) bool {
	if v, ok := features[name]; ok {
		return v
	}
	return def
}
