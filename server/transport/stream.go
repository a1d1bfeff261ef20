package transport

import (
	"context"
	"errors"

	"github.com/agentd-dev/agentd/server/scope"
)

// DefaultMaxMessageBytes is the default cap on one message, in either
// direction of any transport (16 MiB, as the reference advertises in its
// x-codex-websocket-max-unfragmented-message-bytes header).
const DefaultMaxMessageBytes = 16 << 20

// ErrMessageTooLarge is returned by Read when a message exceeded the size
// cap. The stream has skipped that message and may be read again.
var ErrMessageTooLarge = errors.New("message exceeds the size limit")

// Stream is one connection's sequence of JSON messages.
//
// Concurrency contract: exactly one goroutine calls Read at a time; exactly
// one goroutine calls Write and Flush at a time (it may differ from the
// reader). Close may be called from any goroutine, any number of times; it
// makes a pending Write return and, except for stdio (whose reads cannot be
// interrupted), a pending Read too.
//
// Close, not ctx, is how a pending call is interrupted: the stdio and
// WebSocket streams ignore ctx (for WebSocket, a cancellable context costs
// allocations on every message), and the engine closes the stream when the
// connection ends. Only the in-memory pipe honours ctx, for in-process
// clients that want a send or a read to give up.
type Stream interface {
	// Read returns the next message without its framing. The slice belongs
	// to the caller. At the clean end of input it returns io.EOF; after a
	// message that exceeded the size cap it returns ErrMessageTooLarge and
	// the stream stays usable. Any other error ends the stream.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one message. It may buffer; Flush sends what is buffered.
	Write(ctx context.Context, msg []byte) error
	// Flush sends any buffered messages.
	Flush() error
	// Close ends the stream. It is idempotent.
	Close() error
	// Info describes the stream.
	Info() Info
}

// CloseFor ends st like Close, first telling the peer why when its framing
// can carry a reason: a WebSocket peer gets a close frame with status 1008
// (policy violation) and reason (cut to the 123 bytes a close frame
// holds). Other streams have no such frame and are simply closed. The
// engine calls it when it gives a client up (one that does not read its
// messages), so that the client can tell that from a normal end.
func CloseFor(st Stream, reason string) error {
	if rc, ok := st.(interface{ closeFor(string) error }); ok {
		return rc.closeFor(reason)
	}
	return st.Close()
}

// Info describes a stream: for logs, and the two properties the connection
// layer needs to choose its policies. They are properties, not a transport
// name, so that the layer above never switches on the transport.
type Info struct {
	// Transport names the transport ("stdio", "ws", "unix", "memory"),
	// for logs only.
	Transport string
	// Remote is the peer's address, when there is one, for logs only.
	Remote string
	// WaitWhenFull says that a writer facing a full outbound queue should
	// wait rather than disconnect the client: the peer cannot reconnect
	// (stdio, in-process).
	WaitWhenFull bool
	// DrainOnEOF says that io.EOF from Read means the peer finished
	// sending but still reads our output, so in-flight work should finish
	// and be answered before the stream is closed (stdio's stdin EOF).
	DrainOnEOF bool
	// Scope is what the peer may do. A transport whose peer is the
	// local user (stdio, the 0600 Unix socket, in-process) sets Admin; a
	// WebSocket client gets its token's. The zero value is the least
	// (scope.Read), so a stream nobody gave a scope is trusted least.
	Scope scope.Scope
	// Principal names who authenticated (a token's name), for logs only;
	// empty when nobody did.
	Principal string
}
