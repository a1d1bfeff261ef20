package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// warmUp runs the harness's client once, through a handshake, a request
// and its answer, against a WebSocket server of its own on loopback, so
// that the first timed dial of a run does not count the client's first use
// (its pollers, the code paths of a handshake, page faults in the
// harness): a start → initialize of a few milliseconds measured 2–5 ms
// more on the first start of a run than on the next without it.
func warmUp(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(answerEveryRequest)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := dial(ctx, "ws://"+ln.Addr().String(), "warm-up", clientOpts{})
	if err != nil {
		return err
	}
	defer c.close()
	return c.initialize(ctx)
}

// answerEveryRequest is warmUp's server: an empty result to each request.
func answerEveryRequest(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	for {
		_, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(msg, &req) != nil || len(req.ID) == 0 {
			continue
		}
		answer, _ := json.Marshal(map[string]any{"id": req.ID, "result": map[string]any{}})
		if err := c.Write(r.Context(), websocket.MessageText, answer); err != nil && !errors.Is(err, context.Canceled) {
			return
		}
	}
}
