package transport

import (
	"context"
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
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", ep.Raw, err)
	}
	l := newHTTPListener(ln, "ws://"+ln.Addr().String(), "ws", true, o)
	return l, nil
}

func newHTTPListener(ln net.Listener, url, transport string, checkHost bool, o Options) *httpListener {
	h := &httpHandler{opts: o, checkHost: checkHost, transport: transport}
	if transport == "ws" {
		h.auth = o.Auth
	}
	l := &httpListener{ln: ln, url: url, handler: h}
	l.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(o.Logger.WithOptions(zap.IncreaseLevel(zap.WarnLevel))),
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
