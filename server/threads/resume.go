package threads

import (
	"context"
	"path/filepath"

	"github.com/agentd-dev/agentd/server/rpc"

	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/scope"
)

func (sv *service) threadResume(ctx context.Context, r *rpc.Request, p *protocol.ThreadResumeParams) (*protocol.ThreadResumeResponse, error) {
	c := r.Conn()
	id := p.ThreadID
	if err := readOnlyResume(c.Scope(), r.Method(), p); err != nil {
		return nil, err
	}
	if err := stalePath(sv.threads.get(id), p.Path); err != nil {
		return nil, err
	}
	if p.Path != nil && *p.Path != "" {
		// Only the session's metadata is read from a path: it names the
		// thread, which is then loaded as any stored thread.
		meta, err := sv.store.ReadMeta(ctx, *p.Path)
		if err != nil {
			return nil, pathErr(err)
		}
		id = meta.ID
	}
	if err := validApproval(p.ApprovalPolicy); err != nil {
		return nil, err
	}
	if p.History != nil {
		return nil, historyResume(sv.threads.get(id) != nil, id)
	}
	sv.refreshConfig(ctx, c)
	ov := overrides{model: p.Model, provider: p.ModelProvider, cwd: p.Cwd, approval: p.ApprovalPolicy, sandbox: p.Sandbox,
		config: p.Config, baseInstructions: p.BaseInstructions, developerInstructions: p.DeveloperInstructions,
		scope: c.Scope(), method: r.Method(), client: c.ClientInfo()}
	// Before any thread is read or loaded: a refused resume does nothing.
	ov, err := sv.permit(ov)
	if err != nil {
		return nil, err
	}
	if err := sv.requiredMCP(ctx); err != nil {
		return nil, err
	}
	for {
		if err := sv.threads.waitUnloaded(ctx, id); err != nil {
			return nil, err
		}
		sv.threads.loadMu.Lock()
		loaded := sv.threads.get(id)
		if loaded == nil {
			break // loaded below, loadMu held
		}
		sv.threads.loadMu.Unlock()
		if release, ok := loaded.hold(); ok {
			defer release()
			return sv.joinLoaded(ctx, r, loaded, ov, p)
		}
	}
	t, rt, st, err := sv.loadStored(ctx, id, ov)
	sv.threads.loadMu.Unlock()
	if err != nil {
		return nil, err
	}
	status := t.status()
	// The reference sends these before the result: the notice when every
	// turn is sent, then the thread's status.
	if !p.ExcludeTurns {
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
	}
	c.Notify("thread/status/changed", protocol.ThreadStatusChangedNotification{ThreadID: id, Status: status})
	// Then the result, its token usage, and after them whatever the
	// thread sends c.
	r.ResponseFirst()
	t.subscribe(c, false)
	wire := t.wire(false)
	if !p.ExcludeTurns {
		wire.Turns = wireTurns(rt.Turns, protocol.ItemsFull)
	}
	if u := rt.TokenUsage; u != nil {
		r.Then("thread/tokenUsage/updated", protocol.ThreadTokenUsageUpdatedNotification{ThreadID: id, TurnID: u.TurnID, TokenUsage: projection.TokenUsage(u.Info)})
	}
	out := sv.resumeResponse(t, wire, st)
	resumePages(out, id, rt.Turns, p.InitialTurnsPage)
	return out, nil
}

// joinLoaded subscribes c to a thread that is already loaded (a second
// client, or the same client after a reconnect), even before its first
// turn. Requests still pending are re-sent to it after the result. As in
// the reference, the settings the request gives (ov) do not change the
// loaded thread, running or idle: the result has the thread's own (a turn
// changes them with its overrides). They are still checked, so that a
// client is told what its token may not ask for.
func (sv *service) joinLoaded(ctx context.Context, r *rpc.Request, t *thread, ov overrides, p *protocol.ThreadResumeParams) (*protocol.ThreadResumeResponse, error) {
	c := r.Conn()
	st := t.settings(ctx, sv)
	if _, err := sv.apply(st, ov); err != nil {
		return nil, err
	}
	wire := t.wire(false)
	// Read with or without excludeTurns: the backwards cursors are
	// anchored on the last turn and item.
	turns, err := sv.turnsOf(ctx, t.id, t)
	if err != nil {
		return nil, err
	}
	if !p.ExcludeTurns {
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
		wire.Turns = wireTurns(turns, protocol.ItemsFull)
	}
	// The result first, then the requests still pending, then the
	// thread's events.
	r.ResponseFirst()
	t.subscribe(c, true)
	out := sv.resumeResponse(t, wire, st)
	resumePages(out, t.id, turns, p.InitialTurnsPage)
	return out, nil
}

// readOnlyResume refuses, to a read-scope client, a thread/resume that
// would do more than subscribe: any setting (on a stored thread, it
// changes the settings the thread is loaded with), history to load, or a
// rollout file to read.
func readOnlyResume(sc scope.Scope, method string, p *protocol.ThreadResumeParams) error {
	if sc.Allows(scope.Operate) {
		return nil
	}
	set := []struct {
		name string
		on   bool
	}{
		{"model", p.Model != nil}, {"modelProvider", p.ModelProvider != nil}, {"serviceTier", p.ServiceTier != nil},
		{"cwd", p.Cwd != nil}, {"approvalPolicy", p.ApprovalPolicy != nil}, {"approvalsReviewer", p.ApprovalsReviewer != nil},
		{"sandbox", p.Sandbox != nil}, {"config", len(p.Config) > 0}, {"baseInstructions", p.BaseInstructions != nil},
		{"developerInstructions", p.DeveloperInstructions != nil}, {"personality", p.Personality != nil},
		{"history", len(p.History) > 0}, {"path", p.Path != nil}, {"permissions", p.Permissions != nil},
		{"runtimeWorkspaceRoots", len(p.RuntimeWorkspaceRoots) > 0},
	}
	for _, f := range set {
		if f.on {
			return scope.Deny(sc, method, "with "+f.name+" (read may only subscribe)")
		}
	}
	return nil
}

// historyResume is the answer to a thread/resume with history (even an
// empty one). The reference refuses it for a loaded thread, idle or not,
// with this text; for a thread that is not loaded it starts a new thread
// seeded with the history, which agentd does not do: it says so rather
// than resume the stored thread as if no history had been given.
func historyResume(loaded bool, id string) error {
	if loaded {
		return protocol.InvalidRequest("cannot resume thread %s with history while it is already running", protocol.Cut(id))
	}
	return protocol.InvalidRequest("thread/resume with history is not supported")
}

// stalePath refuses, as the reference does, a resume of a loaded thread t
// (nil: not loaded) with a path that is not the file t records into.
func stalePath(t *thread, path *string) error {
	if t == nil || path == nil || *path == "" {
		return nil
	}
	active := ""
	if t.rec != nil {
		active = t.rec.Path()
	}
	if filepath.Clean(*path) == filepath.Clean(active) {
		return nil
	}
	return protocol.InvalidRequest("cannot resume running thread %s with stale path: requested `%s`, active `%s`", t.id, protocol.Cut(*path), active)
}

// resumePages fills a thread/resume result's paging: the backwards cursors
// and, when asked for, the first page of turns, which is what
// thread/turns/list gives with the same limit, view and direction and no
// cursor, as in the reference.
func resumePages(out *protocol.ThreadResumeResponse, id string, turns []rollout.Turn, first *protocol.ThreadResumeInitialTurnsPageParams) {
	out.TurnsBackwardsCursor, out.ItemsBackwardsCursor = backCursors(id, turns)
	if first != nil {
		out.InitialTurnsPage = turnsPage(id, turns, nil, first.Limit, first.ItemsView, first.SortDirection)
	}
}
