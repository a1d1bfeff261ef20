package rollout

import (
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// TurnStatus is the status of a rebuilt turn, as the protocol names it.
type TurnStatus string

const (
	TurnCompleted   TurnStatus = "completed"
	TurnInterrupted TurnStatus = "interrupted"
	TurnFailed      TurnStatus = "failed"
	TurnInProgress  TurnStatus = "inProgress"
)

// Turn is one turn of the public view, rebuilt from the rollout.
type Turn struct {
	ID     string
	Kind   core.TurnKind
	Status TurnStatus
	// Error is why a failed turn failed.
	Error       *core.TurnError
	StartedAt   time.Time
	CompletedAt time.Time // zero when the turn never ended
	Duration    time.Duration
	// Items are the turn's items in the order they started, each in its
	// last recorded state. ItemTimes[i] belongs to Items[i].
	Items     []core.TurnItem
	ItemTimes []ItemTimes
	// Ordinal is where the turn opened in the rollout: the number of the
	// line that opened it. It never changes as the file grows, so a
	// client's page cursor can be anchored on it.
	Ordinal int
	// ItemOrdinals[i] is where Items[i] first appeared, likewise: the
	// number of its line, or one more than the previous item's when
	// several appeared on one line, so that every item has its own.
	ItemOrdinals []int
}

// OrdinalSpan is a range of rollout ordinals, both ends included.
type OrdinalSpan struct{ From, To int }

// ItemTimes are when an item started and completed (millisecond precision;
// CompletedAt is zero for an item that never completed).
type ItemTimes struct {
	StartedAt   time.Time
	CompletedAt time.Time
}

// TokenUsage is the last token accounting of a thread and the turn it
// belongs to.
type TokenUsage struct {
	TurnID string
	Info   core.TokenUsageInfo
}

// Thread is everything rebuilt from one rollout file.
type Thread struct {
	Meta     SessionMeta
	Path     string
	Archived bool
	Name     string
	// Preview is the text of the first user message ("" before one).
	Preview   string
	CreatedAt time.Time
	// UpdatedAt is the file's modification time.
	UpdatedAt time.Time
	// History is the model history: response items in order, after
	// compactions and rollbacks.
	History []model.ResponseItem
	Turns   []Turn
	// TokenUsage is the last recorded usage, nil when none.
	TokenUsage *TokenUsage
	// TurnContext is the last recorded turn context, nil when none.
	TurnContext *TurnContext
	// LastTurnFailed reports that the last turn failed: the thread shows
	// systemError until its next turn starts.
	LastTurnFailed bool
	// Reverted are the ordinals of history a rollback took out (from the
	// first dropped turn's opening to the rollback record): no turn or
	// item of the thread is there any more.
	Reverted []OrdinalSpan
	// Warnings list the records that were skipped (torn or unreadable).
	Warnings []string
}

// ReadOptions tune ReadThread.
type ReadOptions struct {
	// RunningTurnID names the turn a loaded thread is running: if it is
	// the last turn and has not ended, it is reported inProgress rather
	// than interrupted.
	RunningTurnID string
	// SkipHistory leaves Thread.History nil, for views that only need
	// turns and metadata.
	SkipHistory bool
	// Limits bound the read (a Store's reads take its Options.Limits
	// when this is zero).
	Limits Limits
}
