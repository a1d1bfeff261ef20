package server

import (
	"context"
	"fmt"
)

// startCall sends a server request on c and returns its id and the
// channel its answer arrives on, without waiting. The request is queued
// before startCall returns, so it keeps its place among the notifications
// sent around it. The caller must forget the id once it stops waiting.
func (c *Conn) startCall(method string, params any) (int64, <-chan callResult, error) {
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, nil, ErrConnClosed
	}
	id := c.nextCallID
	c.nextCallID++
	c.pending[id] = ch
	c.mu.Unlock()
	data, err := encodeRequest(id, method, params)
	if err != nil {
		c.forget(id)
		return 0, nil, fmt.Errorf("server request %s: %w", method, err)
	}
	if !c.enqueue(context.Background(), outMsg{data: data}) {
		c.forget(id)
		return 0, nil, ErrConnClosed
	}
	return id, ch, nil
}
