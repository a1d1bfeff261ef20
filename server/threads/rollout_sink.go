package threads

import (
	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/rollout"
)

// rolloutSink is the core's sink for a persisted thread: the recorder,
// plus the records the recorder takes separately from events (each turn's
// settings, and compactions with their replacement history).
type rolloutSink struct {
	*rollout.Recorder
}

func (s rolloutSink) RecordEvent(ev core.Event) {
	switch m := ev.Msg.(type) {
	case core.TurnStarted:
		c := m.Context
		s.RecordTurnContext(ev.TurnID, rollout.TurnContext{
			Cwd: c.Cwd, Model: c.Model, Effort: c.Effort, Summary: c.Summary, ApprovalPolicy: c.ApprovalPolicy, Sandbox: c.Sandbox,
			Mode: c.Mode,
		})
	case core.ContextCompacted:
		s.RecordCompaction(ev.TurnID, rollout.Compaction{Message: "history compacted", ReplacementHistory: m.Replacement})
	}
	s.Recorder.RecordEvent(ev)
}
