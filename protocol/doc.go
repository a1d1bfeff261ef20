// Package protocol is agentd's public wire contract: the JSON-RPC envelope
// (without "jsonrpc"), error codes, the v2 request, response, notification
// and server-request types, and the method table that says, for each method,
// its params and result types and whether it is experimental.
//
// It imports nothing of agentd's. The schema package generates JSON Schema
// from it; the server decodes and encodes with it.
package protocol
