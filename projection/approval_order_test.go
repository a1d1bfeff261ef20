package projection

import (
	"testing"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/protocol"
)

// A declined patch: resolved, the flag clears, then the declined item
// (patch-decline-turn.jsonl); a declined command completes its item
// before the flag clears (see TestCommandApprovalDecline).
func TestPatchApprovalDecline(t *testing.T) {
	p := NewThread(tid, protocol.StatusIdle())
	fc := core.FileChangeItem{ID: "call_1", Status: core.StatusInProgress, Changes: []core.FileChange{{Path: "/w/hello.txt", Kind: core.ChangeAdd, Diff: "hello\n"}}}
	apply(p, core.TurnStarted{StartedAt: t0}, core.ItemStarted{Item: fc}, core.PatchApprovalRequest{CallID: "call_1", Changes: fc.Changes})
	out, _ := p.Answered("call_1")
	fc.Status = core.StatusDeclined
	out = append(out, apply(p, core.ItemCompleted{Item: fc})...)
	expect(t, out, "resolved:call_1", `status{"type":"active","activeFlags":[]}`, "item/completed")
	validate(t, out)
}
