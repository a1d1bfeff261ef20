package rollout

import (
	"errors"
	"fmt"
)

// Errors of store operations; compare with errors.Is.
var (
	// ErrNotFound: no rollout file exists for the thread (it was never
	// materialized, or was deleted).
	ErrNotFound = errors.New("rollout: not found")
	// ErrThreadOpen: the operation needs the thread's recorder closed
	// first (archive, unarchive, delete), or a second recorder was
	// asked for.
	ErrThreadOpen = errors.New("rollout: thread has an open recorder")
	// ErrAlreadyArchived: Archive of an archived thread.
	ErrAlreadyArchived = errors.New("rollout: thread already archived")
	// ErrNotArchived: Unarchive of a thread that is not archived.
	ErrNotArchived = errors.New("rollout: thread not archived")
	// ErrTurnNotFound: a fork asked for a turn the thread does not have.
	ErrTurnNotFound = errors.New("rollout: turn not found")
	// ErrMetaTooLarge: a new thread's session_meta (its first line)
	// would be longer than MetaLineBytes, so no reader would take the
	// file as a rollout.
	ErrMetaTooLarge = errors.New("rollout: session metadata too large")
	// ErrInvalidCursor: List was given a cursor it did not make.
	ErrInvalidCursor = errors.New("rollout: invalid cursor")
	// ErrInvalidThreadID: the id cannot name a rollout file.
	ErrInvalidThreadID = errors.New("rollout: invalid thread id")
	// ErrReadsStopped: the read was stopped by Store.StopReads.
	ErrReadsStopped = errors.New("rollout: reads stopped")
)

// NotFoundError says which thread has no rollout. Its text is the one
// clients see.
type NotFoundError struct{ ThreadID string }

func (e *NotFoundError) Error() string { return "no rollout found for thread id " + e.ThreadID }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// InvalidCursorError carries the cursor List refused. Its text is the one
// clients see.
type InvalidCursorError struct{ Cursor string }

func (e *InvalidCursorError) Error() string { return "invalid cursor: " + e.Cursor }

// Is makes errors.Is(err, ErrInvalidCursor) true.
func (e *InvalidCursorError) Is(target error) bool { return target == ErrInvalidCursor }

func notFound(id string) error { return &NotFoundError{ThreadID: id} }

// validThreadID reports whether id can be part of a file name: it must not
// be able to name another directory.
func validThreadID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("%w: %q", ErrInvalidThreadID, id)
	}
	for _, c := range id {
		ok := c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			return fmt.Errorf("%w: %q", ErrInvalidThreadID, id)
		}
	}
	return nil
}
