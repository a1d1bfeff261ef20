package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// client is one WebSocket connection to the daemon. Its reader goroutine
// handles every message as it arrives: responses go to their callers,
// authoritative notifications and agentMessage deltas to its Checker,
// stamped deltas to its latency record. Scenarios read the counters
// (atomics) while it runs, and the rest once its events are done.
type client struct {
	name string
	ws   *wsConn

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan reply

	// Counters, read by scenarios while the reader runs.
	msgs      atomic.Int64 // every message read
	firstAt   atomic.Int64 // unix ns of the first message after markFirst
	deltas    atomic.Int64 // agentMessage delta notifications
	completed atomic.Int64 // turn/completed notifications
	serverReq atomic.Int64 // server→client requests (answered)

	itemsDone atomic.Int64 // item/completed notifications

	// checkMu guards what follows: the reader updates it, scenarios read
	// it (withCheck, takeLatency).
	checkMu sync.Mutex
	check   *Checker
	latency []int64 // ns from each stamp to its read, while stamping
	stamps  int     // stamps read
	bad     error   // the first malformed message

	stamping atomic.Bool // record the delay of each stamped delta
	stalled  atomic.Bool
	done     chan struct{} // closed when the connection ends
	endErr   error
}

// clientOpts say how a client connects.
type clientOpts struct {
	// rcvbuf, when set, is the socket's receive buffer (bytes): a small
	// one makes a stalled reader push back on the daemon at once.
	rcvbuf int
}

type reply struct {
	result json.RawMessage
	err    *rpcError
	at     time.Time
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// codeOverloaded is the answer to a request past the daemon's limits.
const codeOverloaded = -32001

func dial(ctx context.Context, url, name string, opts clientOpts) (*client, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ws, err := wsDial(dctx, url, opts.rcvbuf)
	if err != nil {
		return nil, err
	}
	c := &client{name: name, ws: ws, pending: map[int64]chan reply{},
		check: NewChecker(name), done: make(chan struct{})}
	ws.start(c.read, c.end)
	return c, nil
}

func (c *client) close() { c.ws.close() }

// ended reports whether the connection is gone, and why.
func (c *client) ended() (bool, error) {
	select {
	case <-c.done:
		return true, c.endErr
	default:
		return false, nil
	}
}

// stall stops reading after the next message: the socket's buffers fill
// and the daemon sees a client that does not read.
func (c *client) stall() { c.stalled.Store(true) }

// markFirst makes firstAt the time of the next message read.
func (c *client) markFirst() { c.firstAt.Store(0) }

// read handles a message as its connection's poller read it, and says
// whether to read on.
func (c *client) read(msg []byte) bool {
	c.checkMu.Lock()
	c.handle(msg, time.Now())
	c.checkMu.Unlock()
	return !c.stalled.Load()
}

// end is the end of the connection.
func (c *client) end(err error) {
	c.endErr = err
	c.failPending(err)
	close(c.done)
}

func (c *client) failPending(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, ch := range c.pending {
		ch <- reply{err: &rpcError{Code: -1, Message: "connection ended: " + err.Error()}}
		delete(c.pending, id)
	}
}

// envelope is any message, its params and result left raw.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// noteParams holds the members of the notifications the checker follows.
type noteParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
	Turn     *struct {
		ID string `json:"id"`
	} `json:"turn"`
	Item *struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
}

// handle runs on the reader goroutine; msg is valid during the call only.
func (c *client) handle(msg []byte, at time.Time) {
	c.msgs.Add(1)
	c.firstAt.CompareAndSwap(0, at.UnixNano())
	if d, ok := fastDelta(msg); ok {
		c.agentDelta(d.thread, d.turn, d.item, d.delta, at)
		return
	}
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil {
		c.malformed(fmt.Errorf("invalid JSON %s: %v", clipText(string(msg)), err))
		return
	}
	switch {
	case env.Method == "":
		c.answered(env, at)
	case len(env.ID) > 0:
		c.serverRequest(env)
	default:
		c.notification(env.Method, env.Params, at)
	}
}

func (c *client) malformed(err error) {
	if c.bad == nil {
		c.bad = fmt.Errorf("%s: %v", c.name, err)
	}
}

func (c *client) answered(env envelope, at time.Time) {
	id, err := strconv.ParseInt(string(env.ID), 10, 64)
	if err != nil {
		c.malformed(fmt.Errorf("response with id %s, not one of ours", env.ID))
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		c.malformed(fmt.Errorf("response to unknown request %d", id))
		return
	}
	ch <- reply{result: env.Result, err: env.Error, at: at}
}

// serverRequest answers a server→client request. With approval_policy
// "never" none is expected; one is accepted so that no turn hangs on it,
// and counted.
func (c *client) serverRequest(env envelope) {
	c.serverReq.Add(1)
	b, _ := json.Marshal(map[string]any{"id": env.ID, "result": map[string]any{"decision": "accept"}})
	go func() { _ = c.ws.writeText(b) }()
}

func (c *client) notification(method string, raw json.RawMessage, at time.Time) {
	switch method {
	case "turn/started", "turn/completed", "item/started", "item/completed", "item/agentMessage/delta":
	default:
		return
	}
	var p noteParams
	if err := json.Unmarshal(raw, &p); err != nil {
		c.malformed(fmt.Errorf("%s params %s: %v", method, clipText(string(raw)), err))
		return
	}
	switch method {
	case "item/agentMessage/delta":
		c.agentDelta(p.ThreadID, p.TurnID, p.ItemID, []byte(p.Delta), at)
	case "turn/started", "turn/completed":
		if p.Turn == nil {
			c.malformed(fmt.Errorf("%s without a turn: %s", method, clipText(string(raw))))
			return
		}
		if method == "turn/started" {
			c.check.TurnStarted(p.ThreadID, p.Turn.ID)
		} else {
			c.check.TurnCompleted(p.ThreadID, p.Turn.ID)
			c.completed.Add(1)
		}
	default:
		if p.Item == nil {
			c.malformed(fmt.Errorf("%s without an item: %s", method, clipText(string(raw))))
			return
		}
		if method == "item/started" {
			c.check.ItemStarted(p.ThreadID, p.TurnID, p.Item.ID, p.Item.Type)
		} else {
			c.check.ItemCompleted(p.ThreadID, p.TurnID, p.Item.ID, p.Item.Type, p.Item.Text)
			c.itemsDone.Add(1)
		}
	}
}

func (c *client) agentDelta(thread, turn, item string, delta []byte, at time.Time) {
	c.deltas.Add(1)
	c.check.AgentDelta(thread, turn, item, delta)
	if !c.stamping.Load() {
		return
	}
	before := len(c.latency)
	var ok bool
	c.latency, ok = mockmodel.ParseStamps(string(delta), c.latency)
	if !ok {
		c.malformed(fmt.Errorf("delta %s is not stamps", clip(string(delta))))
	}
	now := at.UnixNano()
	for i := before; i < len(c.latency); i++ {
		c.latency[i] = now - c.latency[i]
	}
	c.stamps += len(c.latency) - before
}

// deltaNote is an item/agentMessage/delta notification's params.
type deltaNote struct {
	thread, turn, item string
	delta              []byte
}

// deltaPrefix starts a delta notification as agentd writes it.
var deltaPrefix = []byte(`{"method":"item/agentMessage/delta","params":{`)

// fastDelta pulls an item/agentMessage/delta notification apart in one
// pass without decoding it, so that a thousand clients reading a hundred
// thousand deltas a second leave the CPU to the daemon. It takes the
// shape agentd writes ("method", then "params" of plain string
// members); anything else (an escaped character, another member) is left
// to the full decoder.
func fastDelta(msg []byte) (deltaNote, bool) {
	var d deltaNote
	rest, ok := bytes.CutPrefix(msg, deltaPrefix)
	if !ok {
		return d, false
	}
	seen := 0
	for {
		var key, val []byte
		if key, rest, ok = plainString(rest); !ok {
			return d, false
		}
		if rest, ok = bytes.CutPrefix(rest, []byte(":")); !ok {
			return d, false
		}
		if val, rest, ok = plainString(rest); !ok {
			return d, false
		}
		switch string(key) {
		case "threadId":
			d.thread = string(val)
		case "turnId":
			d.turn = string(val)
		case "itemId":
			d.item = string(val)
		case "delta":
			d.delta = val
		default:
			return d, false
		}
		seen++
		if len(rest) == 0 {
			return d, false
		}
		if rest[0] == '}' {
			return d, seen == 4
		}
		if rest[0] != ',' {
			return d, false
		}
		rest = rest[1:]
	}
}

// plainString reads a JSON string without escapes at the start of b and
// returns its contents and what follows it.
func plainString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	s = b[1 : 1+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, nil, false
	}
	return s, b[2+end:], true
}

// withCheck runs f with the client's checker and the first malformed
// message it read, while the reader holds off.
func (c *client) withCheck(f func(ch *Checker, bad error)) {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	f(c.check, c.bad)
}

// takeLatency returns the delays recorded so far and starts a new record.
func (c *client) takeLatency() (delays []int64, stamps int) {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	delays, stamps = c.latency, c.stamps
	c.latency, c.stamps = nil, 0
	return delays, stamps
}

// send writes a request and returns the channel its answer comes on.
func (c *client) send(ctx context.Context, method string, params any) (<-chan reply, error) {
	id := c.nextID.Add(1)
	ch := make(chan reply, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err == nil {
		err = c.ws.writeText(b)
	}
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: sending %s: %v", c.name, method, err)
	}
	return ch, nil
}

// wait returns the answer on ch.
func wait(ctx context.Context, ch <-chan reply) (reply, error) {
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return reply{}, ctx.Err()
	}
}

// call sends a request and returns its result; an error answer is an
// error (an *rpcError).
func (c *client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch, err := c.send(ctx, method, params)
	if err != nil {
		return nil, err
	}
	r, err := wait(ctx, ch)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", c.name, method, err)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.name, method, r.err)
	}
	return r.result, nil
}

func (c *client) notify(ctx context.Context, method string) error {
	b, _ := json.Marshal(map[string]any{"method": method})
	return c.ws.writeText(b)
}

func (c *client) initialize(ctx context.Context) error {
	if _, err := c.call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "agentd-load", "title": "agentd load harness", "version": "0.1.0"},
	}); err != nil {
		return err
	}
	return c.notify(ctx, "initialized")
}

// startThread runs thread/start in cwd and returns the thread id.
func (c *client) startThread(ctx context.Context, cwd string) (string, error) {
	res, err := c.call(ctx, "thread/start", map[string]any{"cwd": cwd})
	if err != nil {
		return "", err
	}
	return threadID(res)
}

// resume runs thread/resume (subscribing the connection).
func (c *client) resume(ctx context.Context, id string) error {
	_, err := c.call(ctx, "thread/resume", map[string]any{"threadId": id})
	return err
}

func threadID(res json.RawMessage) (string, error) {
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Thread.ID == "" {
		return "", fmt.Errorf("no thread id in %s", clipText(string(res)))
	}
	return r.Thread.ID, nil
}

// startTurn sends turn/start with text and returns the answer's channel.
func (c *client) startTurn(ctx context.Context, thread, text string) (<-chan reply, error) {
	return c.send(ctx, "turn/start", map[string]any{
		"threadId": thread,
		"input":    []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}},
	})
}

// turnID reads the turn id of a turn/start result.
func turnID(res json.RawMessage) (string, error) {
	var r struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Turn.ID == "" {
		return "", fmt.Errorf("no turn id in %s", clipText(string(res)))
	}
	return r.Turn.ID, nil
}
