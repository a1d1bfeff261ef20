// Package threads is the thread layer: it registers the thread, turn and
// startup methods on the engine, and owns the loaded threads, their
// subscribers, their settings and their server requests.
//
// A loaded thread is a core session, its rollout recorder, a projection
// and its subscribers. Inbound, a handler maps params to a core Op and
// submits it. Outbound, each thread's pump projects the session's events
// and queues the outputs; its deliverer, the only goroutine that sends
// them, delivers them in order to the subscribers (thread.go). Server
// requests go to every subscriber and the first answer wins (requests.go).
// A handler whose result must precede the events it causes reserves the
// response's place first (rpc.Request.ResponseFirst) and subscribes the
// client before it submits; it never delivers itself.
package threads
