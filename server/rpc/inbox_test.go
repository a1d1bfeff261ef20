package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
)

// The inbox hands messages to one dispatcher at a time, in order, started
// when there is something to dispatch; it holds the reader back past
// maxInboxBytes, and lets it go when a message is taken or the connection
// ends.
func TestInbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		starts := 0
		in := &inbox{start: func() { starts++ }}
		in.push(inMsg{data: []byte("1")})
		in.push(inMsg{data: []byte("2")})
		if starts != 1 {
			t.Fatalf("%d dispatchers started for two messages, want 1", starts)
		}
		for _, want := range []string{"1", "2"} {
			if m, ok := in.take(); !ok || string(m.data) != want {
				t.Fatalf("took %q %v, want %q", m.data, ok, want)
			}
		}
		if _, ok := in.take(); ok {
			t.Fatal("took from an empty inbox")
		}
		dispatched := make(chan struct{})
		go func() {
			in.waitDispatched()
			close(dispatched)
		}()
		synctest.Wait()
		<-dispatched // nothing to dispatch: no wait

		// Full: the reader waits for the dispatcher to take.
		big := []byte(strings.Repeat("x", maxInboxBytes))
		in.push(inMsg{data: big})
		if starts != 2 {
			t.Fatalf("%d dispatchers started, want 2", starts)
		}
		pushed := make(chan bool, 1)
		go func() { pushed <- in.push(inMsg{data: []byte("after")}) }()
		synctest.Wait()
		select {
		case <-pushed:
			t.Fatal("push into a full inbox did not wait")
		default:
		}
		if m, _ := in.take(); len(m.data) != len(big) {
			t.Fatal("lost the big message")
		}
		if !<-pushed {
			t.Fatal("push failed once there was room")
		}
		// The reader at the end of input waits until what it read was
		// dispatched.
		dispatched = make(chan struct{})
		go func() {
			in.waitDispatched()
			close(dispatched)
		}()
		synctest.Wait()
		select {
		case <-dispatched:
			t.Fatal("waitDispatched returned with a message waiting")
		default:
		}
		if m, _ := in.take(); string(m.data) != "after" {
			t.Fatalf("took %q", m.data)
		}
		if _, ok := in.take(); ok {
			t.Fatal("took from an empty inbox")
		}
		<-dispatched

		// The connection ends: a waiting reader is let go, and nothing
		// more is taken.
		in.push(inMsg{data: big})
		go func() { pushed <- in.push(inMsg{data: []byte("x")}) }()
		synctest.Wait()
		in.close()
		if <-pushed {
			t.Fatal("push succeeded after close")
		}
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
