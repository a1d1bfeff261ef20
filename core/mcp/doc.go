// Package mcp is agentd's client for Model Context Protocol servers: the
// servers configured under [mcp_servers] are started once per daemon and
// shared by every thread, their tools are offered to the model under
// qualified names, and the core calls them through a Manager.
//
// It is built on the official Go SDK (github.com/modelcontextprotocol/go-sdk)
// and knows nothing of agentd's own protocol: the thread layer turns the
// Manager's status updates into notifications, and the core turns calls
// into items. Nothing here imports the rest of agentd.
//
// Lifecycle: Start launches every enabled server in the background (a
// thread never waits for an optional one; Tools waits for the ones still
// starting, bounded by their startup timeout, so a turn sees their tools).
// A server that exits after it was ready is started again with backoff; one
// that fails to start stays failed until Reload. Close ends every session
// and the whole process group of every stdio server.
package mcp
