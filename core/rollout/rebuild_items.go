package rollout

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core"
)

// put records an item's completed state, in the place of its started
// state when there was one.
func (ts *turnState) put(it core.TurnItem, at time.Time) {
	id := it.ItemID()
	if i, ok := ts.itemIdx[id]; ok && id != "" {
		ts.Items[i] = it
		ts.ItemTimes[i].CompletedAt = at
		delete(ts.pending, i)
		return
	}
	ts.add(id, it, ItemTimes{StartedAt: at, CompletedAt: at})
}

// start records an item's start, unless it started or ended already.
func (ts *turnState) start(it core.TurnItem, at time.Time) {
	id := it.ItemID()
	if i, ok := ts.itemIdx[id]; ok && id != "" {
		if ts.ItemTimes[i].CompletedAt.IsZero() {
			ts.Items[i] = it
			delete(ts.pending, i)
		}
		return
	}
	ts.add(id, it, ItemTimes{StartedAt: at})
}

// putStarted records an item's start, keeping its state undecoded until
// finish shows it is needed.
func (ts *turnState) putStarted(s *startedItem, at time.Time) {
	if _, ok := ts.itemIdx[s.id]; ok && s.id != "" {
		return
	}
	if ts.pending == nil {
		ts.pending = map[int]*startedItem{}
	}
	ts.pending[len(ts.Items)] = s
	ts.add(s.id, nil, ItemTimes{StartedAt: at})
}

func (ts *turnState) add(id string, it core.TurnItem, times ItemTimes) {
	if ts.itemIdx == nil {
		ts.itemIdx = map[string]int{}
	}
	ts.itemIdx[id] = len(ts.Items)
	ts.Items = append(ts.Items, it)
	ts.ItemTimes = append(ts.ItemTimes, times)
	ord := len(ts.ItemOrdinals)
	if ts.rb != nil {
		ts.rb.itemOrd = max(ts.rb.line, ts.rb.itemOrd+1)
		ord = ts.rb.itemOrd
	}
	ts.ItemOrdinals = append(ts.ItemOrdinals, ord)
}

// decodePending decodes the items that started and never completed; one
// that cannot be decoded is dropped (with a warning, unless it is a kind
// of a newer version).
func (ts *turnState) decodePending(warn func(string)) {
	if len(ts.pending) == 0 {
		return
	}
	items, times, ords := ts.Items[:0], ts.ItemTimes[:0], ts.ItemOrdinals[:0]
	for i, it := range ts.Items {
		if raw, ok := ts.pending[i]; ok {
			var err error
			if it, err = raw.decode(); err != nil {
				if !errors.Is(err, ErrUnknownType) {
					warn(fmt.Sprintf("turn %s: started item skipped: %v", ts.ID, err))
				}
				continue
			}
		}
		items = append(items, it)
		times = append(times, ts.ItemTimes[i])
		ords = append(ords, ts.ItemOrdinals[i])
	}
	ts.Items, ts.ItemTimes, ts.ItemOrdinals, ts.pending = items, times, ords, nil
}

// settleItems fixes items a finished turn left open: a crash or an abort
// can leave an item started and never completed. A tool item is reported
// failed rather than running forever; a message or reasoning item that
// never received its content is dropped.
func (ts *turnState) settleItems() {
	items, times, ords := ts.Items[:0], ts.ItemTimes[:0], ts.ItemOrdinals[:0]
	for i, it := range ts.Items {
		if ts.ItemTimes[i].CompletedAt.IsZero() {
			var keep bool
			it, keep = settle(it)
			if !keep {
				continue
			}
		}
		items = append(items, it)
		times = append(times, ts.ItemTimes[i])
		ords = append(ords, ts.ItemOrdinals[i])
	}
	ts.Items, ts.ItemTimes, ts.ItemOrdinals = items, times, ords
}

func settle(it core.TurnItem) (core.TurnItem, bool) {
	switch v := it.(type) {
	case core.CommandExecutionItem:
		if v.Status == core.StatusInProgress {
			v.Status = core.StatusFailed
		}
		return v, true
	case core.FileChangeItem:
		if v.Status == core.StatusInProgress {
			v.Status = core.StatusFailed
		}
		return v, true
	case core.DynamicToolCallItem:
		if v.Status == core.StatusInProgress {
			v.Status = core.StatusFailed
		}
		return v, true
	case core.McpToolCallItem:
		if v.Status == core.StatusInProgress {
			v.Status = core.StatusFailed
		}
		return v, true
	case core.AgentMessageItem:
		return v, v.Text != ""
	case core.ReasoningItem:
		return v, len(v.Summary) > 0 || len(v.Content) > 0
	}
	return it, true
}

// previewOf is the text of the first user message of the turns.
func previewOf(turns []Turn) string {
	for _, t := range turns {
		for _, it := range t.Items {
			if um, ok := it.(core.UserMessageItem); ok {
				return userText(um)
			}
		}
	}
	return ""
}

func userText(um core.UserMessageItem) string {
	var parts []string
	for _, in := range um.Content {
		if in.Kind == core.InputText && in.Text != "" {
			parts = append(parts, in.Text)
		}
	}
	return strings.Join(parts, "\n")
}
