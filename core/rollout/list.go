package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ThreadSummary is a stored thread as thread/list shows it.
type ThreadSummary struct {
	ID            string
	Preview       string
	Name          string
	Cwd           string
	ModelProvider string
	// Model and Effort are the last turn's, else the creation settings.
	Model        string
	Effort       string
	CreatedAt    time.Time
	UpdatedAt    time.Time // the file's modification time
	Source       string
	ThreadSource string
	Originator   string
	CLIVersion   string
	Git          *GitInfo
	Path         string
	ForkedFromID string
	Archived     bool
	TurnCount    int
	// LastTurnFailed: the thread's status is systemError.
	LastTurnFailed bool
}

// Sort keys and directions of ListOptions, as the protocol spells them.
const (
	SortCreatedAt = "created_at"
	SortUpdatedAt = "updated_at"
	SortDesc      = "desc"
	SortAsc       = "asc"
)

// List limits.
const (
	DefaultListLimit = 25
	MaxListLimit     = 100
)

// ListOptions select and order a page of threads. Empty filters match all.
type ListOptions struct {
	// Cursor continues a previous page: a nextCursor continues in the
	// same direction, a backwardsCursor with the opposite direction
	// returns what came before that page. Both are opaque.
	Cursor string
	// Limit is clamped to MaxListLimit; 0 means DefaultListLimit.
	Limit int
	// SortKey is SortCreatedAt (default) or SortUpdatedAt ("created",
	// "updated" and "recency_at", an alias of updated, are accepted).
	SortKey string
	// Direction is SortDesc (default) or SortAsc.
	Direction      string
	ModelProviders []string
	// Cwd matches exactly any of the paths.
	Cwd []string
	// Archived lists archived threads instead of live ones.
	Archived bool
	// SearchTerm is a case-sensitive substring of the name or preview.
	SearchTerm string
	// SourceKinds match the meta's Source. Empty matches all: the server
	// passes the interactive kinds when a client gives none.
	SourceKinds []string
	// ExcludeIDs are threads left out before the page is cut (a client
	// that shows some threads already asks for the others), as
	// lowercase UUIDs.
	ExcludeIDs []string
	// excluded is ExcludeIDs as a set, made by List.
	excluded map[string]bool
}

// excludes reports whether o leaves the thread id out.
func (o *ListOptions) excludes(id string) bool {
	if len(o.ExcludeIDs) == 0 {
		return false
	}
	id = strings.ToLower(id) // a thread's id as its meta spells it
	if o.excluded != nil {
		return o.excluded[id]
	}
	return slices.Contains(o.ExcludeIDs, id)
}

// List returns a page of stored threads with at least one turn, and the
// cursors around it ("" when there is nothing more that way). An invalid
// cursor is an *InvalidCursorError.
func (s *Store) List(opts ListOptions) (page []ThreadSummary, nextCursor, backwardsCursor string, err error) {
	if len(opts.ExcludeIDs) > 0 {
		opts.excluded = make(map[string]bool, len(opts.ExcludeIDs))
		for _, id := range opts.ExcludeIDs {
			opts.excluded[strings.ToLower(id)] = true
		}
	}
	byUpdated, err := sortByUpdated(opts.SortKey)
	if err != nil {
		return nil, "", "", err
	}
	desc := true
	switch opts.Direction {
	case "", SortDesc:
	case SortAsc:
		desc = false
	default:
		return nil, "", "", fmt.Errorf("rollout: unknown sort direction %q", opts.Direction)
	}
	var after *cursor
	if opts.Cursor != "" {
		c, err := parseCursor(opts.Cursor)
		if err != nil {
			return nil, "", "", err
		}
		after = &c
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)

	es, more := s.idx.page(&opts, byUpdated, desc, after, limit)
	page = make([]ThreadSummary, len(es))
	for i, e := range es {
		page[i] = e.summary(s.idx.names)
	}
	if len(es) > 0 {
		key := func(e *entry) int64 {
			if byUpdated {
				return e.ModNs
			}
			return e.createdNs
		}
		backwardsCursor = cursor{key: key(es[0]), id: es[0].id}.String()
		if more {
			last := es[len(es)-1]
			nextCursor = cursor{key: key(last), id: last.id}.String()
		}
	}
	return page, nextCursor, backwardsCursor, nil
}

// Summary returns one stored thread's list entry, whether or not it would
// be listed.
func (s *Store) Summary(threadID string) (ThreadSummary, error) {
	if e := s.idx.lookup(threadID); e != nil {
		return e.summary(s.idx.names), nil
	}
	return ThreadSummary{}, notFound(threadID)
}

func sortByUpdated(key string) (bool, error) {
	switch key {
	case "", SortCreatedAt, "created", "createdAt":
		return false, nil
	case SortUpdatedAt, "updated", "updatedAt", "recency_at":
		return true, nil
	}
	return false, fmt.Errorf("rollout: unknown sort key %q", key)
}

// matches reports whether o selects e; names.mu is held.
func (o *ListOptions) matches(e *entry, names *nameIndex) bool {
	s := e.Sum
	if !o.matchesMeta(e) || e.Partial || len(s.Turns) == 0 {
		return false
	}
	if o.SearchTerm != "" && !strings.Contains(s.Preview, o.SearchTerm) && !strings.Contains(names.nameOfLocked(e.id, s.Name), o.SearchTerm) {
		return false
	}
	return true
}

// matchesMeta reports whether o's filters on the session's meta (and the
// listing) select e: what an entry that has read only its first line can
// say.
func (o *ListOptions) matchesMeta(e *entry) bool {
	s := e.Sum
	if s == nil || !s.HasMeta || e.Archived != o.Archived {
		return false
	}
	if len(o.ModelProviders) > 0 && !slices.Contains(o.ModelProviders, s.Meta.ModelProvider) {
		return false
	}
	if len(o.Cwd) > 0 && !slices.Contains(o.Cwd, s.Meta.Cwd) {
		return false
	}
	if o.excludes(e.id) {
		return false
	}
	return len(o.SourceKinds) == 0 || slices.Contains(o.SourceKinds, s.Meta.Source)
}

func (e *entry) computeCreatedNs() int64 {
	if t := e.Sum.Meta.CreatedAt; !t.IsZero() {
		return t.UnixNano()
	}
	if !e.Sum.FirstAt.IsZero() {
		return e.Sum.FirstAt.UnixNano()
	}
	return e.ModNs
}

// summary is the entry's list entry; its name is the session index's
// when the index has one.
func (e *entry) summary(names *nameIndex) ThreadSummary {
	s := e.Sum
	m := s.Meta
	ts := ThreadSummary{
		ID: e.id, Preview: s.Preview, Name: names.nameOf(e.id, s.Name), Cwd: m.Cwd, ModelProvider: m.ModelProvider,
		Model: m.Model, Effort: m.Effort, CreatedAt: time.Unix(0, e.createdNs).UTC(), UpdatedAt: time.Unix(0, e.ModNs).UTC(),
		Source: m.Source, ThreadSource: m.ThreadSource, Originator: m.Originator, CLIVersion: m.CLIVersion,
		Path: e.Path, ForkedFromID: m.ForkedFromID, Archived: e.Archived, TurnCount: len(s.Turns),
		LastTurnFailed: s.lastTurnFailed(),
	}
	if m.Git != nil {
		g := *m.Git
		ts.Git = &g
	}
	if s.Model != "" {
		ts.Model, ts.Effort = s.Model, s.Effort
	}
	return ts
}

// Summary returns the thread's list entry, as List would show it.
func (t *Thread) Summary() ThreadSummary {
	m := t.Meta
	ts := ThreadSummary{
		ID: m.ID, Preview: t.Preview, Name: t.Name, Cwd: m.Cwd, ModelProvider: m.ModelProvider,
		Model: m.Model, Effort: m.Effort, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Source: m.Source, ThreadSource: m.ThreadSource, Originator: m.Originator, CLIVersion: m.CLIVersion,
		Git: m.Git, Path: t.Path, ForkedFromID: m.ForkedFromID, Archived: t.Archived, TurnCount: len(t.Turns),
		LastTurnFailed: t.LastTurnFailed,
	}
	if tc := t.TurnContext; tc != nil && tc.Model != "" {
		ts.Model, ts.Effort = tc.Model, tc.Effort
	}
	return ts
}

// cursor is a position in a listing: the sort key and id of an entry.
// Pages continue strictly beyond it.
type cursor struct {
	key int64
	id  string
}

const cursorTimeLayout = "2006-01-02T15:04:05.000000000Z"

func (c cursor) String() string {
	return time.Unix(0, c.key).UTC().Format(cursorTimeLayout) + "|" + c.id
}

func parseCursor(s string) (cursor, error) {
	ts, id, ok := strings.Cut(s, "|")
	if !ok || id == "" {
		return cursor{}, &InvalidCursorError{Cursor: s}
	}
	t, err := time.Parse(cursorTimeLayout, ts)
	if err != nil {
		return cursor{}, &InvalidCursorError{Cursor: s}
	}
	return cursor{key: t.UnixNano(), id: id}, nil
}

func cmpKey(ak int64, aid string, bk int64, bid string) int {
	switch {
	case ak < bk:
		return -1
	case ak > bk:
		return 1
	}
	return strings.Compare(aid, bid)
}
