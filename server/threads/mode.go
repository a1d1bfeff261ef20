package threads

import (
	"context"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// collaborationModeList lists the collaboration modes, as the reference
// does: plan mode (with medium reasoning), then the default mode; neither
// names a model, so the thread's is kept.
func collaborationModeList(context.Context, *rpc.Request, *protocol.Empty) (*protocol.CollaborationModeListResponse, error) {
	plan, def := protocol.ModePlan, protocol.ModeDefault
	medium := protocol.ReasoningEffort("medium")
	return &protocol.CollaborationModeListResponse{Data: protocol.List[protocol.CollaborationModeMask]{
		{Name: "Plan", Mode: &plan, ReasoningEffort: &medium},
		{Name: "Default", Mode: &def},
	}}, nil
}

// modeOverrides adds a client's collaboration mode to o. The mode's
// settings name the model and reasoning effort of the turns in it and
// take precedence over turn/start's own, as in the reference;
// developer_instructions null means agentd's text for the mode.
func modeOverrides(o *core.TurnOverrides, cm *protocol.CollaborationMode) {
	if cm == nil {
		return
	}
	m := core.CollaborationMode{Kind: core.ModeKind(cm.Mode)}
	if di := cm.Settings.DeveloperInstructions; di != nil {
		m.Instructions = *di
	}
	o.Mode = &m
	if cm.Settings.Model != "" {
		model := cm.Settings.Model
		o.Model = &model
	}
	if e := cm.Settings.ReasoningEffort; e != nil {
		effort := string(*e)
		o.Effort = &effort
	}
}

// wireMode is the collaboration mode a thread/resume result reports: the
// mode of the thread's next turn with its model, effort and the
// instructions the model is given (null for a mode no client chose).
func wireMode(tc core.TurnContext) *protocol.CollaborationMode {
	kind := protocol.ModeDefault
	if tc.Mode.Kind != "" {
		kind = protocol.ModeKind(tc.Mode.Kind)
	}
	out := &protocol.CollaborationMode{Mode: kind, Settings: protocol.CollaborationSettings{Model: tc.Model}}
	if tc.Effort != "" {
		e := protocol.ReasoningEffort(tc.Effort)
		out.Settings.ReasoningEffort = &e
	}
	if text := tc.Mode.Text(); text != "" {
		out.Settings.DeveloperInstructions = &text
	}
	return out
}
