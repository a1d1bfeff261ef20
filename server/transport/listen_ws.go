package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// httpListener serves WebSocket connections and health probes on a bound
// net.Listener (TCP or Unix).
type httpListener struct {
	ln      net.Listener
	url     string
	srv     *http.Server
	handler *httpHandler
	// cleanup runs after the listener closed (removes a socket file).
	cleanup func()
}

func listenWS(ctx context.Context, ep Endpoint, o Options) (Listener, error) {
	if ep.TLS && o.TLS == nil {
		return nil, fmt.Errorf("listen %s: %w", ep.Raw, errNoCertificate)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", ep.Raw, err)
	}
	return newTCPListener(ln, ep.TLS, o), nil
}

// newTCPListener serves WebSocket on a bound TCP socket: ws://, or wss://
// with o.TLS's certificate.
func newTCPListener(ln net.Listener, useTLS bool, o Options) *httpListener {
	scheme := "ws://"
	if useTLS {
		scheme = "wss://"
		ln = tls.NewListener(ln, o.TLS.serverConfig())
	}
	l := newHTTPListener(ln, scheme+ln.Addr().String(), "ws", true, o)
	if useTLS {
		l.handler.cert = o.TLS
	}
	return l
}

func newHTTPListener(ln net.Listener, url, transport string, checkHost bool, o Options) *httpListener {
	h := &httpHandler{opts: o, checkHost: checkHost, transport: transport}
	if transport == "ws" {
		h.auth = o.Auth
	}
	l := &httpListener{ln: ln, url: url, handler: h}
	// The HTTP server's own complaints (a failed TLS handshake: a client
	// that does not trust the certificate; a malformed request) are
	// debug logs: anyone who can connect can cause them.
	errLog, err := zap.NewStdLogAt(o.Logger.Named("http"), zap.DebugLevel)
	if err != nil {
		errLog = zap.NewStdLog(zap.NewNop())
	}
	l.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          errLog,
	}
	return l
}

func (l *httpListener) URL() string { return l.url }

func (l *httpListener) Serve(serve func(Stream)) error {
	l.handler.serve = serve
	err := l.srv.Serve(l.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (l *httpListener) Close() error {
	// Close (not Shutdown): connections already upgraded are hijacked and
	// owned by the server's connection table, which closes them itself.
	err := l.srv.Close()
	if l.cleanup != nil {
		l.cleanup()
	}
	return err
}
