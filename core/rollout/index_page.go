package rollout

import "os"

// page returns up to limit listable entries that match o, in the listing's
// order from the cursor on (after it, exclusive), and whether more follow:
// a seek in the order, then a step per entry, the entries o's filters
// skip included (a filter that matches few threads walks further). While
// the index is built in the background, a listing by creation time is
// served from the file names instead, when they can serve it
// (index_first.go).
func (x *index) page(o *ListOptions, byUpdated, desc bool, after *cursor, limit int) ([]*entry, bool) {
	if !byUpdated && x.early() {
		if es, more, ok := x.firstPage(o, desc, after, limit); ok {
			return es, more
		}
	}
	x.lock()
	defer x.mu.Unlock()
	for {
		// Read before the refresh: once set, every file the pass found
		// changed is marked, and the refresh reads it.
		checked := x.checkedDone.Load()
		x.refreshLocked()
		if byUpdated && !checked {
			// A file that grew while no one watched it sorts elsewhere
			// by modification time: wait for the pass that finds
			// them all.
			x.mu.Unlock()
			x.urgePass()
			<-x.checked
			x.mu.Lock()
			continue
		}
		es, more, partial := x.queryLocked(o, byUpdated, desc, after, limit)
		if len(partial) > 0 {
			// Entries that have read only their first line may be on
			// the page: they read the rest, and the page is taken
			// again.
			x.completeLocked(partial)
			continue
		}
		if checked || !x.verifyLocked(es) {
			return es, more
		}
		// Some of the page's files changed since the cache was
		// written: they are read again, and the page taken again.
	}
}

// queryLocked walks the order from the cursor, until limit+1 entries are
// found; it stops early, returning them as partial, at entries that may
// match but have read only their first line.
func (x *index) queryLocked(o *ListOptions, byUpdated, desc bool, after *cursor, limit int) (es []*entry, more bool, partial []*entry) {
	ord := x.orderLocked(o.Archived, byUpdated)
	var p orderPos
	switch {
	case after == nil && desc:
		p = ord.last()
	case after == nil:
		p = ord.first()
	case desc:
		p = ord.before(after.key, after.id)
	default:
		p = ord.after(after.key, after.id)
	}
	out := make([]*entry, 0, limit+1)
	// A search reads every entry's name, until the page is full.
	x.names.mu.Lock()
	defer x.names.mu.Unlock()
	for ord.valid(p) && len(out)+len(partial) <= limit {
		e := ord.at(p)
		switch {
		case e.Partial:
			if o.matchesMeta(e) {
				partial = append(partial, e)
			}
		case o.matches(e, x.names):
			out = append(out, e)
		}
		if desc {
			p = ord.prev(p)
		} else {
			p = ord.next(p)
		}
	}
	if len(out) > limit {
		return out[:limit], true, partial
	}
	return out, false, partial
}

// verifyLocked stats the entries not checked since start (they came from
// the cache), marking the ones whose file changed; it reports whether any
// did.
func (x *index) verifyLocked(es []*entry) bool {
	changed := false
	for _, e := range es {
		if e.verified {
			continue
		}
		if st, err := os.Stat(e.Path); err == nil && e.sameFile(keyOf(st)) {
			e.verified = true
			continue
		}
		x.touch(e.Path)
		changed = true
	}
	return changed
}
