package threads

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
)

// Scopes of the anchored cursors: a cursor of one list is refused by the
// other.
const (
	scopeTurns = "turns"
	scopeItems = "itemsByCreatedAtOrdinal"
)

// anchor is the opaque cursor of thread/turns/list and thread/items/list,
// in the reference's shape: the thread it pages, the rollout ordinal of
// the turn or item it is anchored on, and whether the page it starts
// includes that turn or item. Being anchored on where a turn or item sits
// in the rollout (which never changes), not on its index in the list, a
// cursor keeps its place when turns are added; one anchored in history a
// revert took out is refused.
type anchor struct {
	RequestedThreadID string      `json:"requestedThreadId"`
	RolloutOrdinal    int         `json:"rolloutOrdinal"`
	IncludeAnchor     bool        `json:"includeAnchor"`
	Scope             anchorScope `json:"scope"`
}

type anchorScope struct {
	Kind string `json:"kind"`
}

func (a anchor) encode() *string {
	b, _ := json.Marshal(a)
	s := string(b)
	return &s
}

// parseAnchor reads a cursor given to the list of scope kind of thread
// id. Whatever is not one of its cursors (another thread's or list's, an
// old positional one, garbage) answers `invalid cursor: <cursor>`, as the
// reference does; one anchored in reverted history answers `invalid
// cursor: position outside thread lineage`.
func parseAnchor(raw, id, kind string, reverted []rollout.OrdinalSpan) (anchor, error) {
	bad := protocol.InvalidRequest("invalid cursor: %s", protocol.Cut(raw))
	var w struct {
		RequestedThreadID *string `json:"requestedThreadId"`
		RolloutOrdinal    *int    `json:"rolloutOrdinal"`
		IncludeAnchor     *bool   `json:"includeAnchor"`
		Scope             *struct {
			Kind string `json:"kind"`
		} `json:"scope"`
	}
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil || d.More() {
		return anchor{}, bad
	}
	if w.RequestedThreadID == nil || w.RolloutOrdinal == nil || w.IncludeAnchor == nil || w.Scope == nil ||
		*w.RequestedThreadID != id || *w.RolloutOrdinal < 0 || w.Scope.Kind != kind {
		return anchor{}, bad
	}
	for _, sp := range reverted {
		if *w.RolloutOrdinal >= sp.From && *w.RolloutOrdinal <= sp.To {
			return anchor{}, protocol.InvalidRequest("invalid cursor: position outside thread lineage")
		}
	}
	return anchor{RequestedThreadID: id, RolloutOrdinal: *w.RolloutOrdinal, IncludeAnchor: *w.IncludeAnchor, Scope: anchorScope{Kind: kind}}, nil
}

// anchoredPage cuts a page out of items, whose rollout ordinals (ords,
// ascending) anchor the cursors, as the reference pages: in the
// direction asked, the items past the cursor's anchor (or from it, when
// it includes it), at most limit (25 by default, 100 at most) of them.
// nextCursor, anchored on the page's last item, continues in the same
// direction, null when nothing is left; backwardsCursor, anchored on its
// first item and including it, pages from it the other way; an empty
// page has neither.
func anchoredPage[T any](items []T, ords []int, id, kind string, cursor *anchor, limit *uint32, desc bool) (out []T, next, back *string) {
	n := 25
	if limit != nil && *limit > 0 {
		n = int(min(*limit, 100))
	}
	// lo and hi bound the indexes the cursor leaves.
	lo, hi := 0, len(items)
	if cursor != nil {
		o := cursor.RolloutOrdinal
		switch {
		case desc && cursor.IncludeAnchor:
			hi = sort.SearchInts(ords, o+1)
		case desc:
			hi = sort.SearchInts(ords, o)
		case cursor.IncludeAnchor:
			lo = sort.SearchInts(ords, o)
		default:
			lo = sort.SearchInts(ords, o+1)
		}
	}
	var idx []int
	if desc {
		for i := hi - 1; i >= lo && len(idx) < n; i-- {
			idx = append(idx, i)
		}
	} else {
		for i := lo; i < hi && len(idx) < n; i++ {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil, nil
	}
	for _, i := range idx {
		out = append(out, items[i])
	}
	first, last := idx[0], idx[len(idx)-1]
	if (desc && last > lo) || (!desc && last < hi-1) {
		next = anchor{RequestedThreadID: id, RolloutOrdinal: ords[last], Scope: anchorScope{Kind: kind}}.encode()
	}
	back = anchor{RequestedThreadID: id, RolloutOrdinal: ords[first], IncludeAnchor: true, Scope: anchorScope{Kind: kind}}.encode()
	return out, next, back
}

// backCursors are the turnsBackwardsCursor and itemsBackwardsCursor of
// thread/resume and thread/revert, as the reference fills them: anchored
// on the thread's last turn and on its last item (by rollout ordinal),
// both including their anchor, so that a client given a thread without
// its turns pages back from its end with thread/turns/list (descending,
// its default) and thread/items/list (sortDirection desc); null when the
// thread has no turn, or no item.
func backCursors(id string, turns []rollout.Turn) (turnsBack, itemsBack *string) {
	if n := len(turns); n > 0 {
		turnsBack = anchor{RequestedThreadID: id, RolloutOrdinal: turns[n-1].Ordinal, IncludeAnchor: true, Scope: anchorScope{Kind: scopeTurns}}.encode()
	}
	last := -1
	for _, rt := range turns {
		for _, o := range rt.ItemOrdinals {
			last = max(last, o)
		}
	}
	if last >= 0 {
		itemsBack = anchor{RequestedThreadID: id, RolloutOrdinal: last, IncludeAnchor: true, Scope: anchorScope{Kind: scopeItems}}.encode()
	}
	return turnsBack, itemsBack
}
