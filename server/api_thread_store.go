package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	uuidpkg "github.com/google/uuid"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

// registerThreadStoreAPI registers the thread methods that work on stored
// threads: resume, fork, read, list, paging, archive, delete, rename, and
// the history operations.
func (a *app) registerThreadStoreAPI() {
	a.s.Handle("thread/resume", a.threadResume)
	a.s.Handle("thread/fork", a.threadFork)
	a.s.Handle("thread/read", a.threadRead)
	a.s.Handle("thread/list", a.threadList)
	a.s.Handle("thread/turns/list", a.threadTurnsList)
	a.s.Handle("thread/items/list", a.threadItemsList)
	a.s.Handle("thread/archive", a.threadArchive)
	a.s.Handle("thread/unarchive", a.threadUnarchive)
	a.s.Handle("thread/delete", a.threadDelete)
	a.s.Handle("thread/name/set", a.threadNameSet)
	a.s.Handle("thread/compact/start", a.threadCompact)
	a.s.Handle("thread/shellCommand", a.threadShellCommand)
	a.s.Handle("thread/inject_items", a.threadInjectItems)
	a.s.Handle("thread/revert", a.threadRevert)
}

// hydrationNotice is sent before a result that carries every turn, as
// the reference does for paginated threads.
const hydrationNotice = "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`."

// storeErr maps store errors to the reference's texts.
func storeErr(id string, err error) error {
	switch {
	case errors.Is(err, rollout.ErrNotFound):
		return protocol.InvalidRequest("no rollout found for thread id %s", id)
	case errors.Is(err, rollout.ErrInvalidCursor):
		return protocol.InvalidRequest("%v", err)
	}
	return err
}

// readThread rebuilds a thread from its rollout. A loaded thread is read
// with its running turn, so that turn shows as in progress.
func (a *app) readThread(ctx context.Context, id string, t *thread) (*rollout.Thread, error) {
	opts := rollout.ReadOptions{SkipHistory: true}
	if t != nil {
		t.mu.Lock()
		opts.RunningTurnID = t.proj.ActiveTurnID()
		t.mu.Unlock()
	}
	return a.store.Read(ctx, id, opts)
}

// turnsOf returns a loaded or stored thread's turns; a loaded thread that
// has no file yet has none.
func (a *app) turnsOf(ctx context.Context, id string, t *thread) ([]rollout.Turn, error) {
	if t != nil && (t.rec == nil || !t.rec.Materialized()) {
		return nil, nil
	}
	rt, err := a.readThread(ctx, id, t)
	if err != nil {
		return nil, storeErr(id, err)
	}
	return rt.Turns, nil
}

// wireTurns maps rebuilt turns with the given items view.
func wireTurns(turns []rollout.Turn, view protocol.TurnItemsView) protocol.List[protocol.Turn] {
	out := make(protocol.List[protocol.Turn], 0, len(turns))
	for _, rt := range turns {
		out = append(out, wireTurn(rt, view))
	}
	return out
}

func wireTurn(rt rollout.Turn, view protocol.TurnItemsView) protocol.Turn {
	id := rt.ID
	t := protocol.Turn{ID: id, RootTurnID: &id, Items: protocol.List[protocol.ThreadItem]{}, ItemsView: view, Status: protocol.TurnStatus(rt.Status)}
	if rt.Error != nil {
		e := projection.TurnError(*rt.Error)
		t.Error = &e
	}
	if !rt.StartedAt.IsZero() {
		s := rt.StartedAt.Unix()
		t.StartedAt = &s
	}
	if !rt.CompletedAt.IsZero() {
		c := rt.CompletedAt.Unix()
		d := rt.Duration.Milliseconds()
		t.CompletedAt, t.DurationMs = &c, &d
	}
	switch view {
	case protocol.ItemsFull:
		for i, it := range rt.Items {
			t.Items = append(t.Items, wireItem(it, rt.ItemTimes, i))
		}
	case protocol.ItemsSummary:
		last := -1
		for i, it := range rt.Items {
			if _, ok := it.(core.AgentMessageItem); ok {
				last = i
			}
		}
		for i, it := range rt.Items {
			if _, ok := it.(core.UserMessageItem); ok || i == last {
				t.Items = append(t.Items, wireItem(it, rt.ItemTimes, i))
			}
		}
	}
	return t
}

func wireItem(it core.TurnItem, times []rollout.ItemTimes, i int) protocol.ThreadItem {
	var s, c int64
	if i < len(times) {
		if !times[i].StartedAt.IsZero() {
			s = times[i].StartedAt.UnixMilli()
		}
		if !times[i].CompletedAt.IsZero() {
			c = times[i].CompletedAt.UnixMilli()
		}
	}
	return projection.Item(it, s, c)
}

// metaOf is the thread metadata of a rebuilt thread.
func metaOf(rt *rollout.Thread) threadMeta {
	m := threadMeta{
		createdAt: rt.CreatedAt, updatedAt: rt.UpdatedAt, cwd: rt.Meta.Cwd, model: rt.Meta.Model,
		provider: rt.Meta.ModelProvider, effort: rt.Meta.Effort, name: rt.Name, preview: rt.Preview,
		path: rt.Path, originator: rt.Meta.Originator, forkedFrom: rt.Meta.ForkedFromID, gitInfo: rt.Meta.Git,
	}
	if tc := rt.TurnContext; tc != nil {
		m.cwd, m.model, m.effort = tc.Cwd, tc.Model, tc.Effort
	}
	return m
}

// storedSettings are the settings a stored thread resumes with: its last
// turn's, over the daemon's defaults.
func (a *app) storedSettings(rt *rollout.Thread) threadSettings {
	st := a.defaultSettings()
	if p, ok := a.provider(rt.Meta.ModelProvider); ok {
		st.provider = p
	}
	st.cwd, st.model, st.effort = rt.Meta.Cwd, rt.Meta.Model, rt.Meta.Effort
	st.baseInstructions, st.developerInstructions = rt.Meta.BaseInstructions, rt.Meta.DeveloperInstructions
	if tc := rt.TurnContext; tc != nil {
		st.cwd, st.model, st.effort, st.summary = tc.Cwd, tc.Model, tc.Effort, tc.Summary
		if tc.ApprovalPolicy != "" {
			st.approval = tc.ApprovalPolicy
		}
		if tc.Sandbox.Mode != "" {
			st.sandbox = tc.Sandbox
		}
	}
	if st.model == "" {
		st.model = a.cfg.Model
	}
	return st
}

// settingsOf returns the settings a loaded thread runs its next turn with.
func (t *thread) settings(a *app) threadSettings {
	tc := t.sess.TurnContext()
	st := a.defaultSettings()
	st.cwd, st.model, st.effort, st.summary, st.approval, st.sandbox = tc.Cwd, tc.Model, tc.Effort, tc.Summary, tc.ApprovalPolicy, tc.Sandbox
	t.mu.Lock()
	if p, ok := a.provider(t.meta.provider); ok {
		st.provider = p
	}
	t.mu.Unlock()
	return st
}

func (a *app) resumeResponse(th protocol.Thread, st threadSettings) protocol.ThreadResumeResponse {
	s := a.startResponse(th, st)
	return protocol.ThreadResumeResponse{
		Thread: s.Thread, Model: s.Model, ModelProvider: s.ModelProvider, ServiceTier: s.ServiceTier,
		DisabledPluginIDs: s.DisabledPluginIDs, Cwd: s.Cwd, RuntimeWorkspaceRoots: s.RuntimeWorkspaceRoots,
		InstructionSources: s.InstructionSources, ApprovalPolicy: s.ApprovalPolicy, ApprovalsReviewer: s.ApprovalsReviewer,
		Sandbox: s.Sandbox, ReasoningEffort: s.ReasoningEffort, MultiAgentMode: s.MultiAgentMode,
	}
}

func (a *app) threadResume(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadResumeParams)
	id := p.ThreadID
	if p.Path != nil && *p.Path != "" {
		rt, err := rollout.ReadThread(*p.Path, rollout.ReadOptions{SkipHistory: true})
		if err != nil {
			return nil, protocol.InvalidRequest("no rollout found at path %s: %v", *p.Path, err)
		}
		id = rt.Meta.ID
	}
	if err := validApproval(p.ApprovalPolicy); err != nil {
		return nil, err
	}
	ov := overrides{model: p.Model, provider: p.ModelProvider, cwd: p.Cwd, approval: p.ApprovalPolicy, sandbox: p.Sandbox,
		config: p.Config, baseInstructions: p.BaseInstructions, developerInstructions: p.DeveloperInstructions}
	a.loadMu.Lock()
	if t := a.threads.get(id); t != nil {
		a.loadMu.Unlock()
		return a.joinLoaded(ctx, c, t, ov, p.ExcludeTurns)
	}
	t, rt, st, err := a.loadStored(ctx, id, ov)
	a.loadMu.Unlock()
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
	release := t.hold()
	t.subscribeQuiet(c)
	wire := t.wire(false)
	if !p.ExcludeTurns {
		wire.Turns = wireTurns(rt.Turns, protocol.ItemsFull)
	}
	resp := a.resumeResponse(wire, st)
	usage := rt.TokenUsage
	c.AfterResponse(ctx, func() {
		if usage != nil {
			c.Notify("thread/tokenUsage/updated", protocol.ThreadTokenUsageUpdatedNotification{ThreadID: id, TurnID: usage.TurnID, TokenUsage: projection.TokenUsage(usage.Info)})
		}
		t.replayPending(c)
		release()
	})
	return resp, nil
}

// loadStored loads a stored thread: its history for the model, its
// settings (the last turn's, changed by ov), its rollout reopened.
func (a *app) loadStored(ctx context.Context, id string, ov overrides) (*thread, *rollout.Thread, threadSettings, error) {
	if _, err := checkID(id); err != nil {
		return nil, nil, threadSettings{}, protocol.InvalidRequest("no rollout found for thread id %s", id)
	}
	rt, err := a.store.Read(ctx, id, rollout.ReadOptions{})
	if err != nil {
		return nil, nil, threadSettings{}, storeErr(id, err)
	}
	st, err := a.apply(a.storedSettings(rt), ov)
	if err != nil {
		return nil, nil, st, err
	}
	rec, err := a.store.Reopen(id)
	if err != nil {
		return nil, nil, st, storeErr(id, err)
	}
	status := protocol.StatusIdle()
	if rt.LastTurnFailed {
		status = protocol.StatusSystemError()
	}
	meta := metaOf(rt)
	meta.cwd, meta.model, meta.effort, meta.provider = st.cwd, st.model, st.effort, st.provider.ID
	t, err := a.load(id, st, nil, rec, meta, rt.History, status)
	if err != nil {
		rec.Close(ctx)
		return nil, nil, st, err
	}
	return t, rt, st, nil
}

// joinLoaded subscribes c to a thread that is already loaded (a second
// client, or the same client after a reconnect), even before its first
// turn. Requests still pending are re-sent to it after the result.
func (a *app) joinLoaded(ctx context.Context, c *Conn, t *thread, ov overrides, excludeTurns bool) (any, error) {
	st, err := a.apply(t.settings(a), ov)
	if err != nil {
		return nil, err
	}
	o := core.TurnOverrides{Cwd: &st.cwd, Model: &st.model, Effort: &st.effort, Summary: &st.summary, ApprovalPolicy: &st.approval, Sandbox: &st.sandbox}
	if _, err := t.sess.Call(ctx, core.OpOverrideTurnContext{Overrides: o}); err != nil {
		return nil, rejectErr(err)
	}
	wire := t.wire(false)
	if !excludeTurns {
		turns, err := a.turnsOf(ctx, t.id, t)
		if err != nil {
			return nil, err
		}
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
		wire.Turns = wireTurns(turns, protocol.ItemsFull)
	}
	release := t.hold()
	t.subscribeQuiet(c)
	c.AfterResponse(ctx, func() {
		t.replayPending(c)
		release()
	})
	return a.resumeResponse(wire, st), nil
}

func (a *app) threadFork(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadForkParams)
	src := a.threads.get(p.ThreadID)
	if src != nil && (src.rec == nil || !src.rec.Materialized()) {
		return nil, protocol.InvalidRequest("thread %s has no turns to fork", p.ThreadID)
	}
	if err := validApproval(p.ApprovalPolicy); err != nil {
		return nil, err
	}
	opts := rollout.ForkOptions{SourceID: p.ThreadID, Adjust: func(m *rollout.SessionMeta) { m.Originator = c.ClientInfo().Name }}
	if p.LastTurnID != nil {
		opts.LastTurnID = *p.LastTurnID
	}
	rt, err := a.store.Fork(ctx, opts)
	if err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	id := rt.Meta.ID
	st, err := a.apply(a.storedSettings(rt), overrides{model: p.Model, provider: p.ModelProvider, cwd: p.Cwd, approval: p.ApprovalPolicy,
		sandbox: p.Sandbox, config: p.Config, baseInstructions: p.BaseInstructions, developerInstructions: p.DeveloperInstructions})
	if err != nil {
		a.store.Delete(id)
		return nil, err
	}
	full, err := a.store.Read(ctx, id, rollout.ReadOptions{})
	if err != nil {
		return nil, storeErr(id, err)
	}
	meta := metaOf(full)
	meta.cwd, meta.model, meta.effort, meta.provider = st.cwd, st.model, st.effort, st.provider.ID
	var rec *rollout.Recorder
	if p.Ephemeral {
		// An ephemeral fork keeps the copied history in memory only.
		if err := a.store.Delete(id); err != nil {
			return nil, err
		}
		meta.ephemeral, meta.path = true, ""
	} else if rec, err = a.store.Reopen(id); err != nil {
		return nil, storeErr(id, err)
	}
	status := protocol.StatusIdle()
	if full.LastTurnFailed {
		status = protocol.StatusSystemError()
	}
	t, err := a.load(id, st, nil, rec, meta, full.History, status)
	if err != nil {
		return nil, err
	}
	t.subscribe(c)
	wire := t.wire(false)
	started := wire
	if !p.ExcludeTurns {
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
		wire.Turns = wireTurns(full.Turns, protocol.ItemsFull)
	}
	usage := full.TokenUsage
	c.AfterResponse(ctx, func() {
		if usage != nil {
			c.Notify("thread/tokenUsage/updated", protocol.ThreadTokenUsageUpdatedNotification{ThreadID: id, TurnID: usage.TurnID, TokenUsage: projection.TokenUsage(usage.Info)})
		}
		c.Notify("thread/started", protocol.ThreadStartedNotification{Thread: started})
	})
	return a.startResponse(wire, st), nil
}

func (a *app) threadRead(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadReadParams)
	notLoaded := protocol.InvalidRequest("thread not loaded: %s", p.ThreadID)
	if t := a.threads.get(p.ThreadID); t != nil {
		th := t.wire(false)
		if p.IncludeTurns {
			turns, err := a.turnsOf(ctx, t.id, t)
			if err != nil {
				return nil, err
			}
			c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
			th.Turns = wireTurns(turns, protocol.ItemsFull)
		}
		return protocol.ThreadReadResponse{Thread: th}, nil
	}
	if _, err := checkID(p.ThreadID); err != nil {
		return nil, notLoaded
	}
	rt, err := a.readThread(ctx, p.ThreadID, nil)
	if err != nil {
		if errors.Is(err, rollout.ErrNotFound) {
			return nil, notLoaded
		}
		return nil, err
	}
	th := wireThread(p.ThreadID, metaOf(rt), protocol.StatusNotLoaded())
	if p.IncludeTurns {
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
		th.Turns = wireTurns(rt.Turns, protocol.ItemsFull)
	}
	return protocol.ThreadReadResponse{Thread: th}, nil
}

// interactiveSources are what thread/list shows when the client names no
// source kinds (the reference lists interactive threads only).
var interactiveSources = []string{"cli", "vscode", "exec", "appServer"}

func (a *app) threadList(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadListParams)
	if len(p.Originators) > 0 {
		return nil, protocol.InvalidRequest("originators filter is not supported by a local server")
	}
	opts := rollout.ListOptions{ModelProviders: p.ModelProviders, SourceKinds: interactiveSources}
	if p.Cursor != nil {
		opts.Cursor = *p.Cursor
	}
	if p.Limit != nil {
		opts.Limit = int(min(*p.Limit, rollout.MaxListLimit))
	}
	if p.SortKey != nil {
		opts.SortKey = string(*p.SortKey)
	}
	if p.SortDirection != nil {
		opts.Direction = string(*p.SortDirection)
	}
	if p.Archived != nil {
		opts.Archived = *p.Archived
	}
	if p.Cwd != nil {
		opts.Cwd = p.Cwd.Paths
	}
	if p.SearchTerm != nil {
		opts.SearchTerm = *p.SearchTerm
	}
	if len(p.SourceKinds) > 0 {
		opts.SourceKinds = opts.SourceKinds[:0:0]
		for _, k := range p.SourceKinds {
			opts.SourceKinds = append(opts.SourceKinds, string(k))
		}
	}
	page, next, back, err := a.store.List(opts)
	if err != nil {
		// An invalid cursor or sort key: the client's mistake.
		return nil, protocol.InvalidRequest("%v", err)
	}
	excluded := map[string]bool{}
	for _, id := range p.ExcludedThreadIDs {
		excluded[id] = true
	}
	out := protocol.ThreadListResponse{Data: protocol.List[protocol.Thread]{}, NextCursor: optString(next), BackwardsCursor: optString(back)}
	for _, s := range page {
		if excluded[s.ID] {
			continue
		}
		status := protocol.StatusNotLoaded()
		if t := a.threads.get(s.ID); t != nil {
			status = t.status()
		}
		m := threadMeta{createdAt: s.CreatedAt, updatedAt: s.UpdatedAt, cwd: s.Cwd, model: s.Model, provider: s.ModelProvider,
			effort: s.Effort, name: s.Name, preview: s.Preview, path: s.Path, originator: s.Originator, forkedFrom: s.ForkedFromID, gitInfo: s.Git}
		out.Data = append(out.Data, wireThread(s.ID, m, status))
	}
	return out, nil
}

// page cuts items into a page after (or, with before, up to) the cursor
// position. Cursors are positions, opaque to clients.
func page[T any](items []T, cursor *string, limit *uint32, desc bool) (out []T, next, back *string, err error) {
	n := 25
	if limit != nil && *limit > 0 {
		n = int(min(*limit, 100))
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
		if desc {
			order[i] = len(items) - 1 - i
		}
	}
	start := 0
	if cursor != nil && *cursor != "" {
		v, perr := strconv.Atoi(*cursor)
		if perr != nil || v < 0 || v > len(items) {
			return nil, nil, nil, protocol.InvalidRequest("invalid cursor: %s", *cursor)
		}
		start = v
	}
	end := min(start+n, len(items))
	for _, i := range order[start:end] {
		out = append(out, items[i])
	}
	if end < len(items) {
		s := strconv.Itoa(end)
		next = &s
	}
	if start > 0 {
		s := strconv.Itoa(max(start-n, 0))
		back = &s
	}
	return out, next, back, nil
}

func (a *app) threadTurnsList(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadTurnsListParams)
	turns, err := a.storedTurns(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	view := protocol.ItemsSummary
	if p.ItemsView != nil {
		view = *p.ItemsView
	}
	desc := p.SortDirection == nil || *p.SortDirection == protocol.SortDirection("desc")
	pg, next, back, err := page(turns, p.Cursor, p.Limit, desc)
	if err != nil {
		return nil, err
	}
	return protocol.TurnsPage{Data: wireTurns(pg, view), NextCursor: next, BackwardsCursor: back}, nil
}

// storedTurns returns the turns of a loaded or stored thread.
func (a *app) storedTurns(ctx context.Context, id string) ([]rollout.Turn, error) {
	t := a.threads.get(id)
	if t == nil {
		if _, err := checkID(id); err != nil {
			return nil, protocol.InvalidRequest("no rollout found for thread id %s", id)
		}
	}
	return a.turnsOf(ctx, id, t)
}

func (a *app) threadItemsList(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadItemsListParams)
	turns, err := a.storedTurns(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	var entries []protocol.ThreadItemEntry
	for _, rt := range turns {
		if p.TurnID != nil && *p.TurnID != rt.ID {
			continue
		}
		for i, it := range rt.Items {
			w := wireItem(it, rt.ItemTimes, i)
			entries = append(entries, protocol.ThreadItemEntry{TurnID: rt.ID, Item: w, StartedAtMs: w.StartedAtMs, CompletedAtMs: w.CompletedAtMs})
		}
	}
	desc := p.SortDirection != nil && *p.SortDirection == protocol.SortDirection("desc")
	var cursor *string
	if p.Cursor != nil {
		if p.Cursor.ItemID != "" {
			pos := -1
			for i, e := range entries {
				if e.Item.ID() == p.Cursor.ItemID {
					pos = i
				}
			}
			if pos < 0 {
				return nil, protocol.InvalidRequest("invalid cursor: item %s not found", p.Cursor.ItemID)
			}
			if desc {
				pos = len(entries) - 1 - pos
			}
			s := strconv.Itoa(pos + 1)
			cursor = &s
		} else {
			cursor = &p.Cursor.Cursor
		}
	}
	pg, next, back, err := page(entries, cursor, p.Limit, desc)
	if err != nil {
		return nil, err
	}
	return protocol.ThreadItemsListResponse{Data: pg, NextCursor: next, BackwardsCursor: back}, nil
}

// unload stops a loaded thread (before archive or delete): its subscribers
// see it become notLoaded.
func (a *app) unload(ctx context.Context, t *thread) {
	a.threads.remove(t)
	// The session's last events (a turn it aborts) come first; notLoaded
	// is the last status the subscribers see.
	t.shutdown(ctx)
	t.notifySubscribers("thread/status/changed", protocol.ThreadStatusChangedNotification{ThreadID: t.id, Status: protocol.StatusNotLoaded()})
}

func (a *app) threadArchive(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadIDParams)
	if _, err := a.store.Find(p.ThreadID); err != nil {
		if t := a.threads.get(p.ThreadID); t == nil || t.rec == nil || t.rec.Materialized() {
			return nil, storeErr(p.ThreadID, err)
		}
		return nil, protocol.InvalidRequest("thread %s has no turns to archive", p.ThreadID)
	}
	if t := a.threads.get(p.ThreadID); t != nil {
		a.unload(ctx, t)
	}
	if _, err := a.store.Archive(p.ThreadID); err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	c.AfterResponse(ctx, func() { a.s.Broadcast("thread/archived", protocol.ThreadIDNotification{ThreadID: p.ThreadID}) })
	return protocol.Empty{}, nil
}

func (a *app) threadUnarchive(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadIDParams)
	if _, err := a.store.Unarchive(p.ThreadID); err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	rt, err := a.readThread(ctx, p.ThreadID, nil)
	if err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	th := wireThread(p.ThreadID, metaOf(rt), protocol.StatusNotLoaded())
	c.AfterResponse(ctx, func() { a.s.Broadcast("thread/unarchived", protocol.ThreadIDNotification{ThreadID: p.ThreadID}) })
	return protocol.ThreadUnarchiveResponse{Thread: th}, nil
}

func (a *app) threadDelete(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadIDParams)
	t := a.threads.get(p.ThreadID)
	if _, err := a.store.Find(p.ThreadID); err != nil {
		if t == nil {
			return nil, storeErr(p.ThreadID, err)
		}
		a.unload(ctx, t) // a thread without a file is deleted by unloading it
	} else {
		if t != nil {
			a.unload(ctx, t)
		}
		if err := a.store.Delete(p.ThreadID); err != nil {
			return nil, storeErr(p.ThreadID, err)
		}
	}
	c.AfterResponse(ctx, func() { a.s.Broadcast("thread/deleted", protocol.ThreadIDNotification{ThreadID: p.ThreadID}) })
	return protocol.Empty{}, nil
}

func (a *app) threadNameSet(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadSetNameParams)
	if t := a.threads.get(p.ThreadID); t != nil {
		if t.rec != nil {
			if err := t.rec.SetName(ctx, p.Name); err != nil {
				return nil, err
			}
		}
		t.mu.Lock()
		t.meta.name = p.Name
		t.mu.Unlock()
	} else if err := a.store.SetName(ctx, p.ThreadID, p.Name); err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	c.AfterResponse(ctx, func() {
		a.s.Broadcast("thread/name/updated", protocol.ThreadNameUpdatedNotification{ThreadID: p.ThreadID, ThreadName: optString(p.Name)})
	})
	return protocol.Empty{}, nil
}

func (a *app) threadCompact(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadIDParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	release := t.hold()
	if _, err := t.sess.Call(ctx, core.OpCompact{}); err != nil {
		release()
		return nil, rejectErr(err)
	}
	c.AfterResponse(ctx, release)
	return protocol.Empty{}, nil
}

func (a *app) threadShellCommand(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadShellCommandParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	if p.Command == "" {
		return nil, protocol.InvalidRequest("command must not be empty")
	}
	op := core.OpShellCommand{Command: p.Command}
	if p.TimeoutMs != nil && *p.TimeoutMs > 0 {
		op.Timeout = time.Duration(*p.TimeoutMs) * time.Millisecond
	}
	release := t.hold()
	if _, err := t.sess.Call(ctx, op); err != nil {
		release()
		return nil, rejectErr(err)
	}
	c.AfterResponse(ctx, release)
	return protocol.Empty{}, nil
}

func (a *app) threadInjectItems(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadInjectItemsParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	items := make([]model.ResponseItem, 0, len(p.Items))
	for i, raw := range p.Items {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, protocol.InvalidRequest("Invalid request: items[%d]: %v", i, err)
		}
		it, err := model.ParseResponseItem(b)
		if err != nil {
			return nil, protocol.InvalidRequest("Invalid request: items[%d]: %v", i, err)
		}
		items = append(items, it)
	}
	if _, err := t.sess.Call(ctx, core.OpInjectItems{Items: items}); err != nil {
		return nil, rejectErr(err)
	}
	return protocol.Empty{}, nil
}

// threadRevert drops beforeTurnId and every later turn from the thread's
// model context, recorded as a rollback marker.
func (a *app) threadRevert(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadRevertParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	turns, err := a.turnsOf(ctx, t.id, t)
	if err != nil {
		return nil, err
	}
	pos := -1
	for i, rt := range turns {
		if rt.ID == p.BeforeTurnID {
			pos = i
		}
	}
	if pos < 0 {
		return nil, protocol.InvalidRequest("turn not found: %s", p.BeforeTurnID)
	}
	n := 0
	for _, rt := range turns[pos:] {
		if rt.Kind != core.TurnCompact {
			n++
		}
	}
	op := core.OpRollback{NumTurns: n}
	if t.rec != nil {
		// Recorded by the session once it has checked no turn runs, so a
		// refused rollback leaves nothing on disk.
		op.Persist = func() ([]model.ResponseItem, error) {
			if err := t.rec.Rollback(ctx, n); err != nil {
				return nil, err
			}
			rt, err := a.store.Read(ctx, t.id, rollout.ReadOptions{})
			if err != nil {
				return nil, err
			}
			turns = rt.Turns
			if rt.History == nil {
				return []model.ResponseItem{}, nil
			}
			return rt.History, nil
		}
	} else {
		turns = turns[:pos]
	}
	if _, err := t.sess.Call(ctx, op); err != nil {
		return nil, rejectErr(err)
	}
	th := t.wire(false)
	th.Turns = wireTurns(turns, protocol.ItemsFull)
	return protocol.ThreadRevertResponse{Thread: th}, nil
}

// checkID checks a thread id's form (a UUID).
func checkID(id string) (string, error) {
	if _, err := uuidpkg.Parse(id); err != nil {
		return "", fmt.Errorf("invalid thread id %q", id)
	}
	return id, nil
}
