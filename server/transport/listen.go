package transport

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/server/scope"
)

// Kind is the kind of a listen endpoint.
type Kind string

// The listen kinds.
const (
	KindStdio Kind = "stdio"
	KindWS    Kind = "ws"
	KindUnix  Kind = "unix"
)

// DefaultUnixSocket returns the socket path that "unix://" means: under the
// home directory, where the reference keeps its control socket.
func DefaultUnixSocket(home string) string {
	return filepath.Join(home, "app-server-control", "app-server-control.sock")
}

// Endpoint is a parsed listen URL.
type Endpoint struct {
	Kind Kind
	// Addr is host:port for ws, the socket path for unix, empty for stdio.
	Addr string
	// Raw is the URL as given.
	Raw string
	// DefaultPath is set when "unix://" named no path and Addr was
	// derived from the home directory.
	DefaultPath bool
	// TLS is set for wss:// (Kind is KindWS: the same WebSocket
	// listener, behind TLS).
	TLS bool
}

// listenForms lists the listen URLs, for errors.
const listenForms = "stdio://, ws://IP:PORT, wss://IP:PORT or unix://[PATH]"

// ParseListenURL parses stdio://, ws://IP:PORT and wss://IP:PORT (port 0
// picks one) and unix://[PATH] (no path: DefaultUnixSocket(home); a
// relative path is made absolute against the working directory).
func ParseListenURL(raw, home string) (Endpoint, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Endpoint{}, fmt.Errorf("invalid listen URL %q: want %s", raw, listenForms)
	}
	switch scheme := strings.ToLower(scheme); scheme {
	case "stdio":
		if rest != "" {
			return Endpoint{}, fmt.Errorf("invalid listen URL %q: stdio:// takes no address", raw)
		}
		return Endpoint{Kind: KindStdio, Raw: raw}, nil
	case "ws", "wss":
		host, port, err := net.SplitHostPort(strings.TrimSuffix(rest, "/"))
		if err != nil {
			return Endpoint{}, fmt.Errorf("invalid listen URL %q: %v (want %s://IP:PORT)", raw, err, scheme)
		}
		if host == "" {
			return Endpoint{}, fmt.Errorf("invalid listen URL %q: missing host (want %s://IP:PORT, e.g. %s://127.0.0.1:0)", raw, scheme, scheme)
		}
		if port == "" {
			return Endpoint{}, fmt.Errorf("invalid listen URL %q: missing port", raw)
		}
		return Endpoint{Kind: KindWS, Addr: net.JoinHostPort(host, port), Raw: raw, TLS: scheme == "wss"}, nil
	case "unix":
		if rest == "" {
			if home == "" {
				return Endpoint{}, fmt.Errorf("listen URL %q needs a home directory for its default path", raw)
			}
			return Endpoint{Kind: KindUnix, Addr: DefaultUnixSocket(home), Raw: raw, DefaultPath: true}, nil
		}
		p, err := filepath.Abs(rest)
		if err != nil {
			return Endpoint{}, fmt.Errorf("invalid listen URL %q: %v", raw, err)
		}
		return Endpoint{Kind: KindUnix, Addr: p, Raw: raw}, nil
	default:
		return Endpoint{}, fmt.Errorf("unsupported listen URL %q: want %s", raw, listenForms)
	}
}

// Listener accepts connections on one endpoint and hands each one's Stream
// to a callback.
type Listener interface {
	// URL is the address actually bound (ws:// or wss:// with the
	// chosen port, unix:// with the path, stdio://).
	URL() string
	// Serve accepts connections until Close, calling serve for each in its
	// own goroutine; serve runs the connection and returns when it ends.
	// It returns nil after Close.
	Serve(serve func(Stream)) error
	// Close stops accepting. Connections already handed out live on; the
	// server closes them. For a Unix socket it removes the socket file.
	Close() error
}

// Options configure listeners.
type Options struct {
	// MaxMessageBytes caps one message (0: DefaultMaxMessageBytes).
	MaxMessageBytes int
	// Logger receives transport events (rejected requests, ignored binary
	// frames). Never nil after defaults.
	Logger *zap.Logger
	// Stdin and Stdout are the stdio endpoint's files (nil: os.Stdin and
	// os.Stdout).
	Stdio *StdioFiles
	// Auth, when set, must accept a ws:// listener's upgrade requests
	// (HTTP 401 otherwise). Unix sockets are guarded by their file mode
	// and take no token, as in the reference; health probes take none.
	Auth Authenticator
	// TLS is the certificate of wss:// listeners (required by them), and
	// of the TCP sockets Adopt takes when set.
	TLS *Certificate
	// Admit, when set, reserves a connection slot for a WebSocket client
	// (TCP or Unix socket) that passed the other checks, before the
	// upgrade; release frees it when the connection has ended. Without a
	// slot the client gets HTTP 503 and no upgrade. Health probes take
	// none.
	Admit func() (release func(), ok bool)
}

// Authenticator checks a WebSocket upgrade request: who the client is,
// or an error whose text is the 401 body.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, error)
}

// Identity is what an authenticated client may do, and a name for logs.
type Identity struct {
	Scope scope.Scope
	// Name names the token (never the token itself), for logs.
	Name string
}

func (o *Options) withDefaults() Options {
	c := *o
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Listen binds the endpoint. Binding happens here, so that an address in
// use is reported before anything is served.
func Listen(ctx context.Context, ep Endpoint, opts Options) (Listener, error) {
	o := opts.withDefaults()
	switch ep.Kind {
	case KindStdio:
		return newStdioListener(o), nil
	case KindWS:
		return listenWS(ctx, ep, o)
	case KindUnix:
		return listenUnix(ctx, ep, o)
	}
	return nil, fmt.Errorf("unknown listen kind %q", ep.Kind)
}
