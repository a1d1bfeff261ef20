package policy

// CommandActionKind names what a command does, as far as a parse can tell.
type CommandActionKind string

const (
	ActionRead      CommandActionKind = "read"      // Name, Path
	ActionListFiles CommandActionKind = "listFiles" // Path (optional)
	ActionSearch    CommandActionKind = "search"    // Query, Path (optional)
	ActionUnknown   CommandActionKind = "unknown"
)

// CommandAction is one step of a command, parsed for display: a user
// interface shows "Read foo.go" rather than "sed -n 1,80p foo.go".
type CommandAction struct {
	Kind    CommandActionKind
	Command string // the part of the command line this action covers
	Name    string
	Path    string
	Query   string
}
