package transport

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/scope"
)

// MaxMessageHeader is the response header of a WebSocket upgrade that tells
// the client the largest message we accept, as the reference sends it.
const MaxMessageHeader = "x-codex-websocket-max-unfragmented-message-bytes"

// httpHandler serves one socket listener: health probes and WebSocket
// upgrades, behind the Origin and Host checks.
type httpHandler struct {
	opts Options
	// checkHost enables the DNS-rebinding check (TCP listeners only: a
	// browser cannot reach a Unix socket).
	checkHost bool
	transport string
	// auth checks upgrades (ws:// only); nil lets everyone in.
	auth Authenticator
	// cert is a wss:// listener's certificate: a Host it is valid for
	// passes the Host check.
	cert  *Certificate
	serve func(Stream)
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Any request carrying an Origin header comes from a browser page; no
	// page may talk to the daemon (the reference answers 403 to all of
	// them, health probes included).
	if _, ok := r.Header["Origin"]; ok {
		h.reject(w, r, "request carries an Origin header")
		return
	}
	if h.checkHost && !hostAllowed(r) && !h.certCovers(r) {
		h.reject(w, r, "Host is neither this listener's address nor a loopback name")
		return
	}
	switch r.URL.Path {
	case "/readyz", "/healthz":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	// Without authentication (a Unix socket, guarded by its mode; a
	// loopback listener nobody asked to protect) the client is trusted
	// as the local user is.
	id := Identity{Scope: scope.Admin}
	if h.auth != nil {
		var err error
		if id, err = h.auth.Authenticate(r); err != nil {
			// The reason names what was wrong, never the token.
			h.opts.Logger.Warn("rejected websocket client", zap.String("reason", err.Error()), zap.String("remote", r.RemoteAddr))
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(err.Error()))
			return
		}
	}
	release := func() {}
	if h.opts.Admit != nil {
		var ok bool
		if release, ok = h.opts.Admit(); !ok {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("too many connections; retry later\n"))
			return
		}
	}
	w.Header().Set(MaxMessageHeader, strconv.Itoa(h.opts.MaxMessageBytes))
	up := &wsUpgrade{ResponseWriter: w}
	c, err := websocket.Accept(up, r, &websocket.AcceptOptions{
		// Origin is already rejected above; coder/websocket's own origin
		// check would only repeat it.
		InsecureSkipVerify: true,
	})
	if err != nil {
		release()
		h.opts.Logger.Debug("websocket upgrade failed", zap.String("remote", r.RemoteAddr), zap.Error(err))
		return
	}
	remote := r.RemoteAddr
	st := NewWebSocket(c, h.opts.MaxMessageBytes, Info{Transport: h.transport, Remote: remote, Scope: id.Scope, Principal: id.Name})
	ws := st.(*wsStream)
	ws.w = up.w
	log := h.opts.Logger
	ws.onBinary = func(n int) {
		log.Warn("ignoring binary websocket frame", zap.String("remote", remote), zap.Int("bytes", n))
	}
	// The connection runs on a goroutine of its own, and this handler
	// returns: the HTTP server then lets go of what it kept for the
	// upgrade request (the request, its headers, the response, its
	// buffers), which an idle connection would otherwise hold for its
	// whole life. serve returns when the connection has ended.
	go func() {
		defer release()
		h.serve(st)
	}()
}

// certCovers reports whether a request that came over TLS names a host
// the certificate is valid for. Such a name cannot be an attacker's
// rebound domain: the client checked the certificate against the name it
// dialled (and browsers, which rebinding needs, are refused by Origin
// anyway).
func (h *httpHandler) certCovers(r *http.Request) bool {
	if h.cert == nil || r.TLS == nil {
		return false
	}
	host := r.Host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		host = hh
	}
	return h.cert.covers(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

func (h *httpHandler) reject(w http.ResponseWriter, r *http.Request, why string) {
	h.opts.Logger.Warn("rejected http request",
		zap.String("reason", why), zap.String("remote", r.RemoteAddr),
		zap.String("host", protocol.Cut(r.Host)), zap.String("origin", protocol.Cut(r.Header.Get("Origin"))), zap.String("path", protocol.Cut(r.URL.Path)))
	http.Error(w, "Forbidden", http.StatusForbidden)
}

// hostAllowed reports whether the request's Host names a loopback host or
// the address the connection arrived on. Any other name may be an attacker's
// domain rebound to our address (DNS rebinding), so it is refused.
func hostAllowed(r *http.Request) bool {
	host := r.Host
	if host == "" {
		return false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if isLoopbackName(host) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := la.(*net.TCPAddr); ok && ta.IP.Equal(ip) {
			return true
		}
	}
	return false
}

func isLoopbackName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}
