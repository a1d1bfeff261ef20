package core

import (
	"fmt"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/tools/exec"
)

// runUserShell runs the user's own command, unsandboxed, as the user
// asked. Standalone, it is its own turn; otherwise an item of turn t. Its
// output goes into the model's context.
func (s *Session) runUserShell(t *turn, op OpShellCommand, standalone bool) {
	if standalone {
		s.emitTurnStarted(t, TurnUserShell)
	}
	id := newItemID()
	sh := exec.DetectShell()
	argv := sh.Argv(op.Command, true)
	cwd := t.tc.Cwd
	item := CommandExecutionItem{ID: id, Command: op.Command, Argv: argv, Cwd: cwd, Status: StatusInProgress, Source: SourceUserShell}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	s.emit(t.subID, t.id, ExecCommandBegin{CallID: id, Command: argv, Cwd: cwd, Source: SourceUserShell})
	res, err := s.exec.mgr.RunUserShell(t.ctx, exec.UserShellRequest{
		Command: op.Command, Cwd: cwd, BaseEnv: s.commandEnv(), Timeout: op.Timeout, Shell: sh,
		OnOutput: s.streamOutput(t, id, &deltaBudget{}),
	})
	if res == nil {
		msg := fmt.Sprintf("could not run the command: %v", err)
		code := 127
		item.AggregatedOutput, item.ExitCode, item.Status = &msg, &code, StatusFailed
		s.emit(t.subID, t.id, ItemCompleted{Item: item})
	} else {
		s.finishCommand(t, &item, res)
		s.record(t.id, model.NewTextMessage(newMessageID(), "user", exec.UserShellText(op.Command, res, 0)))
	}
	if standalone {
		s.endTurn(t, "", nil)
	}
}
