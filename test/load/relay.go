package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/test/proc"
)

// The relay is the fan-out's floor on the machine at hand: a process
// (this program with the arguments "relay MOCK_URL") that does the least a
// daemon can do between the mock model and its subscribers. It streams a
// response from the mock as agentd does, and sends each text delta, as a
// notification of agentd's shape encoded once, to every WebSocket
// connection, split over one writer goroutine per CPU. It has no
// handshake, no thread, no queue and no history. The harness reads it
// with the same clients and the same stamps as the daemon, so that the
// daemon's figure can be read against what the machine allows: the wake-up
// of each process on a delta, and a write and a read per subscriber.
//
//	GET  /ws              a WebSocket connection that only receives
//	POST /run?n=N&rate=R  a turn of N stamped deltas, R a second, sent to
//	                      every connection; answered once all is written
type relay struct {
	model string // the mock's base URL
	http  *http.Client

	mu    sync.Mutex
	conns []net.Conn
	turns int
}

// runRelay serves the relay on a loopback port until stdin closes. Its
// first line on stdout is its base URL.
func runRelay(model string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "relay: %v\n", err)
		return 1
	}
	rl := &relay{model: model, http: &http.Client{}}
	go func() { _ = http.Serve(l, rl) }()
	fmt.Println("http://" + l.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

func (rl *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/ws":
		rl.accept(w, r)
	case "/run":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		rate, _ := strconv.Atoi(r.URL.Query().Get("rate"))
		if err := rl.turn(r.Context(), max(n, 1), max(rate, 1)); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "ok")
	default:
		http.NotFound(w, r)
	}
}

// accept completes a WebSocket handshake and keeps the connection, which
// it then never reads: its client sends nothing.
func (rl *relay) accept(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if key == "" || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "not a WebSocket handshake", http.StatusBadRequest)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	// Kept before the answer: once its client has the answer it may ask
	// for a turn, which must find it.
	rl.mu.Lock()
	rl.conns = append(rl.conns, conn)
	rl.mu.Unlock()
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + wsAcceptKey(key) + "\r\n\r\n")
	if brw.Flush() != nil {
		rl.drop([]net.Conn{conn})
	}
}

// drop forgets and closes conns (their writes failed).
func (rl *relay) drop(conns []net.Conn) {
	if len(conns) == 0 {
		return
	}
	rl.mu.Lock()
	rl.conns = slices.DeleteFunc(rl.conns, func(c net.Conn) bool { return slices.Contains(conns, c) })
	rl.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// turn streams one fan-out response from the mock, and sends its deltas
// to every connection, between turn/started and turn/completed.
func (rl *relay) turn(ctx context.Context, n, rate int) error {
	rl.mu.Lock()
	conns := slices.Clone(rl.conns)
	rl.turns++
	turn := "turn_" + strconv.Itoa(rl.turns)
	rl.mu.Unlock()
	// A client that stops reading fails its writes at this deadline
	// instead of holding the turn; one whose writes fail is dropped.
	deadline := time.Now().Add(time.Duration(n)*time.Second/time.Duration(rate) + relayWriteGrace)
	for _, c := range conns {
		_ = c.SetWriteDeadline(deadline)
	}
	fan := newFanner(conns)
	defer func() { rl.drop(fan.close()) }()

	body, _ := json.Marshal(map[string]any{"model": "relay", "stream": true, "input": []any{map[string]any{
		"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt("fanout", "n", n, "rate", rate)}}}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rl.model+"/responses", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := rl.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the mock answered %s", resp.Status)
	}
	const thread = relayThread
	fan.send(relayNote("turn/started", map[string]any{"threadId": thread, "turn": map[string]any{"id": turn}}))
	var item string
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type   string `json:"type"`
			ItemID string `json:"item_id"`
			Delta  string `json:"delta"`
		}
		if json.Unmarshal(data, &ev) != nil || ev.Type != "response.output_text.delta" {
			continue
		}
		if item == "" {
			item = ev.ItemID
			fan.send(relayNote("item/started", map[string]any{"threadId": thread, "turnId": turn,
				"item": map[string]any{"id": item, "type": "agentMessage", "text": ""}}))
		}
		text.WriteString(ev.Delta)
		fan.send(relayNote("item/agentMessage/delta", deltaParams{thread, turn, item, ev.Delta}))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if item != "" {
		fan.send(relayNote("item/completed", map[string]any{"threadId": thread, "turnId": turn,
			"item": map[string]any{"id": item, "type": "agentMessage", "text": text.String()}}))
	}
	fan.send(relayNote("turn/completed", map[string]any{"threadId": thread, "turn": map[string]any{"id": turn}}))
	return nil
}

// relayThread is the thread id of the relay's notifications.
const relayThread = "relay"

// relayWriteGrace is how long after a turn's last delta is due its writes
// may still block.
const relayWriteGrace = 30 * time.Second

// relayBatchMax bounds what the relay writes at once to a connection.
const relayBatchMax = 64 << 10

// deltaParams are an item/agentMessage/delta notification's params.
type deltaParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
}

// relayNote is a notification as one unmasked WebSocket text frame.
func relayNote(method string, params any) []byte {
	payload, _ := json.Marshal(struct {
		Method string `json:"method"`
		Params any    `json:"params"`
	}{method, params})
	frame := appendFrameHeader(make([]byte, 0, 10+len(payload)), 0x1, len(payload), false)
	return append(frame, payload...)
}

// fanner writes each frame to every connection: one goroutine per CPU,
// each with its share of the connections, written in turn, the frames
// that queued while it wrote in one write. A connection whose write fails
// gets nothing more.
type fanner struct {
	shards []chan []byte
	wg     sync.WaitGroup

	mu     sync.Mutex
	failed []net.Conn
}

func newFanner(conns []net.Conn) *fanner {
	f := &fanner{}
	k := min(runtime.GOMAXPROCS(0), max(len(conns), 1))
	for i := range k {
		ch := make(chan []byte, 1024)
		f.shards = append(f.shards, ch)
		f.wg.Go(func() {
			var mine []net.Conn
			for j := i; j < len(conns); j += k {
				mine = append(mine, conns[j])
			}
			var batch []byte
			for frame := range ch {
				// The frames that came meanwhile go with it, in one
				// write to each connection, as agentd batches a
				// connection's backlog.
				batch = append(batch[:0], frame...)
			more:
				for len(batch) < relayBatchMax {
					select {
					case next, ok := <-ch:
						if !ok {
							break more
						}
						batch = append(batch, next...)
					default:
						break more
					}
				}
				for j := 0; j < len(mine); j++ {
					if _, err := mine[j].Write(batch); err != nil {
						f.mu.Lock()
						f.failed = append(f.failed, mine[j])
						f.mu.Unlock()
						mine = slices.Delete(mine, j, j+1)
						j--
					}
				}
			}
		})
	}
	return f
}

func (f *fanner) send(frame []byte) {
	for _, ch := range f.shards {
		ch <- frame
	}
}

// close waits for every frame to be written, and returns the connections
// whose writes failed.
func (f *fanner) close() []net.Conn {
	for _, ch := range f.shards {
		close(ch)
	}
	f.wg.Wait()
	return f.failed
}

// relayProc is a running relay: a child process, or, in a test, a server
// in this process (no cmd).
type relayProc struct {
	*child
}

// startRelay starts this program as a relay of the mock at model.
func startRelay(model string) (*relayProc, error) {
	c, err := startChild("the relay", "relay", model)
	if err != nil {
		return nil, err
	}
	return &relayProc{c}, nil
}

// relayTurn is what one turn through the relay measured.
type relayTurn struct {
	delays []int64       // ns from each stamp to its read, every client's
	cpu    time.Duration // the relay's CPU during the turn
}

// run runs one turn of n deltas at rate through the relay, and waits until
// every client has its turn/completed.
func (p *relayProc) run(ctx context.Context, subs []*client, n, rate int) (relayTurn, error) {
	var res relayTurn
	want := make([]int64, len(subs))
	for i, c := range subs {
		want[i] = c.completed.Load() + 1
	}
	defer stamping(subs)()
	cpu0, err := p.cpu()
	if err != nil {
		return res, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/run?n=%d&rate=%d", p.url, n, rate), nil)
	if err != nil {
		return res, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return res, err
	}
	msg, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return res, fmt.Errorf("the relay: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	if err := completedOn(ctx, p, subs, want); err != nil {
		return res, fmt.Errorf("the relay: %v", err)
	}
	cpu1, err := p.cpu()
	if err != nil {
		return res, err
	}
	res.cpu = cpu1 - cpu0
	for _, c := range subs {
		lat, _ := c.takeLatency()
		res.delays = append(res.delays, lat...)
	}
	return res, nil
}

// alive fails once the relay's process has exited (never for one in this
// process).
func (p *relayProc) alive() error {
	if p.cmd != nil && !proc.Alive(p.cmd.Process.Pid) {
		return errors.New("the relay exited")
	}
	return nil
}

// cpu is the relay's CPU time so far; 0 when it runs in this process (a
// test).
func (p *relayProc) cpu() (time.Duration, error) {
	if p.cmd == nil {
		return 0, nil
	}
	return proc.CPU(p.cmd.Process.Pid)
}
