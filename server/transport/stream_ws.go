package transport

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// wsCloseTimeout bounds the close handshake; a peer that does not answer
// it (typically one that stopped reading) is cut off.
const wsCloseTimeout = time.Second

// wsStream frames messages as WebSocket text frames, one message per frame.
// Binary frames are ignored, as the reference does.
type wsStream struct {
	c    *websocket.Conn
	info Info
	// w, on the server side, frames and batches the messages written
	// (stream_ws_write.go); without it each goes through c on its own.
	w *wsWriter
	// onBinary, when set, is told about each ignored binary frame.
	onBinary func(n int)

	closeOnce sync.Once
}

// NewWebSocket returns a Stream over an accepted WebSocket connection with
// a read limit of maxBytes per message (0 means DefaultMaxMessageBytes). A
// message over the limit ends the connection (status 1009), since a
// WebSocket cannot skip a frame it refused to read.
func NewWebSocket(c *websocket.Conn, maxBytes int, info Info) Stream {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	c.SetReadLimit(int64(maxBytes))
	return &wsStream{c: c, info: info}
}

// Read and Write ignore ctx: coder/websocket arms a context.AfterFunc per
// call for a cancellable context (four allocations per message), and Close
// already unblocks both.

func (s *wsStream) Read(ctx context.Context) ([]byte, error) {
	for {
		typ, data, err := s.c.Read(context.Background())
		if err != nil {
			switch websocket.CloseStatus(err) {
			case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
				return nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, err
		}
		if typ != websocket.MessageText {
			if s.onBinary != nil {
				s.onBinary(len(data))
			}
			continue
		}
		return data, nil
	}
}

func (s *wsStream) Write(ctx context.Context, msg []byte) error {
	if s.w != nil {
		return s.w.frame(msg)
	}
	return s.c.Write(context.Background(), websocket.MessageText, msg)
}

func (s *wsStream) Flush() error {
	if s.w != nil {
		return s.w.flush()
	}
	return nil
}

func (s *wsStream) Close() error {
	return s.closeWith(websocket.StatusNormalClosure, "")
}

// maxCloseReason is what a close frame's reason may hold (RFC 6455 5.5:
// 125 bytes of payload, 2 of them the status).
const maxCloseReason = 123

func (s *wsStream) closeFor(reason string) error {
	if len(reason) > maxCloseReason {
		reason = strings.ToValidUTF8(reason[:maxCloseReason], "")
	}
	return s.closeWith(websocket.StatusPolicyViolation, reason)
}

// closeWith closes once, with the close handshake bounded by
// wsCloseTimeout.
func (s *wsStream) closeWith(code websocket.StatusCode, reason string) error {
	s.closeOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			_ = s.c.Close(code, reason)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(wsCloseTimeout):
			_ = s.c.CloseNow()
		}
	})
	return nil
}

func (s *wsStream) Info() Info { return s.info }
