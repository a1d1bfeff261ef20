// Package scope is what a WebSocket token may do: its scope (read,
// operate, admin), the one table that says which scope each method needs,
// the refusal a client gets, and the checks that depend on a request's
// params: the config keys an operate token may not write and the settings
// it may not widen. docs/security.md shows the table; a test keeps the two
// the same.
//
// The engine (server/rpc) checks the method against the table before any
// handler runs. The handlers check the params themselves, with the
// functions here, reading the connection's scope.
package scope

import (
	"fmt"

	"github.com/agentd-dev/agentd/protocol"
)

// Scope is how far a client is trusted. They are ordered: each allows
// what the one before it does. The zero value is Read, the least, so that
// a connection nobody gave a scope is trusted with the least.
type Scope uint8

const (
	// Read observes: it lists, reads and subscribes to threads, and reads
	// models, config and account status. It gets no server requests.
	Read Scope = iota
	// Operate runs the agent within the operator's limits: threads,
	// turns, approvals, command/exec in the sandbox, reading files.
	Operate
	// Admin may do everything: stdio, the Unix socket, in-process
	// clients, the tokens of the --ws-* flags, and unauthenticated
	// loopback WebSocket.
	Admin
)

// names are the scopes as config.toml and the JWT claim spell them.
var names = [...]string{Read: "read", Operate: "operate", Admin: "admin"}

// String returns the scope's name ("read", "operate", "admin").
func (s Scope) String() string {
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("scope(%d)", uint8(s))
}

// Parse reads a scope's name.
func Parse(name string) (Scope, error) {
	for s, n := range names {
		if n == name {
			return Scope(s), nil
		}
	}
	return Read, fmt.Errorf("%q is not a scope: one of read, operate, admin", protocol.Cut(name))
}

// Allows reports whether a client with scope s may do what needs need.
func (s Scope) Allows(need Scope) bool { return s >= need }

// Deny is the refusal of method to a client with scope s: -32600 whose
// message names the scope and the method, and what in the request was
// refused when it was not the method itself (detail, e.g. `with sandbox
// "danger-full-access"`). The connection stays open.
func Deny(s Scope, method, detail string) *protocol.Error {
	if detail != "" {
		return protocol.InvalidRequest("token scope %q does not allow %s %s", s.String(), protocol.Cut(method), detail)
	}
	return protocol.InvalidRequest("token scope %q does not allow %s", s.String(), protocol.Cut(method))
}
