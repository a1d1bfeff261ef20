// Package exec runs the commands of the exec_command and write_stdin
// tools and of user shell commands: each in its own process group, with a
// pipe or a pseudo-terminal, its output streamed as it arrives and kept
// within fixed bounds, killed as a group on timeout, cancellation or
// shutdown. A command still running when its yield time is up becomes a
// session the model can write to and poll.
//
// The package knows nothing of the agent core or the model client: the
// turn loop decides approvals (package policy), runs commands here, and
// turns results into items and tool outputs.
package exec
