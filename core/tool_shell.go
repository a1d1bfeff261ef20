package core

import (
	"context"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/tools/exec"
)

// runShell is the shell function: a program and its arguments, run to
// the end; the model reads the reference's JSON output.
func (s *Session) runShell(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	args, err := exec.ParseShellArgs([]byte(c.args))
	if err != nil {
		return c.output("failed to parse function arguments: " + err.Error())
	}
	return s.runToEnd(ctx, t, c, args, (*exec.Result).StructuredText)
}

// runShellCommand is the shell_command function: a command line run
// through the user's shell; the model reads the reference's text output.
func (s *Session) runShellCommand(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	args, err := exec.ParseShellCommandArgs([]byte(c.args))
	if err != nil {
		return c.output("failed to parse function arguments: " + err.Error())
	}
	return s.runToEnd(ctx, t, c, args, (*exec.Result).FreeformText)
}

// runLocalShell runs a local_shell_call item (the hosted local_shell
// tool); c.args is its action. It is answered like the shell function.
func (s *Session) runLocalShell(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	args, err := exec.ParseLocalShellAction([]byte(c.args))
	if err != nil {
		return c.output("local_shell_call: " + err.Error())
	}
	return s.runToEnd(ctx, t, c, args, (*exec.Result).StructuredText)
}

// runToEnd runs a one-shot command (shell, shell_command, local_shell)
// through the same approvals, sandbox and item as exec_command, but to
// its end or its timeout, and answers with format's text of the result.
// A command that runs apply_patch is the apply_patch tool.
func (s *Session) runToEnd(ctx context.Context, t *turn, c *toolCall, args exec.ShellArgs, format func(*exec.Result) string) model.ResponseItem {
	argv := args.CommandArgv(exec.DetectShell())
	cwd := resolveWorkdir(t.tc.Cwd, args.Workdir)
	if out, ok := s.interceptPatch(ctx, t, c, argv, cwd); ok {
		return c.output(out)
	}
	item := CommandExecutionItem{
		ID: c.callID, Command: policy.ShellQuote(argv), Argv: argv, Cwd: cwd,
		Status: StatusInProgress, Actions: policy.ParseCommandActions(argv),
	}
	dec, out, ok := s.startCommand(ctx, t, c, &item, SourceAgent, args.Justification, args.Escalate())
	if !ok {
		return out
	}
	// local_shell's action.env is dropped, as the reference drops it: the
	// approval and the safety check see only the argv, and variables
	// such as GIT_CONFIG_* or BASH_ENV would run what they never saw.
	req := exec.Request{Argv: argv, Cwd: cwd, Env: exec.ModelEnv(false), Timeout: args.Timeout}
	res, err := s.execute(ctx, t, c, &item, req, dec.Sandboxed)
	if err == nil && dec.Sandboxed && policy.LikelySandboxDenial(res.ExitCode, res.Aggregated) {
		res, err = s.retryUnsandboxed(ctx, t, c, &item, req, res, dec.Ask)
	}
	if err != nil && res == nil {
		s.failCommand(t, &item, err)
		return c.output("execution error: " + err.Error())
	}
	s.finishCommand(t, &item, res)
	return c.output(format(res))
}
