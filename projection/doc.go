// Package projection turns the core's events into the public v2 protocol:
// notifications and server requests, per thread.
//
// It is a projection table, not a dump of the core's enum. Events are
// renamed (ItemStarted → item/started), re-containered (deltas and tool
// lifecycles into items), dropped on purpose (first-generation whole
// messages, command and patch begin/end: v2 clients get the items), and
// split (an approval request becomes a status change and a server
// request). Every core event variant has a decision here; a test enforces
// it.
//
// The package is pure mapping plus per-thread state (the turn summary,
// pending server requests, the status last reported). It never touches a
// connection: the server fans its outputs out.
package projection
