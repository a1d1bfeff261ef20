package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// The test hooks exist only when AGENTD_TEST_HOOKS=1 (see TestHooksEnv):
// end-to-end tests need a request that stays in flight, notifications on
// demand, a server request to answer, a stuck engine (test/stall) and a
// disk that fills up. They are not part of the protocol and are never
// registered otherwise; without them the rollout writer has no fault hook
// at all.

// testHooks is the state the hooks share with the daemon.
type testHooks struct {
	// diskFull makes every rollout write fail with ENOSPC, as a full
	// disk does (test/rolloutWrites).
	diskFull atomic.Bool
}

// rolloutWriteFault is the rollout writer's fault hook: nil without test
// hooks.
func (h *testHooks) rolloutWriteFault() func() error {
	if h == nil {
		return nil
	}
	return func() error {
		if h.diskFull.Load() {
			return syscall.ENOSPC
		}
		return nil
	}
}

type testRolloutWritesParams struct {
	// Fail makes every rollout write fail (a full disk) until a call with
	// false.
	Fail bool `json:"fail"`
}

type testSleepParams struct {
	// Ms is how long to stay in flight; the request ends early when the
	// connection ends or the client cancels it.
	Ms int64 `json:"ms"`
	// ThreadID, when set, puts the request in that thread's line (see
	// rpc.ByThread): the requests about the thread behind it wait.
	ThreadID string `json:"threadId"`
}

type testEmitParams struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// Count is how many notifications to send (default 1).
	Count int `json:"count"`
	// Broadcast sends to every initialized connection instead of the
	// caller only.
	Broadcast bool `json:"broadcast"`
	// AppendIndexTo names a string member of params to which "<i>;" is
	// appended for the i-th notification, so tests can check that nothing
	// was lost or reordered.
	AppendIndexTo string `json:"appendIndexTo"`
}

type testCallParams struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func registerTestHooks(s *rpc.Server, h *testHooks) {
	// test/stall holds every connection's dispatch (rpc.HoldDispatch)
	// until the calling connection closes, as a deadlocked engine would:
	// the systemd watchdog must stop pinging meanwhile. It tells the
	// caller "test/stalled" once the hold is in place.
	rpc.Handle(s, "test/stall", func(ctx context.Context, r *rpc.Request, _ *struct{}) (any, error) {
		release := s.HoldDispatch()
		defer release()
		r.Conn().Notify("test/stalled", nil)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	rpc.Handle(s, "test/rolloutWrites", func(ctx context.Context, _ *rpc.Request, p *testRolloutWritesParams) (any, error) {
		h.diskFull.Store(p.Fail)
		return map[string]bool{"fail": p.Fail}, nil
	})
	// test/sleep stands for work a shutdown waits for (or gives up at
	// its deadline) and that the client may cancel ($/cancelRequest): a
	// drain does not stop it, though it is Cancellable.
	rpc.Handle(s, "test/sleep", func(ctx context.Context, r *rpc.Request, p *testSleepParams) (any, error) {
		t := time.NewTimer(time.Duration(p.Ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			if !rpc.ShuttingDown(ctx) {
				return nil, ctx.Err()
			}
			select {
			case <-t.C:
			case <-r.Conn().Context().Done():
				return nil, ctx.Err()
			}
		}
		return map[string]int64{"slept": p.Ms}, nil
	})
	rpc.Order(s, rpc.ByThread, "test/sleep")
	rpc.Cancellable(s, "test/sleep")
	rpc.Handle(s, "test/emit", func(ctx context.Context, r *rpc.Request, p *testEmitParams) (any, error) {
		c := r.Conn()
		if p.Count <= 0 {
			p.Count = 1
		}
		var base map[string]json.RawMessage
		var text string
		if p.AppendIndexTo != "" {
			if err := json.Unmarshal(p.Params, &base); err != nil {
				return nil, protocol.InvalidRequest("test/emit: params must be an object to use appendIndexTo")
			}
			if err := json.Unmarshal(base[p.AppendIndexTo], &text); err != nil {
				return nil, protocol.InvalidRequest("test/emit: params.%s must be a string", p.AppendIndexTo)
			}
		}
		for i := 0; i < p.Count; i++ {
			var params any = p.Params
			if p.Params == nil {
				params = nil
			}
			if base != nil {
				v, _ := json.Marshal(fmt.Sprintf("%s%d;", text, i))
				m := make(map[string]json.RawMessage, len(base))
				for k, raw := range base {
					m[k] = raw
				}
				m[p.AppendIndexTo] = v
				params = m
			}
			if p.Broadcast {
				s.Broadcast(p.Method, params)
			} else {
				c.Notify(p.Method, params)
			}
		}
		return map[string]int{"emitted": p.Count}, nil
	})
	rpc.Handle(s, "test/call", func(ctx context.Context, r *rpc.Request, p *testCallParams) (any, error) {
		var callParams any
		if p.Params != nil {
			callParams = p.Params
		}
		call, err := r.Conn().Request(p.Method, callParams)
		if err != nil {
			return nil, err
		}
		res, err := call.Wait(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]json.RawMessage{"result": res}, nil
	})
}
