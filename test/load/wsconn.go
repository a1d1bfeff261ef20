package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The harness's WebSocket client. A thousand subscribers reading a
// hundred deltas a second each is a hundred thousand messages a second,
// on the machine the daemon runs on: with a goroutine per connection
// (coder/websocket's reader, or any net.Conn reader) each message costs
// a wake-up of its goroutine and two reads (the one that returns it, and
// the one that finds the socket empty and parks), and the harness took
// more CPU than the daemon it measures. Here a few reader goroutines
// (pollers) wait on epoll, level-triggered, for all the connections: a
// message costs one read, and a wake-up is shared by every connection
// that became readable meanwhile.
//
// What it speaks is what the scenarios need of RFC 6455 on the client
// side: the opening handshake, masked text frames out, unmasked frames
// in (text, continuation, ping answered with pong, close answered with
// close).

// wsConn is one client connection: its socket, and the frames written to
// it.
type wsConn struct {
	fd int // non-blocking
	p  *poller

	wmu     sync.Mutex // one frame at a time
	wclosed bool       // a close frame went out; guarded by wmu

	// The poller's state of the connection (only its poller touches it,
	// and dial before start).
	onMessage func([]byte) bool
	pending   []byte // bytes read and not yet a whole frame
	frag      []byte // the fragments of a message not yet whole
	fragOp    byte

	// mu guards the fields that follow: the poller and close race to end
	// the connection.
	mu      sync.Mutex
	polled  bool // registered with its poller
	shut    bool // close shut the socket down for the poller to end it
	fdGone  bool // the descriptor is closed; no write may use it
	onEnd   func(error)
	endOnce sync.Once
}

// wsDial opens a WebSocket connection to rawURL (ws://host:port/path),
// with the socket's receive buffer set to rcvbuf when positive. Nothing is
// read from it until start.
func wsDial(ctx context.Context, rawURL string, rcvbuf int) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ws" {
		return nil, fmt.Errorf("%s: only ws:// is spoken here", rawURL)
	}
	dialer := &net.Dialer{}
	if rcvbuf > 0 {
		dialer.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			return errors.Join(err, serr)
		}
	}
	nc, err := dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	defer nc.Close() // the connection goes on on a duplicate of its socket
	if d, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(d)
	}
	rest, err := wsHandshake(nc, u)
	if err != nil {
		return nil, err
	}
	fd, err := dupSocket(nc)
	if err != nil {
		return nil, err
	}
	return &wsConn{fd: fd, pending: rest}, nil
}

// start hands the connection to a poller, which passes each text message
// to onMessage until it returns false (the client then reads no more:
// its socket's buffers fill), and the end of the connection to onEnd,
// once.
func (w *wsConn) start(onMessage func([]byte) bool, onEnd func(error)) {
	w.onMessage, w.onEnd = onMessage, onEnd
	w.p = pollerFor(w.fd)
	w.p.add(w)
}

// wsHandshake sends the opening handshake on nc and reads the answer. It
// returns what the server sent after the answer (its first frames).
func wsHandshake(nc net.Conn, u *url.URL) ([]byte, error) {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		return nil, err
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != wsAcceptKey(key) {
		return nil, fmt.Errorf("websocket handshake: Sec-WebSocket-Accept %q is not the key's", got)
	}
	rest, _ := br.Peek(br.Buffered())
	return bytes.Clone(rest), nil
}

// dupSocket returns a duplicate of nc's socket, for the pollers (Go's own
// poller keeps the original, which the caller closes).
func dupSocket(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	return fd, nil
}

// writeText sends msg as one masked text frame.
func (w *wsConn) writeText(msg []byte) error { return w.writeFrame(0x1, msg) }

// wsAcceptKey is the Sec-WebSocket-Accept answer to a handshake's key
// (RFC 6455 4.2.2).
func wsAcceptKey(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// appendFrameHeader appends the header of a final frame of opcode op and
// n payload bytes; masked sets the mask bit (a client's frames), whose key
// the caller appends.
func appendFrameHeader(b []byte, op byte, n int, masked bool) []byte {
	var m byte
	if masked {
		m = 0x80
	}
	b = append(b, 0x80|op)
	switch {
	case n < 126:
		return append(b, m|byte(n))
	case n <= 0xffff:
		return append(b, m|126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, m|127), uint64(n))
	}
}

// writeFrame sends one masked frame, waiting for room in the socket.
func (w *wsConn) writeFrame(op byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.wclosed {
		return net.ErrClosed
	}
	if op == 0x8 {
		w.wclosed = true
	}
	b := appendFrameHeader(make([]byte, 0, 14+len(payload)), op, len(payload), true)
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	b = append(b, mask[:]...)
	start := len(b)
	b = append(b, payload...)
	for i := range b[start:] {
		b[start+i] ^= mask[i&3]
	}
	for len(b) > 0 {
		n, err := w.write(b)
		switch {
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLOUT}}
			if _, err := unix.Poll(fds, 1000); err != nil && !errors.Is(err, unix.EINTR) {
				return err
			}
		case err != nil:
			return err
		default:
			b = b[n:]
		}
	}
	return nil
}

// write writes b to the socket once, unless the descriptor was closed
// (whose number a new connection may have taken since).
func (w *wsConn) write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fdGone {
		return 0, net.ErrClosed
	}
	return unix.Write(w.fd, b)
}

// close ends the connection at once: the socket is shut down, and its
// poller (or close itself, when no poller reads it) ends it.
func (w *wsConn) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fdGone {
		return
	}
	if w.polled {
		w.shut = true
		_ = unix.Shutdown(w.fd, unix.SHUT_RDWR) // its poller sees the end
		return
	}
	w.fdGone = true
	_ = unix.Close(w.fd)
	if w.onEnd != nil {
		w.end(errors.New("closed while not reading"))
	}
}

func (w *wsConn) end(err error) { w.endOnce.Do(func() { w.onEnd(err) }) }

// errWSClosed is a close frame from the server.
type errWSClosed struct {
	code   int
	reason string
}

func (e *errWSClosed) Error() string {
	return fmt.Sprintf("websocket closed by the server: status %d, reason %q", e.code, e.reason)
}

// poller reads the connections registered with it.
type poller struct {
	epfd int
	mu   sync.Mutex
	by   map[int]*wsConn
}

var (
	pollersOnce sync.Once
	pollers     []*poller
)

// pollerFor returns the poller of the connection on fd: one per CPU.
func pollerFor(fd int) *poller {
	pollersOnce.Do(func() {
		for range runtime.NumCPU() {
			epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
			if err != nil {
				panic(fmt.Sprintf("agentd-load: epoll: %v", err))
			}
			p := &poller{epfd: epfd, by: map[int]*wsConn{}}
			pollers = append(pollers, p)
			go p.run()
		}
	})
	return pollers[fd%len(pollers)]
}

// add registers w, and handles the frames the server sent with its
// handshake answer.
func (p *poller) add(w *wsConn) {
	if len(w.pending) > 0 {
		rest := w.pending
		w.pending = nil
		if !w.handle(rest) {
			return
		}
	}
	w.mu.Lock()
	w.polled = true
	w.mu.Unlock()
	p.mu.Lock()
	p.by[w.fd] = w
	p.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(w.fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, w.fd, &ev); err != nil {
		p.drop(w, err)
	}
}

// readBuf is what one read takes at most, per poller.
const readBuf = 256 << 10

func (p *poller) run() {
	events := make([]unix.EpollEvent, 256)
	buf := make([]byte, readBuf)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			panic(fmt.Sprintf("agentd-load: epoll_wait: %v", err))
		}
		for _, ev := range events[:n] {
			p.mu.Lock()
			w := p.by[int(ev.Fd)]
			p.mu.Unlock()
			if w != nil {
				w.readable(buf)
			}
		}
	}
}

// readable reads what the connection has and handles its whole frames.
func (w *wsConn) readable(buf []byte) {
	n, err := unix.Read(w.fd, buf)
	switch {
	case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
		return
	case err != nil:
		w.p.drop(w, err)
		return
	case n == 0:
		w.p.drop(w, io.EOF)
		return
	}
	b, own := buf[:n], false
	if len(w.pending) > 0 {
		// The frame begun in earlier reads grows in place (a message of
		// megabytes comes in many reads): never copied whole again.
		b, own = append(w.pending, b...), true
		w.pending = nil
	}
	w.handleOwned(b, own)
}

// handle handles the whole frames of b, and keeps the rest for the next
// read; it reports whether the connection is still read.
func (w *wsConn) handle(b []byte) bool { return w.handleOwned(b, false) }

// handleOwned is handle; own says that b is the connection's own (not the
// poller's read buffer), so that a rest that is all of it is kept as it
// is.
func (w *wsConn) handleOwned(b []byte, own bool) bool {
	whole := len(b)
	keep := func(rest []byte) {
		if own && len(rest) == whole {
			w.pending = rest
		} else if len(rest) > 0 {
			w.pending = bytes.Clone(rest)
		}
	}
	for {
		f, size, err := parseFrame(b)
		if err != nil {
			w.p.drop(w, err)
			return false
		}
		if size == 0 {
			break
		}
		b = b[size:]
		more, err := w.frame(f)
		if err != nil {
			w.p.drop(w, err)
			return false
		}
		if !more {
			keep(b) // unread: the client stopped
			w.p.forget(w)
			return false
		}
	}
	keep(b)
	return true
}

// frame handles one frame; more is false when the client stops reading.
func (w *wsConn) frame(f wsFrame) (more bool, err error) {
	switch f.op {
	case 0x0, 0x1, 0x2:
		if f.op != 0x0 {
			w.fragOp, w.frag = f.op, w.frag[:0]
		}
		if f.fin && len(w.frag) == 0 {
			return w.fragOp != 0x1 || w.onMessage(f.payload), nil
		}
		w.frag = append(w.frag, f.payload...)
		if !f.fin {
			return true, nil
		}
		msg := w.frag
		w.frag = nil
		return w.fragOp != 0x1 || w.onMessage(msg), nil
	case 0x8:
		code, reason := 1005, ""
		if len(f.payload) >= 2 {
			code, reason = int(binary.BigEndian.Uint16(f.payload)), string(f.payload[2:])
		}
		_ = w.writeFrame(0x8, f.payload[:min(len(f.payload), 2)])
		return false, &errWSClosed{code, reason}
	case 0x9:
		return true, w.writeFrame(0xA, f.payload)
	case 0xA:
		return true, nil
	}
	return false, fmt.Errorf("websocket: unknown opcode %d", f.op)
}

// wsFrame is one frame read; its payload aliases what was read.
type wsFrame struct {
	op      byte
	fin     bool
	payload []byte
}

// parseFrame reads the frame at the start of b; size is 0 when b does not
// hold all of it yet.
func parseFrame(b []byte) (f wsFrame, size int, err error) {
	if len(b) < 2 {
		return f, 0, nil
	}
	if b[1]&0x80 != 0 {
		return f, 0, errors.New("websocket: a masked frame from the server")
	}
	hdr, n := 2, uint64(b[1]&0x7f)
	switch n {
	case 126:
		if len(b) < 4 {
			return f, 0, nil
		}
		hdr, n = 4, uint64(binary.BigEndian.Uint16(b[2:4]))
	case 127:
		if len(b) < 10 {
			return f, 0, nil
		}
		hdr, n = 10, binary.BigEndian.Uint64(b[2:10])
		if n > 1<<31 {
			return f, 0, fmt.Errorf("websocket: a frame of %d bytes", n)
		}
	}
	if uint64(len(b)-hdr) < n {
		return f, 0, nil
	}
	end := hdr + int(n)
	return wsFrame{op: b[0] & 0x0f, fin: b[0]&0x80 != 0, payload: b[hdr:end]}, end, nil
}

// drop ends a connection: it leaves its poller, its socket is closed,
// and onEnd is told why.
func (p *poller) drop(w *wsConn, err error) {
	p.forget(w)
	w.mu.Lock()
	if !w.fdGone {
		w.fdGone = true
		_ = unix.Close(w.fd)
	}
	w.mu.Unlock()
	w.end(err)
}

// forget stops reading w, leaving its socket open: its buffers fill, and
// the server sees a client that does not read.
func (p *poller) forget(w *wsConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.polled {
		return
	}
	w.polled = false
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
	p.mu.Lock()
	delete(p.by, w.fd)
	p.mu.Unlock()
	if w.shut && !w.fdGone {
		// close came first and left the end to the poller, which no
		// longer reads it: the end is here.
		w.fdGone = true
		_ = unix.Close(w.fd)
		w.end(errors.New("closed while not reading"))
	}
}
