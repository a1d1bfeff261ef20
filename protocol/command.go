package protocol

// CommandExecParams are the params of command/exec: run a command outside
// any thread, tied to the connection.
type CommandExecParams struct {
	Command            []string                 `json:"command"`
	ProcessID          *string                  `json:"processId,omitempty"`
	Cwd                *string                  `json:"cwd,omitempty"`
	Env                map[string]*string       `json:"env,omitempty"`
	Size               *CommandExecTerminalSize `json:"size,omitempty"`
	TTY                bool                     `json:"tty,omitempty"`
	StreamStdin        bool                     `json:"streamStdin,omitempty"`
	StreamStdoutStderr bool                     `json:"streamStdoutStderr,omitempty"`
	OutputBytesCap     *uint                    `json:"outputBytesCap,omitempty"`
	DisableOutputCap   bool                     `json:"disableOutputCap,omitempty"`
	TimeoutMs          *int64                   `json:"timeoutMs,omitempty"`
	DisableTimeout     bool                     `json:"disableTimeout,omitempty"`
	SandboxPolicy      *SandboxPolicy           `json:"sandboxPolicy,omitempty"`
	PermissionProfile  *string                  `json:"permissionProfile,omitempty" wire:"experimental"`
}

// CommandExecTerminalSize is a PTY size.
type CommandExecTerminalSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// CommandExecResponse is the result of command/exec, sent when the process
// exits; streamed streams come back empty.
type CommandExecResponse struct {
	ExitCode int32  `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// CommandExecWriteParams are the params of command/exec/write.
type CommandExecWriteParams struct {
	ProcessID   string  `json:"processId"`
	DeltaBase64 *string `json:"deltaBase64,omitempty"`
	CloseStdin  bool    `json:"closeStdin,omitempty"`
}

// CommandExecTerminateParams are the params of command/exec/terminate.
type CommandExecTerminateParams struct {
	ProcessID string `json:"processId"`
}

// CommandExecResizeParams are the params of command/exec/resize.
type CommandExecResizeParams struct {
	ProcessID string                  `json:"processId"`
	Size      CommandExecTerminalSize `json:"size"`
}
