package utility

import (
	"context"
	"encoding/base64"
	"os"
	"time"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/tools/exec"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/scope"
)

// command/exec defaults, the reference's.
const (
	// commandExecTimeout applies when neither timeoutMs nor
	// disableTimeout is given.
	commandExecTimeout = 10 * time.Second
	// commandExecOutputCap bounds each output stream unless
	// outputBytesCap or disableOutputCap says otherwise.
	commandExecOutputCap = 1 << 20
)

// commandExec runs a command outside any thread and answers once it has
// ended, after all its output notifications.
func (u *utility) commandExec(ctx context.Context, r *rpc.Request, p *protocol.CommandExecParams) (*protocol.CommandExecResponse, error) {
	c := r.Conn()
	// Below admin, a client may not ask to run without agentd's sandbox;
	// the configured sandbox_mode applies when it asks for none.
	if perr := scope.SandboxPolicy(c.Scope(), r.Method(), p.SandboxPolicy); perr != nil {
		return nil, perr
	}
	spec, err := u.execSpec(p)
	if err != nil {
		return nil, err
	}
	if err := u.boundExec(c.Scope(), r.Method(), p, spec.req.Cwd); err != nil {
		return nil, err
	}
	cu, err := u.forConn(c)
	if err != nil {
		return nil, err
	}
	table, err := cu.execTable()
	if err != nil {
		return nil, err
	}
	proc := newExecProc(c, table.mgr, spec)
	if err := table.add(proc); err != nil {
		return nil, err
	}
	u.execAdded()
	defer table.remove(proc)
	return proc.run(ctx)
}

// execSpec validates command/exec params, in the reference's order and
// with its messages, and resolves cwd, environment and sandbox.
func (u *utility) execSpec(p *protocol.CommandExecParams) (execSpec, error) {
	var s execSpec
	if len(p.Command) == 0 {
		return s, protocol.InvalidRequest("command must not be empty")
	}
	if p.TimeoutMs != nil && p.DisableTimeout {
		return s, protocol.InvalidRequest("command/exec cannot set both timeoutMs and disableTimeout")
	}
	if p.OutputBytesCap != nil && p.DisableOutputCap {
		return s, protocol.InvalidRequest("command/exec cannot set both outputBytesCap and disableOutputCap")
	}
	if p.TimeoutMs != nil && *p.TimeoutMs < 0 {
		return s, protocol.InvalidRequest("command/exec timeoutMs must be non-negative, got %d", *p.TimeoutMs)
	}
	// A terminal is one stream in both directions.
	s.stream = p.StreamStdoutStderr || p.TTY
	s.stdin = p.StreamStdin || p.TTY
	if (s.stream || s.stdin) && p.ProcessID == nil {
		return s, protocol.InvalidRequest("command/exec tty or streaming requires a client-supplied processId")
	}
	if p.Size != nil && !p.TTY {
		return s, protocol.InvalidRequest("command/exec size is only valid when tty is true")
	}
	if p.Size != nil && (p.Size.Rows == 0 || p.Size.Cols == 0) {
		return s, protocol.InvalidRequest("command/exec size must have non-zero rows and cols")
	}
	if p.PermissionProfile != nil {
		return s, protocol.InvalidRequest("command/exec permissionProfile is not supported by agentd; use sandboxPolicy")
	}
	if p.ProcessID != nil {
		s.id = *p.ProcessID
	}

	cwd := u.cwd
	if p.Cwd != nil {
		var err error
		if cwd, err = config.ResolveDir(*p.Cwd, u.cwd); err != nil {
			return s, protocol.InvalidRequest("cwd %v", err)
		}
	}
	// Without a cwd the command runs in the daemon's directory, which
	// must then be in a root too.
	if err := u.roots().check("command/exec", cwd, true); err != nil {
		return s, err
	}
	s.req = exec.Request{Argv: p.Command, Cwd: cwd, TTY: p.TTY, BaseEnv: u.config().ShellEnv.Environ(os.Environ(), "")}
	if p.Size != nil {
		s.req.Rows, s.req.Cols = p.Size.Rows, p.Size.Cols
	}
	for k, v := range p.Env {
		if v == nil {
			s.req.UnsetEnv = append(s.req.UnsetEnv, k)
			continue
		}
		if s.req.Env == nil {
			s.req.Env = map[string]string{}
		}
		s.req.Env[k] = *v
	}

	switch {
	case p.DisableTimeout:
	case p.TimeoutMs != nil:
		// timeoutMs 0 means no time at all: the command is killed at
		// once and reports the timeout's exit code.
		s.req.Timeout = max(time.Duration(*p.TimeoutMs)*time.Millisecond, time.Nanosecond)
	default:
		s.req.Timeout = commandExecTimeout
	}
	switch {
	case p.DisableOutputCap:
		s.outputCap = -1
	case p.OutputBytesCap != nil:
		s.outputCap = int(min(*p.OutputBytesCap, uint(1<<62)))
	default:
		s.outputCap = commandExecOutputCap
	}

	sp := u.config().Sandbox
	if p.SandboxPolicy != nil {
		sp = projection.CoreSandboxPolicy(*p.SandboxPolicy)
	}
	if sp.Sandboxed() {
		// Never run unsandboxed what should be sandboxed: when this
		// host cannot sandbox, the command does not run.
		l, err := policy.NewLauncher(sp)
		if err != nil {
			return s, spawnError(err)
		}
		s.req.Sandbox = l
	}
	return s, nil
}

// boundExec refuses, below admin, a command/exec sandbox wider than the
// configured sandbox_mode, and a cwd that the sandbox would make writable
// when that would make agentd's home writable.
func (u *utility) boundExec(sc scope.Scope, method string, p *protocol.CommandExecParams, cwd string) error {
	if sc.Allows(scope.Admin) {
		return nil
	}
	cfg := u.config()
	limit := projection.SandboxPolicy(cfg.Sandbox)
	sp := limit
	if p.SandboxPolicy != nil {
		sp = *p.SandboxPolicy
		if perr := scope.Sandbox(sc, method, sp, limit, cwd); perr != nil {
			return perr
		}
	}
	if perr := scope.HomeCwd(sc, method, cwd, cfg.Home, sp); perr != nil {
		return perr
	}
	return nil
}

// commandExecWrite writes to a streaming process's input and may close it.
func (u *utility) commandExecWrite(ctx context.Context, r *rpc.Request, p *protocol.CommandExecWriteParams) (*protocol.Empty, error) {
	c := r.Conn()
	proc, err := u.lookupExec(ctx, c, p.ProcessID)
	if err != nil {
		return nil, err
	}
	if !proc.spec.stdin {
		return nil, protocol.InvalidRequest("command/exec/write requires a process started with streamStdin: true or tty: true")
	}
	var data []byte
	if p.DeltaBase64 != nil {
		if data, err = base64.StdEncoding.DecodeString(*p.DeltaBase64); err != nil {
			return nil, protocol.InvalidRequest("command/exec/write requires valid base64 deltaBase64: %v", err)
		}
	}
	if err := proc.write(ctx, data, p.CloseStdin); err != nil {
		return nil, err
	}
	return &protocol.Empty{}, nil
}

// commandExecTerminate kills a process; its command/exec then answers.
func (u *utility) commandExecTerminate(ctx context.Context, r *rpc.Request, p *protocol.CommandExecTerminateParams) (*protocol.Empty, error) {
	c := r.Conn()
	proc, err := u.lookupExec(ctx, c, p.ProcessID)
	if err != nil {
		return nil, err
	}
	if err := proc.terminate(ctx); err != nil {
		return nil, err
	}
	return &protocol.Empty{}, nil
}

// commandExecResize changes a terminal's size.
func (u *utility) commandExecResize(ctx context.Context, r *rpc.Request, p *protocol.CommandExecResizeParams) (*protocol.Empty, error) {
	c := r.Conn()
	if p.Size.Rows == 0 || p.Size.Cols == 0 {
		return nil, protocol.InvalidRequest("command/exec/resize size must have non-zero rows and cols")
	}
	proc, err := u.lookupExec(ctx, c, p.ProcessID)
	if err != nil {
		return nil, err
	}
	if err := proc.resize(ctx, p.Size.Rows, p.Size.Cols); err != nil {
		return nil, err
	}
	return &protocol.Empty{}, nil
}

// execLookupGrace is how long write, terminate and resize wait for an
// unknown process id to appear. Requests of a connection are handled
// concurrently, so a command/exec and a write sent right after it may
// reach their handlers in either order; a client that pipelines them must
// still find its process.
const execLookupGrace = 250 * time.Millisecond

// lookupExec finds a running process of c by its client id, waiting up to
// execLookupGrace for it to be registered. Ids are connection-scoped:
// another connection's processes are not found.
func (u *utility) lookupExec(ctx context.Context, c *rpc.Conn, id string) (*execProc, error) {
	timer := time.NewTimer(execLookupGrace)
	defer timer.Stop()
	for {
		u.mu.Lock()
		cu, added := u.conns[c], u.execAddedCh
		u.mu.Unlock()
		if cu != nil {
			cu.mu.Lock()
			table := cu.execs
			cu.mu.Unlock()
			if table != nil {
				if p, err := table.get(id); err == nil {
					return p, nil
				}
			}
		}
		select {
		case <-added:
		case <-timer.C:
			return nil, errNoActiveExec(id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// execAdded wakes the lookups waiting for a process id.
func (u *utility) execAdded() {
	u.mu.Lock()
	close(u.execAddedCh)
	u.execAddedCh = make(chan struct{})
	u.mu.Unlock()
}
