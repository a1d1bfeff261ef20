package server

import (
	"context"
	"encoding/json"
	"fmt"
)

// callResult is a client's answer to a server request: result, or err (a
// *protocol.Error) when the client answered with an error.
type callResult struct {
	result json.RawMessage
	err    error
}

// Call sends a server→client request on c and waits for the answer. Ids
// are integers counting from 0 on each connection. The request is
// registered before it is sent, so an answer can never arrive unknown. A
// client error reply comes back as a *protocol.Error. Call returns
// ctx.Err() when ctx ends and ErrConnClosed when the connection ends first;
// an answer arriving after that is ignored.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrConnClosed
	}
	id := c.nextCallID
	c.nextCallID++
	c.pending[id] = ch
	c.mu.Unlock()

	data, err := encodeRequest(id, method, params)
	if err != nil {
		c.forget(id)
		return nil, fmt.Errorf("server request %s: %w", method, err)
	}
	if !c.enqueue(ctx, outMsg{data: data}) {
		c.forget(id)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, ErrConnClosed
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	case <-c.done:
		select {
		case r := <-ch:
			// The answer came in just before the connection ended.
			return r.result, r.err
		default:
		}
		return nil, ErrConnClosed
	}
}

// forget removes a pending server request; a late answer is then ignored.
func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// PendingCalls reports how many server requests on c await an answer.
func (c *Conn) PendingCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}
