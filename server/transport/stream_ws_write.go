package transport

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"net"
	"net/http"
	"sync"

	"golang.org/x/sys/unix"
)

// The write half of a server-side WebSocket connection. coder/websocket
// writes and flushes each message on its own: one write system call per
// message, which is most of what a fan-out costs (on loopback the call
// also runs the receiver's TCP input). wsWriter frames the engine's
// messages itself (a server's frames are not masked: RFC 6455 5.1) and
// sends everything its writer queued since the last Flush in one call:
// a client that keeps up still gets each message in its own write, and
// one that is behind gets its backlog in as few writes as it takes, so
// the cost per message falls as the load rises.
//
// coder/websocket keeps the read half and the control frames (pong,
// close): it writes them through a small bufio.Writer into wsWriter.Write,
// one whole frame per call, sent at once after whatever the engine framed
// before it. Once a close frame went out, nothing more is framed.

// wsBatchMax is where a batch is sent without waiting for Flush: the
// memory a connection holds for its batch, and the largest write.
const wsBatchMax = 64 << 10

// wsDirectMin is the size from which a message's payload is written from
// where it lies (after its header and the batch so far, in one writev)
// instead of being copied into the batch.
const wsDirectMin = 16 << 10

// wsControlBuf sizes the buffer coder/websocket writes control frames
// into: a control frame is at most 2+125 bytes (RFC 6455 5.5), so each
// one reaches wsWriter.Write whole.
const wsControlBuf = 256

// wsBatchPool holds batch buffers between batches: an idle connection
// keeps none.
var wsBatchPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// wsWriter is a server-side WebSocket connection's frame writer.
type wsWriter struct {
	conn net.Conn

	// mu guards the fields that follow; it is held while writing to conn,
	// so that frames never interleave.
	mu sync.Mutex
	// batch holds the frames framed and not sent yet (nil between
	// batches).
	batch *[]byte
	// closeSent is set once a close frame was written.
	closeSent bool
	// err is the first write error; every later write returns it.
	err error
}

// frame queues msg as one text frame, sending the batch first when it
// would grow past wsBatchMax.
func (w *wsWriter) frame(msg []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closeSent {
		return net.ErrClosed
	}
	if w.batch == nil {
		w.batch = wsBatchPool.Get().(*[]byte)
	}
	b := appendFrameHeader(*w.batch, len(msg))
	if len(msg) >= wsDirectMin {
		bufs := net.Buffers{b, msg}
		_, err := bufs.WriteTo(w.conn)
		*w.batch = b[:0]
		return w.failLocked(err)
	}
	b = append(b, msg...)
	*w.batch = b
	if len(b) >= wsBatchMax {
		return w.sendLocked()
	}
	return nil
}

// flush sends the batch.
func (w *wsWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	return w.sendLocked()
}

// sendLocked writes the batch and gives its buffer back. w.mu must be
// held.
func (w *wsWriter) sendLocked() error {
	if w.batch == nil {
		return nil
	}
	b := *w.batch
	var err error
	if len(b) > 0 {
		_, err = w.conn.Write(b)
	}
	if cap(b) <= wsBatchMax+wsDirectMin {
		*w.batch = b[:0]
		wsBatchPool.Put(w.batch)
	}
	w.batch = nil
	return w.failLocked(err)
}

func (w *wsWriter) failLocked(err error) error {
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// Write sends one control frame from coder/websocket, after the batch.
func (w *wsWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if err := w.sendLocked(); err != nil {
		return 0, err
	}
	n, err := w.conn.Write(p)
	if len(p) > 0 && p[0] == 0x88 { // FIN and the close opcode
		w.closeSent = true
	}
	return n, w.failLocked(err)
}

// appendFrameHeader appends the header of an unmasked, final text frame
// of n payload bytes (RFC 6455 5.2).
func appendFrameHeader(b []byte, n int) []byte {
	const finText = 0x81
	switch {
	case n < 126:
		return append(b, finText, byte(n))
	case n <= 0xffff:
		return append(b, finText, 126, byte(n>>8), byte(n))
	default:
		b = append(b, finText, 127)
		return binary.BigEndian.AppendUint64(b, uint64(n))
	}
}

// wsUpgrade is the http.ResponseWriter handed to websocket.Accept: its
// Hijack gives coder/websocket a writer that goes through a wsWriter,
// which the stream then uses for its messages.
type wsUpgrade struct {
	http.ResponseWriter
	w *wsWriter
}

func (u *wsUpgrade) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(u.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	r, err := smallReader(conn, brw.Reader)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	// net/http flushed the upgrade response before handing the
	// connection over: its writer holds nothing, and is replaced.
	u.w = &wsWriter{conn: conn}
	keepBacklogOutOfTheKernel(conn)
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(u.w, wsControlBuf)), nil
}

// wsNotSentLowat bounds what a WebSocket connection's socket holds that it
// has not sent yet (TCP_NOTSENT_LOWAT; what is in flight is still sized
// by the kernel for the link). Without it, the kernel grows the send
// buffer of a client on a slow link to hundreds of kilobytes, which it
// then delivers at the link's pace, every delta as it was: seconds behind,
// and out of the daemon's reach. With it, the backlog waits in the
// connection's queue, where the writer lags behind (outbox: lagBehind)
// and deltas merge, so that a slow client catches up on the text instead
// of reading every step of it.
const wsNotSentLowat = 16 << 10

// keepBacklogOutOfTheKernel sets wsNotSentLowat on conn's TCP socket (a
// Unix socket has no such option, and needs none: its peer is local).
func keepBacklogOutOfTheKernel(conn net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, wsNotSentLowat)
	})
}

// Unwrap lets http.ResponseController reach the server's writer.
func (u *wsUpgrade) Unwrap() http.ResponseWriter { return u.ResponseWriter }
