// Package model is the client side of an OpenAI Responses-compatible model:
// the history items (ResponseItem), the request the core sends, the stream
// of events it reads back, and the classified errors a stream can end with.
//
// It knows nothing of tools, turns or JSON-RPC. The turn loop in package core
// joins it to the tools.
package model
