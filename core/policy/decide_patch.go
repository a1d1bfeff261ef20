package policy

import (
	"fmt"
	"path/filepath"
)

// PatchAction is what to do with a patch.
type PatchAction string

const (
	// PatchApply applies the patch without asking.
	PatchApply PatchAction = "apply"
	// PatchAsk asks the user first.
	PatchAsk PatchAction = "ask"
	// PatchReject refuses the patch; Reject says why, for the model.
	PatchReject PatchAction = "reject"
)

// PatchDecision says what to do with a patch.
type PatchDecision struct {
	Action PatchAction
	// Reject explains a refusal to the model.
	Reject string
	// GrantRoot, with PatchAsk, is a directory the user could allow for
	// the rest of the session: the common parent of the paths outside the
	// writable roots.
	GrantRoot string
}

// DecidePatch decides whether a patch touching paths (absolute) applies,
// asks or is refused:
//
//	policy               inside writable roots   outside
//	untrusted            ask                     ask
//	on-request           apply                   ask
//	on-failure           apply                   ask
//	never                apply                   refused
//
// danger-full-access and external sandboxes apply everything (untrusted
// still asks). Paths under a root approved for the session count as
// inside. A path inside a .git directory is never inside a writable root.
func DecidePatch(p ApprovalPolicy, sp SandboxPolicy, paths []string, writableRoots []string, approved *SessionApprovals) PatchDecision {
	if p == ApprovalUntrusted {
		if approved.PathsApproved(paths) {
			return PatchDecision{Action: PatchApply}
		}
		return PatchDecision{Action: PatchAsk, GrantRoot: commonDir(paths)}
	}
	if !sp.Sandboxed() {
		return PatchDecision{Action: PatchApply}
	}
	var outside []string
	for _, path := range paths {
		if !filepath.IsAbs(path) {
			return PatchDecision{Action: PatchReject, Reject: fmt.Sprintf("patch refused: path %q is not absolute", path)}
		}
		if !IsWritable(path, writableRoots) && !approved.PathsApproved([]string{path}) {
			outside = append(outside, path)
		}
	}
	if len(outside) == 0 {
		return PatchDecision{Action: PatchApply}
	}
	switch p {
	case ApprovalOnRequest, ApprovalOnFailure:
		return PatchDecision{Action: PatchAsk, GrantRoot: commonDir(outside)}
	case ApprovalNever:
		return PatchDecision{Action: PatchReject, Reject: fmt.Sprintf(
			"patch refused: %s is outside the writable roots and approval policy %q does not allow asking", outside[0], p)}
	}
	return PatchDecision{Action: PatchAsk, GrantRoot: commonDir(outside)}
}

// commonDir returns the deepest directory containing every path.
func commonDir(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	dir := filepath.Dir(filepath.Clean(paths[0]))
	for _, p := range paths[1:] {
		p = filepath.Clean(p)
		for {
			if _, ok := relUnder(p, dir); ok {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return dir
}
