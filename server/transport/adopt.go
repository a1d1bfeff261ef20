package transport

import (
	"fmt"
	"net"
)

// Adopt serves WebSocket on a socket bound by someone else (systemd's
// socket activation): a TCP socket as a ws:// listener, with the Host
// check and Options.Auth (as a wss:// listener when Options.TLS is set);
// a Unix socket as a unix:// listener. The socket's file is not ours:
// closing the listener leaves it in place.
func Adopt(ln net.Listener, opts Options) (Listener, Endpoint, error) {
	o := opts.withDefaults()
	switch a := ln.Addr().(type) {
	case *net.TCPAddr:
		l := newTCPListener(ln, o.TLS != nil, o)
		return l, Endpoint{Kind: KindWS, Addr: a.String(), Raw: l.URL(), TLS: o.TLS != nil}, nil
	case *net.UnixAddr:
		if ul, ok := ln.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
		ep := Endpoint{Kind: KindUnix, Addr: a.Name, Raw: "unix://" + a.Name}
		return newHTTPListener(ln, ep.Raw, "unix", false, o), ep, nil
	}
	return nil, Endpoint{}, fmt.Errorf("a passed socket of type %s (%s) cannot serve WebSocket", ln.Addr().Network(), ln.Addr())
}
