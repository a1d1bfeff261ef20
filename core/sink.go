package core

import (
	"context"

	"github.com/agentd-dev/agentd/core/model"
)

// Sink receives what a thread must persist, in order: the session calls
// RecordItem under its record lock and RecordEvent under its emit lock,
// from whichever goroutine records or emits.
// Implementations queue and write in the background, and report write
// failures as their own warnings rather than failing the turn. RecordItem
// and RecordEvent may wait while that queue is full: this is the one wait
// the core accepts on its outbound side (disk back-pressure), since what
// is not written cannot be promised to a client; Flush and Sync wait for
// the disk.
type Sink interface {
	// RecordItem records a history item of turn turnID.
	RecordItem(turnID string, item model.ResponseItem)
	// RecordEvent records an event the public view is rebuilt from
	// (items, turn boundaries, token counts, errors). The sink picks which
	// events it keeps.
	RecordEvent(ev Event)
	// Flush makes everything recorded so far reach the file (an item
	// boundary).
	Flush(ctx context.Context) error
	// Sync makes everything recorded so far durable (a turn end).
	Sync(ctx context.Context) error
}
