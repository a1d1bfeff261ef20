package inprocess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/server/transport"
)

// DialOptions configure a connection to a running daemon.
type DialOptions struct {
	Options
	// Token, when set, is sent as "Authorization: Bearer <Token>" (a
	// daemon started with --ws-auth).
	Token string
	// Log is where the client logs what it drops; nil logs nothing.
	Log *zap.Logger
}

// Dial connects to a running agentd (or another server of the protocol)
// instead of starting one: rawURL is ws://HOST:PORT, wss://HOST:PORT, or
// unix://PATH (WebSocket over a Unix socket, as the daemon's unix://
// listener serves it). The Client then behaves as one from Start, except
// that Server is nil and Close only closes the connection.
func Dial(ctx context.Context, rawURL string, o DialOptions) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("inprocess: %q is not a URL: %v", rawURL, err)
	}
	wsURL, hc := rawURL, http.DefaultClient
	switch u.Scheme {
	case "ws", "wss":
	case "unix":
		path := u.Path
		if u.Host != "" {
			path = u.Host + u.Path // unix://relative/path
		}
		if path == "" {
			return nil, errors.New("inprocess: a unix:// URL needs the socket's path")
		}
		hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}}
		wsURL = "ws://localhost/"
	default:
		return nil, fmt.Errorf("inprocess: %q: the scheme must be ws, wss or unix", rawURL)
	}
	header := http.Header{}
	if o.Token != "" {
		header.Set("Authorization", "Bearer "+o.Token)
	}
	conn, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: header})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("inprocess: connecting to %s: HTTP %s", rawURL, strings.TrimSpace(resp.Status))
		}
		return nil, fmt.Errorf("inprocess: connecting to %s: %w", rawURL, err)
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	st := transport.NewWebSocket(conn, 1<<30, transport.Info{Transport: u.Scheme, Remote: rawURL})
	c := newClient(nil, st, log)
	close(c.serveDone) // no server of ours to wait for
	return c.handshake(ctx, o.Options)
}
