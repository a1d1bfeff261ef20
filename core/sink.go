package core

import (
	"context"

	"github.com/agentd-dev/agentd/core/model"
)

// Sink receives what a thread must persist. The turn loop calls it from one
// goroutine, in order. Implementations must not block for long: they queue
// and write in the background, and report write failures as their own
// warnings rather than failing the turn.
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
