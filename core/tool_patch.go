package core

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/tools/exec"
	"github.com/agentd-dev/agentd/core/tools/patch"
)

// runApplyPatch is the apply_patch tool, freeform or JSON: parse, plan,
// ask if the policy says so, then apply all or nothing, and report the
// turn's diff.
func (s *Session) runApplyPatch(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	input := c.args
	if !c.custom {
		var err error
		if input, err = patch.InputFromArguments(c.args); err != nil {
			return c.output("apply_patch: " + err.Error())
		}
	}
	return c.output(s.applyPatch(ctx, t, c, input, t.tc.Cwd))
}

// interceptPatch runs a command that invokes apply_patch (see
// patch.FromCommand) as the apply_patch tool: a fileChange item, the
// patch approvals, the tool's output. ok is false for any other command.
func (s *Session) interceptPatch(ctx context.Context, t *turn, c *toolCall, argv []string, cwd string) (string, bool) {
	text, dir, ok := patch.FromCommand(argv)
	if !ok {
		return "", false
	}
	return s.applyPatch(ctx, t, c, text, resolveWorkdir(cwd, dir)), true
}

// applyPatch applies a patch's text with paths relative to cwd, and
// returns what to tell the model.
func (s *Session) applyPatch(ctx context.Context, t *turn, c *toolCall, input, cwd string) string {
	start := time.Now()
	p, err := patch.Parse(input)
	if err != nil {
		return err.Error()
	}
	plan, err := p.Plan(cwd, patch.ApplyOptions{})
	if err != nil {
		return err.Error()
	}
	roots := policy.WritableRoots(t.tc.Sandbox, t.tc.Cwd)
	dec := policy.DecidePatch(t.tc.ApprovalPolicy, t.tc.Sandbox, plan.Paths(), roots, s.approvals)
	if dec.Action == policy.PatchReject {
		return dec.Reject
	}
	item := FileChangeItem{ID: c.callID, Changes: fileChanges(plan.Changes), Status: StatusInProgress}
	complete := func(st ItemStatus) {
		item.Status = st
		s.emit(t.subID, t.id, ItemCompleted{Item: item})
	}
	asked := dec.Action == policy.PatchAsk
	if asked {
		d, ok := s.askApproval(ctx, t, c.callID, PatchApprovalRequest{CallID: c.callID, Changes: item.Changes, GrantRoot: dec.GrantRoot},
			func() { s.emit(t.subID, t.id, ItemStarted{Item: item}) })
		if !ok {
			return "apply_patch was not run: the turn ended before the user answered"
		}
		if !accepted(d) {
			return s.declined(t, c, d, complete)
		}
		if d.Kind == DecisionAcceptForSession {
			root := dec.GrantRoot
			if root == "" {
				root = t.tc.Cwd
			}
			s.approvals.ApproveRoot(root)
		}
	} else {
		s.emit(t.subID, t.id, ItemStarted{Item: item})
	}
	s.emit(t.subID, t.id, PatchApplyBegin{CallID: c.callID, AutoApproved: !asked, Changes: item.Changes})
	res, err := plan.Commit()
	if err != nil {
		complete(StatusFailed)
		s.emit(t.subID, t.id, PatchApplyEnd{CallID: c.callID, Success: false, Stderr: err.Error(), Changes: item.Changes})
		return fmt.Sprintf("Exit code: 1\nWall time: %s seconds\nOutput:\n%s\n", exec.WallSeconds(time.Since(start)), err)
	}
	complete(StatusCompleted)
	s.emit(t.subID, t.id, PatchApplyEnd{CallID: c.callID, Success: true, Stdout: res.Summary, Changes: item.Changes})
	if diff, ok := t.trackDiff(plan); ok {
		s.emit(t.subID, t.id, TurnDiff{UnifiedDiff: diff})
	}
	return fmt.Sprintf("Exit code: 0\nWall time: %s seconds\nOutput:\n%s", exec.WallSeconds(time.Since(start)), res.Summary)
}

// trackDiff adds an applied plan to the turn's diff and returns the diff
// of everything the turn changed.
func (t *turn) trackDiff(plan *patch.Plan) (string, bool) {
	t.diffMu.Lock()
	defer t.diffMu.Unlock()
	if t.diff == nil {
		t.diff = patch.NewTurnDiffTracker(t.tc.Cwd)
	}
	t.diff.Track(plan)
	d, err := t.diff.Diff()
	if err != nil {
		return "", false
	}
	return d, true
}

func fileChanges(cs []patch.FileChange) []FileChange {
	out := make([]FileChange, 0, len(cs))
	for _, c := range cs {
		out = append(out, FileChange{Path: c.Path, Kind: FileChangeKind(c.Kind), MovePath: c.MovePath, Diff: c.Diff})
	}
	return out
}

// patchPreview streams the preview of one apply_patch call the model is
// still writing.
type patchPreview struct {
	callID string
	sp     *patch.StreamParser
	th     *patch.Throttle
}

func (st *streamState) previewStart(item model.ResponseItem) {
	if item.Name() != patch.ToolName {
		return
	}
	st.previews[item.ID()] = &patchPreview{callID: item.CallID(), sp: patch.NewStreamParser(), th: patch.NewThrottle(0, nil)}
}

func (st *streamState) previewDelta(itemID, delta string) {
	p := st.previews[itemID]
	if p == nil {
		return
	}
	if p.sp.Push(delta) && p.th.Allow() {
		st.emit(PatchPreview{CallID: p.callID, Changes: fileChanges(p.sp.Snapshot())})
	}
}

func (st *streamState) previewDone(itemID string) {
	p := st.previews[itemID]
	if p == nil {
		return
	}
	delete(st.previews, itemID)
	p.sp.Finish()
	if p.th.Flush() {
		st.emit(PatchPreview{CallID: p.callID, Changes: fileChanges(p.sp.Snapshot())})
	}
}
