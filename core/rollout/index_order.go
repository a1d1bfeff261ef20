package rollout

import (
	"cmp"
	"slices"
	"strings"
)

// order is the index's entries of one listing (live or archived) sorted by
// one key (creation or modification time), then id, then path. It is kept
// in chunks of at most 2×orderChunk entries, so that an insertion or a
// removal moves one chunk, a seek is two binary searches, and a page is a
// seek and a step per entry.
type order struct {
	key    func(*entry) int64
	chunks [][]*entry
	n      int
}

// orderChunk is half the most entries a chunk holds.
const orderChunk = 128

func newOrder(key func(*entry) int64) *order { return &order{key: key} }

func createdKey(e *entry) int64 { return e.createdNs }
func updatedKey(e *entry) int64 { return e.ModNs }

// createdOrder compares entries as the listing by creation time does.
var createdOrder = order{key: createdKey}

func (o *order) cmp(a, b *entry) int {
	if c := cmp.Compare(o.key(a), o.key(b)); c != 0 {
		return c
	}
	if c := strings.Compare(a.id, b.id); c != 0 {
		return c
	}
	return strings.Compare(a.Path, b.Path)
}

// cmpAt compares e with a cursor position (key, id); the path is not part
// of a cursor.
func (o *order) cmpAt(e *entry, key int64, id string) int {
	if c := cmp.Compare(o.key(e), key); c != 0 {
		return c
	}
	return strings.Compare(e.id, id)
}

func (o *order) len() int { return o.n }

// insert adds e, which must not be in o.
func (o *order) insert(e *entry) {
	o.n++
	if len(o.chunks) == 0 {
		o.chunks = append(o.chunks, make([]*entry, 0, 2*orderChunk))
		o.chunks[0] = append(o.chunks[0], e)
		return
	}
	// The first chunk whose last entry is not before e, else the last.
	ci, _ := slices.BinarySearchFunc(o.chunks, e, func(c []*entry, e *entry) int { return o.cmp(c[len(c)-1], e) })
	ci = min(ci, len(o.chunks)-1)
	c := o.chunks[ci]
	i, _ := slices.BinarySearchFunc(c, e, o.cmp)
	c = slices.Insert(c, i, e)
	if len(c) <= 2*orderChunk {
		o.chunks[ci] = c
		return
	}
	// Split: the upper half moves to a new chunk.
	hi := make([]*entry, 0, 2*orderChunk)
	hi = append(hi, c[orderChunk:]...)
	clear(c[orderChunk:])
	o.chunks[ci] = c[:orderChunk]
	o.chunks = slices.Insert(o.chunks, ci+1, hi)
}

// remove takes e out of o, and reports whether it was there.
func (o *order) remove(e *entry) bool {
	ci, _ := slices.BinarySearchFunc(o.chunks, e, func(c []*entry, e *entry) int { return o.cmp(c[len(c)-1], e) })
	if ci == len(o.chunks) {
		return false
	}
	c := o.chunks[ci]
	i, found := slices.BinarySearchFunc(c, e, o.cmp)
	if !found || c[i] != e {
		return false
	}
	o.n--
	c = slices.Delete(c, i, i+1)
	if len(c) == 0 {
		o.chunks = slices.Delete(o.chunks, ci, ci+1)
		return true
	}
	o.chunks[ci] = c
	// A small chunk merges into its neighbour when they fit in one.
	if ci+1 < len(o.chunks) && len(c)+len(o.chunks[ci+1]) <= orderChunk {
		o.chunks[ci] = append(c, o.chunks[ci+1]...)
		o.chunks = slices.Delete(o.chunks, ci+1, ci+2)
	}
	return true
}

// orderPos is a position in an order: a chunk and an index in it. A
// position past either end is not valid.
type orderPos struct{ ci, i int }

func (o *order) valid(p orderPos) bool {
	return p.ci >= 0 && p.ci < len(o.chunks) && p.i >= 0 && p.i < len(o.chunks[p.ci])
}

func (o *order) at(p orderPos) *entry { return o.chunks[p.ci][p.i] }

func (o *order) next(p orderPos) orderPos {
	if p.i+1 < len(o.chunks[p.ci]) {
		return orderPos{p.ci, p.i + 1}
	}
	return orderPos{p.ci + 1, 0}
}

func (o *order) prev(p orderPos) orderPos {
	if p.i > 0 {
		return orderPos{p.ci, p.i - 1}
	}
	if p.ci == 0 {
		return orderPos{-1, 0}
	}
	return orderPos{p.ci - 1, len(o.chunks[p.ci-1]) - 1}
}

// first and last are the ends of o (not valid when it is empty).
func (o *order) first() orderPos { return orderPos{0, 0} }

func (o *order) last() orderPos {
	if len(o.chunks) == 0 {
		return orderPos{-1, 0}
	}
	return orderPos{len(o.chunks) - 1, len(o.chunks[len(o.chunks)-1]) - 1}
}

// after is the first position whose (key, id) is after the given one.
func (o *order) after(key int64, id string) orderPos {
	ci, _ := slices.BinarySearchFunc(o.chunks, 0, func(c []*entry, _ int) int {
		if o.cmpAt(c[len(c)-1], key, id) > 0 {
			return 1
		}
		return -1
	})
	if ci == len(o.chunks) {
		return orderPos{ci, 0}
	}
	i, _ := slices.BinarySearchFunc(o.chunks[ci], 0, func(e *entry, _ int) int {
		if o.cmpAt(e, key, id) > 0 {
			return 1
		}
		return -1
	})
	return orderPos{ci, i}
}

// before is the last position whose (key, id) is before the given one.
func (o *order) before(key int64, id string) orderPos {
	// The first chunk whose first entry is not before the position; the
	// answer is in the chunk ahead of it.
	ci, _ := slices.BinarySearchFunc(o.chunks, 0, func(c []*entry, _ int) int {
		if o.cmpAt(c[0], key, id) >= 0 {
			return 1
		}
		return -1
	})
	if ci == 0 {
		return orderPos{-1, 0}
	}
	ci--
	i, _ := slices.BinarySearchFunc(o.chunks[ci], 0, func(e *entry, _ int) int {
		if o.cmpAt(e, key, id) >= 0 {
			return 1
		}
		return -1
	})
	return orderPos{ci, i - 1}
}

// reset makes o hold es (which it sorts).
func (o *order) reset(es []*entry) {
	if !slices.IsSortedFunc(es, o.cmp) {
		slices.SortFunc(es, o.cmp)
	}
	o.n = len(es)
	o.chunks = o.chunks[:0]
	for len(es) > 0 {
		k := min(len(es), orderChunk+orderChunk/2)
		c := make([]*entry, k, 2*orderChunk)
		copy(c, es[:k])
		o.chunks = append(o.chunks, c)
		es = es[k:]
	}
}
