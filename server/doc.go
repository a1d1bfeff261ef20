// Package server is the daemon: it binds the listeners, runs one connection
// per client (handshake, capabilities, bounded in-flight work, the outbound
// queue and its single writer), dispatches requests to registered handlers,
// and sends server→client requests.
//
// A message travels in through a transport.Stream, is decoded and gated by
// its Conn, and runs in a HandlerFunc off the read loop; the answer, and
// every notification, goes out through the connection's bounded outbound
// queue, written by one goroutine per connection. See docs/architecture.md.
package server
