package rpc

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc/rpctest"
	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
)

// scopedStream is a stream whose client has the given scope, as a
// WebSocket token would give it.
type scopedStream struct {
	transport.Stream
	scope scope.Scope
}

func (s scopedStream) Info() transport.Info {
	i := s.Stream.Info()
	i.Scope = s.scope
	return i
}

func serveScoped(s *Server, sc scope.Scope) func(transport.Stream) {
	return func(st transport.Stream) { s.ServeStream(scopedStream{st, sc}) }
}

// The engine refuses a method the connection's scope does not allow
// before its handler runs, with -32600 naming the scope and the method,
// whatever the params; the connection stays open and serves what the
// scope allows. A method outside the table (a test hook) needs admin; an
// unknown method is still answered as unknown.
func TestScopeRefusesBeforeTheHandler(t *testing.T) {
	s := newTestServer(t, nil)
	ran := make(chan string, 8)
	Handle(s, "thread/start", func(ctx context.Context, r *Request, p *protocol.ThreadStartParams) (*protocol.ThreadStartResponse, error) {
		ran <- "thread/start"
		return &protocol.ThreadStartResponse{}, nil
	})
	Handle(s, "thread/loaded/list", func(ctx context.Context, r *Request, p *protocol.ThreadLoadedListParams) (*protocol.ThreadLoadedListResponse, error) {
		return &protocol.ThreadLoadedListResponse{Data: []string{}}, nil
	})
	Handle(s, "thread/name/set", func(ctx context.Context, r *Request, p *protocol.ThreadSetNameParams) (*protocol.Empty, error) {
		return &protocol.Empty{}, nil
	})
	Handle(s, "x/hook", func(ctx context.Context, r *Request, _ *struct{}) (any, error) {
		ran <- "x/hook"
		return "ok", nil
	})
	c := rpctest.Connect(t, serveScoped(s, scope.Read))
	c.Initialize(nil)
	rpctest.WantError(t, c.Call("thread/start", map[string]any{}), -32600, `token scope "read" does not allow thread/start`)
	// Params that would not even decode: still the scope's refusal.
	rpctest.WantError(t, c.Call("thread/start", map[string]any{"cwd": 5}), -32600, `token scope "read" does not allow thread/start`)
	// A method of the protocol agentd does not implement: the scope first.
	rpctest.WantError(t, c.Call("fs/remove", map[string]any{"path": "/x"}), -32600, `token scope "read" does not allow fs/remove`)
	rpctest.WantError(t, c.Call("x/hook", nil), -32600, `token scope "read" does not allow x/hook`)
	rpctest.WantError(t, c.Call("thread/name/set", map[string]any{"threadId": "t", "name": "n"}), -32600, `token scope "read" does not allow thread/name/set`)
	if m := c.Call("nope/nope", nil); m.Error == nil || m.Error.Code != -32600 || m.Error.Message == `token scope "read" does not allow nope/nope` {
		t.Fatalf("unknown method: %s", m.Raw)
	}
	wantResult(t, c.Call("thread/loaded/list", map[string]any{}))
	select {
	case m := <-ran:
		t.Fatalf("handler %s ran for a refused request", m)
	default:
	}

	op := rpctest.Connect(t, serveScoped(s, scope.Operate))
	op.Initialize(nil)
	wantResult(t, op.Call("thread/name/set", map[string]any{"threadId": "t", "name": "n"}))
	rpctest.WantError(t, op.Call("x/hook", nil), -32600, `token scope "operate" does not allow x/hook`)

	admin := rpctest.Connect(t, s.ServeStream) // the in-memory pipe: admin
	admin.Initialize(nil)
	wantResult(t, admin.Call("x/hook", nil))
}

// A read-scope connection is asked nothing: Request fails at once with
// ErrReadScope and nothing reaches the client; an operate connection is
// asked.
func TestReadScopeGetsNoServerRequests(t *testing.T) {
	s := newTestServer(t, nil)
	conns := make(chan *Conn, 2)
	Handle(s, "thread/loaded/list", func(ctx context.Context, r *Request, p *protocol.ThreadLoadedListParams) (*protocol.ThreadLoadedListResponse, error) {
		conns <- r.Conn()
		return &protocol.ThreadLoadedListResponse{Data: []string{}}, nil
	})
	reader := rpctest.Connect(t, serveScoped(s, scope.Read))
	reader.Initialize(nil)
	wantResult(t, reader.Call("thread/loaded/list", map[string]any{}))
	rc := <-conns
	if call, err := rc.Request("item/tool/requestUserInput", map[string]any{}); !errors.Is(err, ErrReadScope) || call != nil {
		t.Fatalf("Request on a read connection: %v, %v", call, err)
	}
	rc.Notify("x/note", nil)
	if m := reader.Next(); m.Method != "x/note" {
		t.Fatalf("read connection got %s, want only the notification", m.Raw)
	}

	op := rpctest.Connect(t, serveScoped(s, scope.Operate))
	op.Initialize(nil)
	wantResult(t, op.Call("thread/loaded/list", map[string]any{}))
	oc := <-conns
	if _, err := oc.Request("item/tool/requestUserInput", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if m := op.Next(); m.Method != "item/tool/requestUserInput" || m.ID == nil {
		t.Fatalf("operate connection got %s, want the server request", m.Raw)
	}
}

func wantResult(t *testing.T, m rpctest.Msg) {
	t.Helper()
	if m.Error != nil || m.Result == nil {
		t.Fatalf("want a result, got %s", m.Raw)
	}
}
