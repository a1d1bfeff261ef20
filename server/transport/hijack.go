package transport

import (
	"bufio"
	"bytes"
	"io"
	"net"
)

// The read buffer of an upgraded WebSocket connection. coder/websocket
// reads through the bufio reader the HTTP server hands over on Hijack,
// 4 KiB, for the life of the connection. A frame header and a typical
// request fit in far less; a larger payload is read into the message
// directly, past the buffer, so a larger message costs one more system
// call, not a copy. (The write side is wsWriter's: stream_ws_write.go.)
const wsReadBuffer = 512

// smallReader returns the reader an upgraded connection reads through:
// wsReadBuffer bytes instead of the HTTP server's. Bytes the client sent
// after its upgrade request (its first frames, pipelined) are in the
// server's reader already: they are moved into the new reader's buffer,
// where websocket.Accept expects them (it keeps what is buffered and reads
// the rest from the connection itself). The server's reader is dropped:
// nothing else refers to it once the handler has returned.
func smallReader(conn net.Conn, old *bufio.Reader) (*bufio.Reader, error) {
	n := old.Buffered()
	if n == 0 {
		return bufio.NewReaderSize(conn, wsReadBuffer), nil
	}
	early, _ := old.Peek(n)
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), max(n, wsReadBuffer))
	// One read of the first reader: exactly the early bytes.
	if _, err := r.Peek(n); err != nil {
		return nil, err
	}
	return r, nil
}
