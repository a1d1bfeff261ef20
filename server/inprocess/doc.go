// Package inprocess embeds agentd in a Go program. A Client is a
// connection like any other (the same handshake, gating, limits and
// message processing as stdio or WebSocket clients), carried over an
// in-memory message pipe instead of a socket:
//
//	c, err := inprocess.Start(ctx, cfg, logger, inprocess.Options{ClientInfo: inprocess.ClientInfo{Name: "my-app", Version: "1.0"}})
//	...
//	var started protocol.ThreadStartResponse
//	err = c.Request(ctx, "thread/start", map[string]any{"cwd": dir}, &started)
//	for ev := range c.Events() {
//		if ev.Request != nil { ev.Request.Respond(ctx, answer) }
//		...
//	}
//
// Events (notifications and server requests, in the order the server sent
// them) are queued without bound until read: read them, or the queue
// grows. Responses to requests never wait behind unread events.
//
// A program that runs sandboxed commands with the Landlock method must
// call RunSandboxHelper first thing in main: the sandbox re-executes the
// program's own binary to confine a command.
package inprocess
