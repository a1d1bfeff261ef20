// Package transport turns bytes into messages and back. Each transport
// (stdio as newline-delimited JSON, WebSocket over TCP, WebSocket over a Unix
// socket, and an in-memory pipe for in-process clients) yields a Stream of
// whole JSON messages; nothing above a Stream knows which transport it is on.
//
// The package also parses listen URLs (stdio://, ws://IP:PORT, unix://PATH),
// binds listeners, and guards the HTTP side of the socket transports: health
// probes, the Origin rejection and the Host check against DNS rebinding.
package transport
