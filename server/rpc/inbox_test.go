package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd-dev/agentd/server/rpc/rpctest"
	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
)

// The inbox hands messages to one dispatcher at a time, in order, started
// when there is something to dispatch; the dispatcher waits for more, and
// stops after a whole tick of the idle timer without any. The inbox holds
// the reader back past maxInboxBytes, and lets it go when a message is
// taken or the connection ends; at the end of input the reader can wait
// until everything it read was dispatched.
func TestInbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var starts atomic.Int32
		got := make(chan inMsg) // a message is dispatched when the test receives it
		in := &inbox{}
		in.start = func() {
			starts.Add(1)
			go func() {
				for {
					m, ok := in.take()
					if !ok {
						if !in.park() {
							return
						}
						continue
					}
					got <- m
				}
			}()
		}
		recv := func(want string) {
			t.Helper()
			if m := <-got; string(m.data) != want {
				t.Fatalf("dispatched %.10q, want %q", m.data, want)
			}
		}
		wantStarts := func(n int32) {
			t.Helper()
			synctest.Wait()
			if starts.Load() != n {
				t.Fatalf("%d dispatchers started, want %d", starts.Load(), n)
			}
		}
		in.push(inMsg{data: []byte("1")})
		in.push(inMsg{data: []byte("2")})
		recv("1")
		recv("2")
		wantStarts(1)
		in.push(inMsg{data: []byte("3")}) // wakes the waiting dispatcher
		recv("3")
		wantStarts(1)
		in.tick() // it dispatched since the last tick: it stays
		wantStarts(1)
		in.push(inMsg{data: []byte("4")})
		recv("4")
		in.tick()
		in.tick()                         // a whole tick without work: asked to stop,
		in.push(inMsg{data: []byte("5")}) // and input comes as it stops:
		recv("5")                         // dispatched all the same, by it or a new one
		in.tick()
		in.tick() // now it stops
		synctest.Wait()
		starts.Store(1)
		in.push(inMsg{data: []byte("6")})
		recv("6")
		wantStarts(2)

		// Full: the reader waits for the dispatcher to take.
		big := []byte(strings.Repeat("x", maxInboxBytes))
		in.push(inMsg{data: []byte("x")}) // taken: the dispatcher is busy with it
		in.push(inMsg{data: big})
		pushed := make(chan bool, 1)
		go func() { pushed <- in.push(inMsg{data: []byte("after")}) }()
		synctest.Wait()
		select {
		case <-pushed:
			t.Fatal("push into a full inbox did not wait")
		default:
		}
		recv("x")
		if !<-pushed {
			t.Fatal("push failed once there was room")
		}
		recv(string(big))
		recv("after")

		// The end of input: the reader waits until what it read was
		// dispatched.
		in.push(inMsg{data: []byte("y")})
		dispatched := make(chan struct{})
		go func() {
			in.waitDispatched()
			close(dispatched)
		}()
		synctest.Wait()
		select {
		case <-dispatched:
			t.Fatal("waitDispatched returned with a message being dispatched")
		default:
		}
		recv("y")
		<-dispatched

		// The connection ends: a waiting reader is let go, the dispatcher
		// stops, and nothing more is taken.
		in.push(inMsg{data: []byte("z")})
		in.push(inMsg{data: big})
		go func() { pushed <- in.push(inMsg{data: []byte("w")}) }()
		synctest.Wait()
		in.close()
		if <-pushed {
			t.Fatal("push succeeded after close")
		}
		recv("z")
		synctest.Wait() // the dispatcher has stopped: the bubble would not end otherwise
		if _, ok := in.take(); ok {
			t.Fatal("took after close")
		}
	})
}

// At the end of a stdio client's input, what it sent before the end is
// answered before the connection closes, even when the end was read before
// those messages were dispatched.
func TestEOFAnswersWhatWasReadBeforeIt(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/echo", func(_ context.Context, _ *Request, p *json.RawMessage) (any, error) { return p, nil })
	var in strings.Builder
	in.WriteString(`{"id":0,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	const n = 50
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&in, `{"id":%d,"method":"x/echo","params":{"i":%d}}`+"\n", i, i)
	}
	outR, outW := io.Pipe()
	st := transport.NewNDJSON(strings.NewReader(in.String()), outW, outW.Close, 0,
		transport.Info{Transport: "stdio", WaitWhenFull: true, DrainOnEOF: true, Scope: scope.Admin})
	go s.ServeStream(st)
	answered := map[string]bool{}
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m.Error != nil {
			t.Fatalf("error answer: %s", sc.Bytes())
		}
		answered[string(m.ID)] = true
	}
	for i := 0; i <= n; i++ {
		if !answered[fmt.Sprint(i)] {
			t.Fatalf("request %d was not answered before the connection closed (%d answers)", i, len(answered))
		}
	}
}

// Once a connection is idle, the idle timer stops its dispatcher and its
// writer: the connection holds only its reader. They start again for the
// next message.
func TestIdleConnectionStopsItsWorkers(t *testing.T) {
	s := newTestServer(t, nil)
	c := rpctest.Connect(t, s.ServeStream)
	c.Initialize(nil)
	conn := s.Conns()[0]
	workers := func() (dispatching, writing bool) {
		conn.in.mu.Lock()
		dispatching = conn.in.running
		conn.in.mu.Unlock()
		conn.out.mu.Lock()
		writing = conn.out.writing
		conn.out.mu.Unlock()
		return
	}
	for deadline := time.Now().Add(rpctest.WaitTimeout); ; time.Sleep(idleWorkerRetire / 10) {
		d, w := workers()
		if !d && !w {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle connection: dispatcher running %v, writer running %v", d, w)
		}
	}
	if m := c.Call("x/unknown", nil); m.Error == nil {
		t.Fatalf("got %s", m.Raw)
	}
}

// A request a socket client sent just before it left still runs: what was
// read before the end of input is dispatched before the end is handled.
func TestRequestSentBeforeLeavingRuns(t *testing.T) {
	s := newTestServer(t, nil)
	ran := make(chan struct{}, 10)
	Handle(s, "x/mark", func(context.Context, *Request, *json.RawMessage) (any, error) {
		ran <- struct{}{}
		return nil, nil
	})
	in := `{"id":0,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"id":1,"method":"x/mark"}` + "\n" + `{"id":2,"method":"x/mark"}` + "\n"
	// A socket's end of input: the connection is gone (no drain).
	st := transport.NewNDJSON(strings.NewReader(in), io.Discard, nil, 0,
		transport.Info{Transport: "ws", Scope: scope.Admin})
	s.ServeStream(st)
	for i := range 2 {
		select {
		case <-ran:
		case <-time.After(rpctest.WaitTimeout):
			t.Fatalf("%d of the 2 requests sent before the client left ran", i)
		}
	}
}

// At the end of a stdio client's input, OnInputEnd's functions run while
// the drain waits for the requests in flight (a request that waits for
// them ends, and is answered); one registered after the end runs at once.
func TestOnInputEndRunsAtEOF(t *testing.T) {
	s := newTestServer(t, nil)
	Handle(s, "x/wait", func(ctx context.Context, r *Request, _ *json.RawMessage) (any, error) {
		for range 2 { // the second hook is registered after the end
			ended := make(chan struct{})
			r.Conn().OnInputEnd(func() { close(ended) })
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				return "the input's end was not reported", nil
			}
		}
		return "ended", nil
	})
	in := `{"id":0,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"id":1,"method":"x/wait"}` + "\n"
	outR, outW := io.Pipe()
	st := transport.NewNDJSON(strings.NewReader(in), outW, outW.Close, 0,
		transport.Info{Transport: "stdio", WaitWhenFull: true, DrainOnEOF: true, Scope: scope.Admin})
	go s.ServeStream(st)
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"id":1`) {
			if !strings.Contains(sc.Text(), `"result":"ended"`) {
				t.Fatalf("x/wait: %s", sc.Text())
			}
			return
		}
	}
	t.Fatal("x/wait was not answered")
}
