package exec

import "encoding/json"

// Tool names.
const (
	ExecCommandTool = "exec_command"
	WriteStdinTool  = "write_stdin"
)

type functionTool struct {
	Type        string     `json:"type"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Strict      bool       `json:"strict"`
	Parameters  jsonSchema `json:"parameters"`
}

type jsonSchema struct {
	Type                 string                `json:"type"`
	Description          string                `json:"description,omitempty"`
	Properties           map[string]jsonSchema `json:"properties,omitempty"`
	Items                *jsonSchema           `json:"items,omitempty"`
	Enum                 []string              `json:"enum,omitempty"`
	Required             []string              `json:"required,omitempty"`
	AdditionalProperties *bool                 `json:"additionalProperties,omitempty"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // static data: a failure is a programming error
	}
	return b
}

var no = false

// ExecCommandSpec returns the Responses API function tool definition of
// exec_command.
func ExecCommandSpec() json.RawMessage {
	return mustJSON(functionTool{
		Type: "function",
		Name: ExecCommandTool,
		Description: "Run a shell command and return its output. A command still running after yield_time_ms " +
			"keeps running in the background: the result then gives a session ID to use with write_stdin, " +
			"to send input or collect more output.",
		Parameters: jsonSchema{
			Type: "object",
			Properties: map[string]jsonSchema{
				"cmd":     {Type: "string", Description: "The command line, in shell syntax."},
				"workdir": {Type: "string", Description: "Directory to run in; defaults to the conversation's working directory."},
				"shell":   {Type: "string", Description: "Shell binary to run the command with; defaults to the user's shell."},
				"login":   {Type: "boolean", Description: "Run as a login shell, loading the user's profile (default true)."},
				"tty": {Type: "boolean", Description: "Give the command a terminal. Use for interactive programs " +
					"(REPLs, prompts) you will talk to through write_stdin; default false."},
				"yield_time_ms":     {Type: "number", Description: "How long to wait for the command before returning with a session ID (default 10000)."},
				"max_output_tokens": {Type: "number", Description: "Cap on the output returned, in tokens; the middle is cut beyond it."},
				"justification": {Type: "string", Description: "With sandbox_permissions \"require_escalated\": one sentence telling " +
					"the user why the command must run outside the sandbox."},
				"sandbox_permissions": {Type: "string", Enum: []string{SandboxUseDefault, SandboxRequireEscalated},
					Description: "\"require_escalated\" asks the user to run this command without the sandbox, " +
						"e.g. when it needs the network or must write outside the workspace; default \"use_default\"."},
				"prefix_rule": {Type: "array", Items: &jsonSchema{Type: "string"},
					Description: "With an escalation request: a command prefix (e.g. [\"npm\", \"install\"]) the user may " +
						"approve for the rest of the session."},
			},
			Required:             []string{"cmd"},
			AdditionalProperties: &no,
		},
	})
}

// WriteStdinSpec returns the Responses API function tool definition of
// write_stdin.
func WriteStdinSpec() json.RawMessage {
	return mustJSON(functionTool{
		Type: "function",
		Name: WriteStdinTool,
		Description: "Send characters to the input of a command started by exec_command that is still running, " +
			"and return what it printed since the last call. Send empty chars to only wait for more output.",
		Parameters: jsonSchema{
			Type: "object",
			Properties: map[string]jsonSchema{
				"session_id":        {Type: "number", Description: "The session ID exec_command returned."},
				"chars":             {Type: "string", Description: "Characters to write; include \"\\n\" to press Enter. May be empty."},
				"yield_time_ms":     {Type: "number", Description: "How long to wait for output before returning (default 250)."},
				"max_output_tokens": {Type: "number", Description: "Cap on the output returned, in tokens; the middle is cut beyond it."},
			},
			Required:             []string{"session_id"},
			AdditionalProperties: &no,
		},
	})
}

// shellCommonProperties are the parameters shell and shell_command share.
func shellCommonProperties() map[string]jsonSchema {
	return map[string]jsonSchema{
		"workdir":    {Type: "string", Description: "Directory to run in; defaults to the conversation's working directory."},
		"timeout_ms": {Type: "number", Description: "Kill the command after this many milliseconds (default 10000)."},
		"justification": {Type: "string", Description: "With sandbox_permissions \"require_escalated\": one sentence telling " +
			"the user why the command must run outside the sandbox."},
		"sandbox_permissions": {Type: "string", Enum: []string{SandboxUseDefault, SandboxRequireEscalated},
			Description: "\"require_escalated\" asks the user to run this command without the sandbox, " +
				"e.g. when it needs the network or must write outside the workspace; default \"use_default\"."},
	}
}

// ShellSpec returns the Responses API function tool definition of shell:
// a program and its arguments, run to the end.
func ShellSpec() json.RawMessage {
	props := shellCommonProperties()
	props["command"] = jsonSchema{Type: "array", Items: &jsonSchema{Type: "string"},
		Description: "The program and its arguments, e.g. [\"bash\", \"-lc\", \"ls -la\"]."}
	return mustJSON(functionTool{
		Type:        "function",
		Name:        ShellTool,
		Description: "Run a command to its end and return its output and exit code.",
		Parameters:  jsonSchema{Type: "object", Properties: props, Required: []string{"command"}, AdditionalProperties: &no},
	})
}

// ShellCommandSpec returns the Responses API function tool definition of
// shell_command: a command line run through the user's shell.
func ShellCommandSpec() json.RawMessage {
	props := shellCommonProperties()
	props["command"] = jsonSchema{Type: "string", Description: "The command line, in the syntax of the user's shell."}
	props["login"] = jsonSchema{Type: "boolean", Description: "Run as a login shell, loading the user's profile (default true)."}
	return mustJSON(functionTool{
		Type:        "function",
		Name:        ShellCommandTool,
		Description: "Run a command line through the user's shell, to its end, and return its output and exit code.",
		Parameters:  jsonSchema{Type: "object", Properties: props, Required: []string{"command"}, AdditionalProperties: &no},
	})
}

// LocalShellSpec returns the hosted local_shell tool: the model sends
// local_shell_call items, which the client runs.
func LocalShellSpec() json.RawMessage {
	return json.RawMessage(`{"type":"local_shell"}`)
}
