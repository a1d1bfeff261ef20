// Package core is the agent runtime. Front ends submit Ops and read Events;
// the core streams from the model, runs tools, asks for approvals through
// events, and records every history item through a Sink.
//
// Two rivers flow through it in opposite directions. Submissions (Op) come
// in through a bounded queue and are answered at once on their own one-shot
// channel; events (Event) go out through a stream that never blocks the core
// and never drops (a reader that falls behind gets deltas merged, never
// lost). The core knows nothing of JSON-RPC: the thread layer
// (server/threads, through package projection) turns events into the
// public protocol.
package core
