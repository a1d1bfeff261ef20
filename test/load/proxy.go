package main

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// slowProxy is a bad network in the harness: a TCP proxy to the daemon
// that carries each direction at bytesPerSec, each chunk arriving latency
// after it was read. It reads from the daemon only as fast as it
// forwards, through a small receive buffer with a small segment size (a
// real network's 1,400 bytes, not loopback's 64 KiB: the kernel sizes
// the daemon's send buffer from it), so that the backlog builds up in the
// daemon, where it is coalesced, and not in socket buffers.
type slowProxy struct {
	ln          net.Listener
	target      string
	bytesPerSec int
	latency     time.Duration

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

const (
	proxyChunk   = 512  // bytes read at a time
	proxyRcvBuf  = 4096 // bytes: the daemon-side socket's receive buffer
	proxyMSS     = 1400
	proxyInQueue = 4 // chunks read ahead of the pace
)

func newSlowProxy(target string, bytesPerSec int, latency time.Duration) (*slowProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &slowProxy{ln: ln, target: target, bytesPerSec: bytesPerSec, latency: latency}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// addr is host:port to connect to instead of the daemon.
func (p *slowProxy) addr() string { return p.ln.Addr().String() }

func (p *slowProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := slowDialer().Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(down, up)
		go p.pipe(up, down)
	}
}

// slowDialer sets the daemon-side socket's receive buffer and segment
// size before it connects (both are agreed at the handshake).
func slowDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = errors.Join(
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, proxyRcvBuf),
				syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, proxyMSS))
		})
		return errors.Join(err, serr)
	}}
}

type chunk struct {
	b  []byte
	at time.Time // when it was read
}

// pipe copies src to dst at the proxy's pace and latency.
func (p *slowProxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, proxyInQueue)
	go func() {
		defer close(q)
		for {
			b := make([]byte, proxyChunk)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b: b[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	// free is when the link can start sending the next byte.
	free := time.Now()
	for c := range q {
		start := c.at.Add(p.latency)
		if free.After(start) {
			start = free
		}
		free = start.Add(time.Duration(len(c.b)) * time.Second / time.Duration(p.bytesPerSec))
		time.Sleep(time.Until(free))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	// One side ended: end the other, so the pipe in the other direction
	// ends too.
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	for range q { // let the reader end
	}
}

func (p *slowProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
