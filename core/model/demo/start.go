package demo

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Start serves the demo model on 127.0.0.1 at a free port and returns the
// base URL to configure as the provider's base_url (ending in /v1). The
// server stops when ctx ends or stop is called; stop waits until it has.
func Start(ctx context.Context) (baseURL string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: Handler{}, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	stop = sync.OnceFunc(func() {
		_ = srv.Close()
		<-served
	})
	context.AfterFunc(ctx, stop)
	return "http://" + l.Addr().String() + "/v1", stop, nil
}
