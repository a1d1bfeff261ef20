package core

import (
	"sync"

	"github.com/agentd-dev/agentd/core/model"
)

// history is the model's view of the thread: every ResponseItem, in order,
// with the turn each belongs to. It is shared by the session loop (inject,
// rollback when idle) and the running turn; all access goes through its
// mutex.
type history struct {
	mu    sync.Mutex
	items []historyEntry
}

type historyEntry struct {
	turnID string
	item   model.ResponseItem
}

func (h *history) append(turnID string, items ...model.ResponseItem) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, it := range items {
		h.items = append(h.items, historyEntry{turnID, it})
	}
}

// snapshot returns the items in order. The slice is the caller's.
func (h *history) snapshot() []model.ResponseItem {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]model.ResponseItem, len(h.items))
	for i, e := range h.items {
		out[i] = e.item
	}
	return out
}

// replace swaps the whole history (a rollback rebuilt elsewhere).
func (h *history) replace(turnID string, items []model.ResponseItem) {
	h.replacePrefix(turnID, h.len(), items)
}

// len returns the number of items.
func (h *history) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.items)
}

// replacePrefix replaces the first n items with items and keeps what was
// appended after them (a compaction keeps what was recorded while the
// model summarised).
func (h *history) replacePrefix(turnID string, n int, items []model.ResponseItem) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n = min(n, len(h.items))
	rest := append([]historyEntry(nil), h.items[n:]...)
	h.items = h.items[:0]
	for _, it := range items {
		h.items = append(h.items, historyEntry{turnID, it})
	}
	h.items = append(h.items, rest...)
}

// dropLastTurns removes the items of the last n turns that have a user
// message, and returns how many turns were dropped.
func (h *history) dropLastTurns(n int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	dropped := 0
	cut := len(h.items)
	for dropped < n && cut > 0 {
		turn := h.items[cut-1].turnID
		start := cut
		for start > 0 && h.items[start-1].turnID == turn {
			start--
		}
		cut = start
		dropped++
	}
	clear(h.items[cut:])
	h.items = h.items[:cut]
	return dropped
}
