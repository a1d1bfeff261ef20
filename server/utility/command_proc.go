package utility

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/core/tools/exec"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// execTable holds one connection's command/exec processes: a process
// manager of its own (closing it kills them all) and the processes that
// have a client-supplied id.
type execTable struct {
	c   *rpc.Conn
	mgr *exec.Manager

	// mu guards the fields that follow.
	mu    sync.Mutex
	procs map[string]*execProc
}

func newExecTable(c *rpc.Conn, maxInflight int) *execTable {
	// Every command/exec request stays in flight until its process ends,
	// so the connection's in-flight limit bounds the processes; the
	// manager must never end one to make room.
	sessions := max(maxInflight, exec.DefaultMaxSessions) + 1
	return &execTable{
		c: c,
		// The manager's own output buffers are not used (execProc keeps
		// the output, with the reference's per-stream cap), so keep
		// them small.
		mgr:   exec.NewManager(exec.Options{MaxSessions: sessions, OutputCap: 64 << 10}),
		procs: map[string]*execProc{},
	}
}

// add registers p under its client id, if it has one.
func (t *execTable) add(p *execProc) error {
	if p.id == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.procs[p.id]; ok {
		return protocol.InvalidRequest("command/exec process id %q is already in use on this connection", protocol.Cut(p.id))
	}
	t.procs[p.id] = p
	return nil
}

// remove unregisters p.
func (t *execTable) remove(p *execProc) {
	if p.id == "" {
		return
	}
	t.mu.Lock()
	if t.procs[p.id] == p {
		delete(t.procs, p.id)
	}
	t.mu.Unlock()
}

// get returns the running process with the client id, or the reference's
// error.
func (t *execTable) get(id string) (*execProc, error) {
	t.mu.Lock()
	p := t.procs[id]
	t.mu.Unlock()
	if p == nil {
		return nil, errNoActiveExec(id)
	}
	return p, nil
}

// close kills every process and waits for them to end.
func (t *execTable) close() { _ = t.mgr.Close() }

// errNoActiveExec is the reference's answer for an unknown process id.
func errNoActiveExec(id string) error {
	return protocol.InvalidRequest("no active command/exec for process id %q", protocol.Cut(id))
}

// execSpec is a validated command/exec request.
type execSpec struct {
	req exec.Request
	// id is the client's process id ("" when it gave none).
	id string
	// stream sends output as command/exec/outputDelta notifications.
	stream bool
	// stdin keeps the input open for command/exec/write.
	stdin bool
	// outputCap bounds each stream; negative means no bound.
	outputCap int
}

// execProc is one command/exec process and what it printed.
type execProc struct {
	spec execSpec
	id   string
	c    *rpc.Conn
	mgr  *exec.Manager

	// ready is closed once the manager's session id is known (or the
	// process ended before becoming a session).
	ready chan struct{}
	// finished is closed once final is set.
	finished chan struct{}

	// mu guards the fields that follow.
	mu         sync.Mutex
	session    int
	cancel     context.CancelFunc
	terminated bool
	final      *exec.Result
	out        [2]capturedStream
}

// capturedStream is one output stream within its cap.
type capturedStream struct {
	buf        bytes.Buffer
	n          int
	capReached bool
}

func newExecProc(c *rpc.Conn, mgr *exec.Manager, spec execSpec) *execProc {
	p := &execProc{spec: spec, id: spec.id, c: c, mgr: mgr, ready: make(chan struct{}), finished: make(chan struct{})}
	p.spec.req.OnOutput = p.onOutput
	return p
}

// interactive reports whether the process reads input from the client,
// which makes it a manager session (input open, writable, resizable).
func (p *execProc) interactive() bool { return p.spec.stdin || p.spec.req.TTY }

// onOutput applies the per-stream cap and either streams the chunk or
// keeps it for the result. The manager calls it for one chunk at a time,
// and all calls have returned once the process has ended.
func (p *execProc) onOutput(stream string, chunk []byte) {
	i, wire := 0, protocol.StreamStdout
	if stream == exec.StreamStderr {
		i, wire = 1, protocol.StreamStderr
	}
	p.mu.Lock()
	s := &p.out[i]
	if s.capReached {
		// Output past the cap is read (so the command never blocks on
		// a full pipe) and dropped.
		p.mu.Unlock()
		return
	}
	keep := chunk
	if limit := p.spec.outputCap; limit >= 0 && s.n+len(chunk) > limit {
		keep = chunk[:limit-s.n]
		s.capReached = true
	}
	s.n += len(keep)
	reached := s.capReached
	if !p.spec.stream {
		s.buf.Write(keep)
	}
	p.mu.Unlock()
	if p.spec.stream {
		p.c.Notify("command/exec/outputDelta", protocol.CommandExecOutputDeltaNotification{
			ProcessID: p.id, Stream: wire, DeltaBase64: base64.StdEncoding.EncodeToString(keep), CapReached: reached,
		})
	}
}

// finish records the process's end; the first report wins.
func (p *execProc) finish(res *exec.Result) {
	if res == nil || res.Running {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.final != nil {
		return
	}
	p.final = res
	close(p.finished)
}

// run starts the process and waits for its end. A nil result with a nil
// error never happens; an error means no answer is due (the connection
// ended) or the process did not start.
func (p *execProc) run(ctx context.Context) (*protocol.CommandExecResponse, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.mu.Lock()
	p.cancel = cancel
	if p.terminated {
		cancel() // terminate came first
	}
	p.mu.Unlock()

	req := p.spec.req
	if p.interactive() {
		// A yield time makes a command still running after it a
		// session: input stays open, and write, resize and terminate
		// reach it by session id.
		req.YieldTime = time.Millisecond
	}
	res, err := p.mgr.Start(runCtx, req)
	if res == nil {
		close(p.ready)
		if errors.Is(err, exec.ErrClosed) {
			return nil, errClosedDuringExec(ctx)
		}
		return nil, spawnError(err)
	}
	if res.SessionID != 0 {
		p.mu.Lock()
		p.session = res.SessionID
		p.mu.Unlock()
		close(p.ready)
		id := res.SessionID
		res, err = p.waitSession(ctx, id)
		if err != nil {
			switch {
			case rpc.Cancelled(ctx):
				// Cancelled by the client: the process goes with its
				// request, as with terminate.
				_, _ = p.mgr.Terminate(id)
				return nil, errExecCancelled
			case rpc.ShuttingDown(ctx):
				_, _ = p.mgr.Terminate(id)
				return nil, errClosedDuringExec(ctx)
			}
			return nil, err
		}
	} else {
		close(p.ready)
		if err != nil {
			// Start was interrupted: by terminate or the shutdown
			// (answer with the exit), by the client's cancellation, or
			// because the connection ended.
			p.mu.Lock()
			terminated := p.terminated
			p.mu.Unlock()
			if !terminated {
				switch {
				case rpc.Cancelled(ctx):
					return nil, errExecCancelled // Start killed it
				case !rpc.ShuttingDown(ctx):
					return nil, err
				}
				// The shutdown killed it: its exit is the answer, as
				// when the exec manager closes under it.
			}
		}
		p.finish(res)
	}
	return p.response(res), nil
}

// waitSession waits for a session to end. Whoever learns the end first
// (this loop, a write, terminate) records it with finish.
func (p *execProc) waitSession(ctx context.Context, id int) (*exec.Result, error) {
	for {
		res, err := p.mgr.WriteStdin(ctx, id, "", time.Hour)
		switch {
		case err == nil && res != nil && !res.Running:
			p.finish(res)
		case errors.Is(err, exec.ErrUnknownSession):
			// A write or terminate collected the end first.
		case errors.Is(err, exec.ErrClosed):
			return nil, errClosedDuringExec(ctx)
		case err != nil:
			return nil, err
		default:
			continue // still running after an hour
		}
		select {
		case <-p.finished:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.final, nil
	}
}

// errExecCancelled answers a command/exec the client cancelled
// ($/cancelRequest).
var errExecCancelled = rpc.CancelledError("command/exec was cancelled: its process group was killed")

// errClosedDuringExec says why the manager was closed under a running
// request: the connection ended (no answer is due) or the server drains.
func errClosedDuringExec(ctx context.Context) error {
	if ctx.Err() != nil && !rpc.ShuttingDown(ctx) {
		return ctx.Err()
	}
	return protocol.Errorf(protocol.CodeInternalError, "command/exec process was killed: the server is shutting down")
}

// response builds the result: the exit code and the output that was not
// streamed.
func (p *execProc) response(res *exec.Result) *protocol.CommandExecResponse {
	out := &protocol.CommandExecResponse{ExitCode: int32(res.ExitCode)}
	if !p.spec.stream {
		p.mu.Lock()
		out.Stdout = p.out[0].buf.String()
		out.Stderr = p.out[1].buf.String()
		p.mu.Unlock()
	}
	return out
}

// awaitSession waits until the process is a session and returns its id;
// 0 means it ended before becoming one.
func (p *execProc) awaitSession(ctx context.Context) (int, error) {
	select {
	case <-p.ready:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.final != nil {
		return 0, nil
	}
	return p.session, nil
}

// write sends data to the process's input, then, when closeStdin is
// set, ends the input.
func (p *execProc) write(ctx context.Context, data []byte, closeStdin bool) error {
	id, err := p.awaitSession(ctx)
	if err != nil {
		return err
	}
	if id == 0 {
		return errNoActiveExec(p.id)
	}
	if len(data) > 0 {
		res, err := p.mgr.WriteStdin(ctx, id, string(data), 0)
		if errors.Is(err, exec.ErrUnknownSession) {
			return errNoActiveExec(p.id)
		}
		if err != nil {
			return protocol.Errorf(protocol.CodeInternalError, "command/exec/write: %v", err)
		}
		p.finish(res)
	}
	if closeStdin {
		err := p.mgr.CloseStdin(id)
		if errors.Is(err, exec.ErrUnknownSession) {
			return nil // it ended meanwhile
		}
		if err != nil {
			return protocol.Errorf(protocol.CodeInternalError, "command/exec/write: %v", err)
		}
	}
	return nil
}

// terminate kills the process group; the pending command/exec then
// answers with the exit.
func (p *execProc) terminate(ctx context.Context) error {
	if !p.interactive() {
		p.mu.Lock()
		p.terminated = true
		cancel := p.cancel
		p.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return nil
	}
	id, err := p.awaitSession(ctx)
	if err != nil || id == 0 {
		return err // id 0: it already ended; its answer is on the way
	}
	res, err := p.mgr.Terminate(id)
	if errors.Is(err, exec.ErrUnknownSession) {
		return nil // it ended meanwhile
	}
	if err != nil {
		return err
	}
	p.finish(res)
	return nil
}

// resize changes the terminal size.
func (p *execProc) resize(ctx context.Context, rows, cols uint16) error {
	if !p.spec.req.TTY {
		return protocol.InvalidRequest("command/exec/resize requires a process started with tty: true")
	}
	id, err := p.awaitSession(ctx)
	if err != nil {
		return err
	}
	if id == 0 {
		return errNoActiveExec(p.id)
	}
	err = p.mgr.Resize(id, rows, cols)
	if errors.Is(err, exec.ErrUnknownSession) {
		return errNoActiveExec(p.id)
	}
	if err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "command/exec/resize: %s", osErrorText(err))
	}
	return nil
}

// spawnError is the reference's answer for a command that did not start.
func spawnError(err error) error {
	return protocol.Errorf(protocol.CodeInternalError, "failed to spawn command: %s", osErrorText(err))
}
