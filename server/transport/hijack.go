package transport

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
)

// The buffers of an upgraded WebSocket connection. coder/websocket reads
// and writes through the bufio pair the HTTP server hands over on Hijack,
// 4 KiB each, for the life of the connection: 8 KiB of an idle
// connection's memory. A frame header and a typical message fit in these
// (a request; a delta notification: a few hundred bytes; the write buffer
// is the larger because notifications are the bulk of the traffic); a
// larger payload is read into the message or written from it directly,
// past the buffer, so a larger message costs one more system call, not a
// copy.
const (
	wsReadBuffer  = 512
	wsWriteBuffer = 1 << 10
)

// smallBuffers is the ResponseWriter given to websocket.Accept: its
// Hijack hands over the connection with buffers of wsReadBuffer and
// wsWriteBuffer bytes instead of the HTTP server's.
type smallBuffers struct {
	http.ResponseWriter
}

// Unwrap lets http.ResponseController reach the server's writer.
func (s smallBuffers) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack takes the connection over from the HTTP server. Bytes the client
// sent after its upgrade request (its first frames, pipelined) are in the
// server's reader already: they are moved into the new reader's buffer,
// where websocket.Accept expects them (it keeps what is buffered and reads
// the rest from the connection itself). The server's buffers are dropped:
// nothing else refers to them once the handler has returned.
func (s smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	r := bufio.NewReaderSize(conn, wsReadBuffer)
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ := brw.Reader.Peek(n)
		r = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), max(n, wsReadBuffer))
		// One read of the first reader: exactly the early bytes.
		if _, err := r.Peek(n); err != nil {
			_ = conn.Close()
			return nil, nil, err
		}
	}
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(conn, wsWriteBuffer)), nil
}
