// Package server assembles the daemon: the JSON-RPC engine (server/rpc)
// with the thread layer (server/threads) and the utility methods
// (server/utility) registered on it, and the answer to initialize.
// See docs/architecture.md.
package server
