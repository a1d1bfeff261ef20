// Package protocol is agentd's public wire contract: the JSON-RPC error
// values, the v2 request, response, notification and server-request types,
// and the method table that says, for each method, its params and result
// types and whether it is experimental.
//
// Encoding: values are written with encoding/json. Field presence follows
// the reference server: threads, turns and items write every field (nulls
// included); server requests such as CommandExecutionRequestApprovalParams
// omit absent optional fields; output arrays and objects are List and Map,
// which never encode as null.
//
// Decoding: DecodeParams (and Unmarshal) check params the way the reference
// does and word errors like it ("Invalid request: missing field `threadId`").
// Which fields are required follows from the Go types (see shape.go):
// non-pointer fields without omitempty are required unless tagged
// wire:"optional"; pointer fields are optional unless tagged wire:"required".
// Fields and union variants tagged wire:"experimental" need the
// experimentalApi capability (ExperimentalUse) and are left out of the
// stable schema.
//
// Unions are structs with one pointer field per variant, exactly one set:
// tagged by "type" (ThreadItem, UserInput, SandboxPolicy, ThreadStatus, …)
// or keyed (a plain string or {"name": value}: AskForApproval,
// CodexErrorInfo, …). Helpers build the common ones (StatusIdle,
// TextUserInput, ChangeAdd, ApprovalPolicy, ErrorInfo, Decision).
//
// Shapes (ShapeOf) describe the wire form of every type; the schema package
// generates JSON Schema from them. This package imports nothing of agentd's.
package protocol
