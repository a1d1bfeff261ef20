package threads

import (
	"context"
	"errors"
	"sort"

	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/google/uuid"

	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
)

func (sv *service) threadRead(ctx context.Context, r *rpc.Request, p *protocol.ThreadReadParams) (*protocol.ThreadReadResponse, error) {
	c := r.Conn()
	notLoaded := protocol.InvalidRequest("thread not loaded: %s", protocol.Cut(p.ThreadID))
	if t := sv.threads.get(p.ThreadID); t != nil {
		th := t.wire(false)
		if p.IncludeTurns {
			turns, err := sv.turnsOf(ctx, t.id, t)
			if err != nil {
				return nil, err
			}
			c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
			th.Turns = wireTurns(turns, protocol.ItemsFull)
		}
		return &protocol.ThreadReadResponse{Thread: th}, nil
	}
	if _, err := checkID(p.ThreadID); err != nil {
		return nil, notLoaded
	}
	rt, err := sv.readThread(ctx, p.ThreadID, nil)
	if err != nil {
		if errors.Is(err, rollout.ErrNotFound) {
			return nil, notLoaded
		}
		return nil, storeErr(p.ThreadID, err)
	}
	th := sv.wireThread(p.ThreadID, metaOf(rt), protocol.StatusNotLoaded())
	if p.IncludeTurns {
		c.Notify("deprecationNotice", protocol.DeprecationNoticeNotification{Summary: hydrationNotice})
		th.Turns = wireTurns(rt.Turns, protocol.ItemsFull)
	}
	return &protocol.ThreadReadResponse{Thread: th}, nil
}

// interactiveSources are what thread/list shows when the client names no
// source kinds (the reference lists interactive threads only).
var interactiveSources = []string{"cli", "vscode", "exec", "appServer"}

// maxExcludedThreads bounds thread/list's excludedThreadIds, as the
// reference does.
const maxExcludedThreads = 100

func (sv *service) threadList(_ context.Context, _ *rpc.Request, p *protocol.ThreadListParams) (*protocol.ThreadListResponse, error) {
	if len(p.Originators) > 0 {
		return nil, protocol.InvalidRequest("originators filter is not supported by a local server")
	}
	excluded, none, err := threadListFilters(p)
	if err != nil {
		return nil, err
	}
	out := protocol.ThreadListResponse{Data: protocol.List[protocol.Thread]{}}
	if none {
		return &out, nil
	}
	opts := rollout.ListOptions{ModelProviders: p.ModelProviders, SourceKinds: interactiveSources, ExcludeIDs: excluded}
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
	page, next, back, err := sv.store.List(opts)
	if err != nil {
		// An invalid cursor or sort key: the client's mistake.
		return nil, protocol.InvalidRequest("%v", err)
	}
	out.NextCursor, out.BackwardsCursor = optString(next), optString(back)
	for _, s := range page {
		status := protocol.StatusNotLoaded()
		if t := sv.threads.get(s.ID); t != nil {
			status = t.status()
		}
		m := threadMeta{createdAt: s.CreatedAt, updatedAt: s.UpdatedAt, cwd: s.Cwd, model: s.Model, provider: s.ModelProvider,
			effort: s.Effort, name: s.Name, preview: s.Preview, path: s.Path, originator: s.Originator, forkedFrom: s.ForkedFromID, gitInfo: s.Git,
			cliVersion: s.CLIVersion, source: s.Source}
		out.Data = append(out.Data, sv.wireThread(s.ID, m, status))
	}
	return &out, nil
}

// threadListFilters checks thread/list's filters beyond the store's: the
// threads to exclude (thread ids, at most maxExcludedThreads), and the
// experimental ones on what agentd does not keep. agentd has no projects
// or sections (every thread is unassigned and unsectioned), and neither
// spawns sub-agent threads nor attaches threads to others: a filter that
// asks for any of those selects nothing (none), one that asks for the
// unassigned or unsectioned (null) selects everything.
func threadListFilters(p *protocol.ThreadListParams) (excluded []string, none bool, err error) {
	if len(p.ExcludedThreadIDs) > maxExcludedThreads {
		return nil, false, protocol.Errorf(protocol.CodeInvalidParams, "excludedThreadIds accepts at most %d entries", maxExcludedThreads)
	}
	for _, id := range p.ExcludedThreadIDs {
		u, err := uuid.Parse(id)
		if err != nil {
			return nil, false, protocol.Errorf(protocol.CodeInvalidParams, "invalid excluded thread id: %v", err)
		}
		excluded = append(excluded, u.String())
	}
	if p.ParentThreadID != nil && p.AncestorThreadID != nil {
		return nil, false, protocol.InvalidRequest("parentThreadId and ancestorThreadId are mutually exclusive")
	}
	if p.AttachedToThreadID != nil && (p.ParentThreadID != nil || p.AncestorThreadID != nil) {
		return nil, false, protocol.InvalidRequest("attachedToThreadId cannot be combined with parentThreadId or ancestorThreadId")
	}
	if p.IncludeAttachedThreads && (p.SearchTerm == nil || *p.SearchTerm == "") {
		return nil, false, protocol.InvalidRequest("includeAttachedThreads requires a non-empty searchTerm")
	}
	if p.ProjectID != nil {
		switch {
		case *p.ProjectID == "":
			return nil, false, protocol.Errorf(protocol.CodeInvalidParams, "projectId must not be empty")
		default:
			return nil, false, protocol.Errorf(protocol.CodeInvalidParams, "project not found: %s", protocol.Cut(*p.ProjectID))
		}
	}
	none = p.SectionID != nil || p.ParentThreadID != nil || p.AncestorThreadID != nil || p.AttachedToThreadID != nil
	return excluded, none, nil
}

func (sv *service) threadTurnsList(ctx context.Context, _ *rpc.Request, p *protocol.ThreadTurnsListParams) (*protocol.TurnsPage, error) {
	turns, reverted, err := sv.storedTurns(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	var cursor *anchor
	if p.Cursor != nil {
		a, err := parseAnchor(*p.Cursor, p.ThreadID, scopeTurns, reverted)
		if err != nil {
			return nil, err
		}
		cursor = &a
	}
	return turnsPage(p.ThreadID, turns, cursor, p.Limit, p.ItemsView, p.SortDirection), nil
}

// turnsPage is a page of a thread's turns after cursor (nil: from the
// start), with the items of the view (summary by default), newest first
// unless the direction is asc.
func turnsPage(id string, turns []rollout.Turn, cursor *anchor, limit *uint32, view *protocol.TurnItemsView, dir *protocol.SortDirection) *protocol.TurnsPage {
	v := protocol.ItemsSummary
	if view != nil {
		v = *view
	}
	desc := dir == nil || *dir == protocol.SortDirection("desc")
	ords := make([]int, len(turns))
	for i, rt := range turns {
		ords[i] = rt.Ordinal
	}
	pg, next, back := anchoredPage(turns, ords, id, scopeTurns, cursor, limit, desc)
	return &protocol.TurnsPage{Data: wireTurns(pg, v), NextCursor: next, BackwardsCursor: back}
}

func (sv *service) threadItemsList(ctx context.Context, _ *rpc.Request, p *protocol.ThreadItemsListParams) (*protocol.ThreadItemsListResponse, error) {
	turns, reverted, err := sv.storedTurns(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	var cursor *anchor
	if p.Cursor != nil && p.Cursor.ItemID == "" {
		a, err := parseAnchor(p.Cursor.Cursor, p.ThreadID, scopeItems, reverted)
		if err != nil {
			return nil, err
		}
		cursor = &a
	}
	type entry struct {
		e   protocol.ThreadItemEntry
		ord int
	}
	var all []entry
	for _, rt := range turns {
		if p.TurnID != nil && *p.TurnID != rt.ID {
			continue
		}
		for i, it := range rt.Items {
			w := wireItem(it, rt.ItemTimes, i)
			all = append(all, entry{protocol.ThreadItemEntry{TurnID: rt.ID, Item: w, StartedAtMs: w.StartedAtMs, CompletedAtMs: w.CompletedAtMs}, rt.ItemOrdinals[i]})
		}
	}
	// In the order they were created: an item a turn adds late comes
	// after the next turn's earlier ones.
	sort.SliceStable(all, func(i, j int) bool { return all[i].ord < all[j].ord })
	entries := make([]protocol.ThreadItemEntry, len(all))
	ords := make([]int, len(all))
	for i, x := range all {
		entries[i], ords[i] = x.e, x.ord
	}
	if p.Cursor != nil && p.Cursor.ItemID != "" {
		// An item anchor: the page starts past that item.
		pos := -1
		for i, e := range entries {
			if e.Item.ID() == p.Cursor.ItemID {
				pos = i
			}
		}
		if pos < 0 {
			return nil, protocol.InvalidRequest("invalid cursor: item %s not found", protocol.Cut(p.Cursor.ItemID))
		}
		cursor = &anchor{RolloutOrdinal: ords[pos]}
	}
	desc := p.SortDirection != nil && *p.SortDirection == protocol.SortDirection("desc")
	pg, next, back := anchoredPage(entries, ords, p.ThreadID, scopeItems, cursor, p.Limit, desc)
	return &protocol.ThreadItemsListResponse{Data: pg, NextCursor: next, BackwardsCursor: back}, nil
}
