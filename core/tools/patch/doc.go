// Package patch implements the apply_patch tool: the patch language the
// model writes, a parser with line-precise errors, an all-or-nothing
// applier that writes every file atomically, a streaming preview of a patch
// the model is still writing, the turn's aggregated git-style diff, and the
// tool definitions the model sees.
//
// The package knows nothing of turns, approvals or the wire protocol: the
// turn loop in core parses with Parse, shows Plan's changes in an approval
// request, commits, and reports the Result. It must not import core.
package patch
