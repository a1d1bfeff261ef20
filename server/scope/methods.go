package scope

import "sort"

// methods is the one table of the scope each client request needs. Every
// client request of the protocol that agentd has types for has an entry
// (a test checks it against the protocol's table), and docs/security.md
// shows it (a test checks that too). A method it does not name (the test
// hooks, the methods the protocol knows by name only) needs Admin.
//
// Where a method's params can ask for more than its scope (a wider
// sandbox, a protected config key), its handler checks them too; Checked
// lists those.
var methods = map[string]Scope{
	// The handshake.
	"initialize": Read,

	// Observing threads.
	"thread/list":                     Read,
	"thread/loaded/list":              Read,
	"thread/read":                     Read,
	"thread/turns/list":               Read,
	"thread/items/list":               Read,
	"thread/resume":                   Read, // to subscribe; read may not change settings
	"thread/unsubscribe":              Read,
	"thread/goal/get":                 Read,
	"thread/backgroundTerminals/list": Read,

	// Running the agent.
	"thread/start":            Operate,
	"thread/fork":             Operate,
	"thread/archive":          Operate,
	"thread/unarchive":        Operate,
	"thread/name/set":         Operate,
	"thread/metadata/update":  Operate,
	"thread/compact/start":    Operate,
	"thread/revert":           Operate,
	"thread/inject_items":     Operate,
	"thread/settings/update":  Operate,
	"thread/readState/update": Operate,
	"turn/start":              Operate,
	"turn/steer":              Operate,
	"turn/interrupt":          Operate,
	"review/start":            Operate,

	// Irreversible, or outside any sandbox.
	"thread/delete":       Admin,
	"thread/shellCommand": Admin, // the user's own command, unsandboxed

	// Models, config, account status.
	"model/list":                                Read,
	"collaborationMode/list":                    Read,
	"permissionProfile/list":                    Read,
	"mcpServerStatus/list":                      Read,
	"skills/list":                               Read,
	"hooks/list":                                Read,
	"plugin/installed":                          Read,
	"config/read":                               Read,
	"configRequirements/read":                   Read,
	"account/read":                              Read,
	"account/rateLimits/read":                   Read,
	"account/bedrock/checkGovCloudRequirements": Read,

	// Config writes: operate, but not the protected keys.
	"config/value/write": Operate,
	"config/batchWrite":  Operate,
	// Enables or disables a skill in config.toml ([[skills.config]]).
	"skills/config/write": Operate,

	// Credentials.
	"account/login/start":  Admin,
	"account/login/cancel": Admin,
	"account/logout":       Admin,

	// Commands, in the sandbox.
	"command/exec":           Operate,
	"command/exec/write":     Operate,
	"command/exec/terminate": Operate,
	"command/exec/resize":    Operate,

	// Files: reading is operate's, changing them admin's.
	"fs/readFile":        Operate,
	"fs/getMetadata":     Operate,
	"fs/readDirectory":   Operate,
	"fs/watch":           Operate,
	"fs/unwatch":         Operate,
	"fuzzyFileSearch":    Operate,
	"fs/writeFile":       Admin,
	"fs/remove":          Admin,
	"fs/copy":            Admin,
	"fs/createDirectory": Admin,

	// MCP servers: reloading them and reading their resources is operate's;
	// calling a tool directly, outside a turn and its approvals, admin's.
	"config/mcpServer/reload": Operate,
	"mcpServer/resource/read": Operate,
	"mcpServer/tool/call":     Admin,
}

// checked are the methods whose handlers also check their params against
// the caller's scope (docs/security.md marks them).
var checked = map[string]bool{
	"thread/resume":          true,
	"thread/start":           true,
	"thread/fork":            true,
	"thread/settings/update": true,
	"turn/start":             true,
	"command/exec":           true,
	"config/value/write":     true,
	"config/batchWrite":      true,
}

// Required is the scope method needs: its entry in the table, or Admin
// for a method the table does not name.
func Required(method string) Scope {
	if s, ok := methods[method]; ok {
		return s
	}
	return Admin
}

// Entry is one row of the table.
type Entry struct {
	Method string
	Scope  Scope
	// Checked says the handler also checks the params against the
	// caller's scope.
	Checked bool
}

// Table returns the table, sorted by method.
func Table() []Entry {
	out := make([]Entry, 0, len(methods))
	for m, s := range methods {
		out = append(out, Entry{Method: m, Scope: s, Checked: checked[m]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Method < out[j].Method })
	return out
}
