package core

import "sync"

// AgentStatus is what the agent is doing.
type AgentStatus uint8

const (
	StatusIdle AgentStatus = iota
	// StatusRunning: a turn is running.
	StatusRunning
	// StatusWaiting: a turn is running and waits for the user (an approval
	// or an answer).
	StatusWaiting
	// StatusShutdown: the session ended.
	StatusShutdown
)

func (s AgentStatus) String() string {
	switch s {
	case StatusIdle:
		return "idle"
	case StatusRunning:
		return "running"
	case StatusWaiting:
		return "waiting"
	case StatusShutdown:
		return "shutdown"
	}
	return "unknown"
}

// statusCell holds the current status; a watcher reads it at once and then
// waits on the returned channel, which is closed at the next change.
type statusCell struct {
	mu      sync.Mutex
	status  AgentStatus
	changed chan struct{}
}

func newStatusCell() *statusCell {
	return &statusCell{changed: make(chan struct{})}
}

func (c *statusCell) set(s AgentStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == s {
		return
	}
	c.status = s
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *statusCell) get() (AgentStatus, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.changed
}
