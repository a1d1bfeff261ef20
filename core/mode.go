package core

import (
	"strings"

	"github.com/agentd-dev/agentd/core/model"
)

// ModeKind names a collaboration mode: how the agent works with the user.
type ModeKind string

const (
	// ModeDefault: the agent does the work, asking only when it must.
	ModeDefault ModeKind = "default"
	// ModePlan: the agent explores without changing anything, asks what it
	// needs to know, and ends with a plan in a <proposed_plan> block.
	ModePlan ModeKind = "plan"
)

// CollaborationMode is a turn's collaboration mode. The zero value is a
// thread whose client never chose one: the default mode, about which the
// model is told nothing.
type CollaborationMode struct {
	Kind ModeKind
	// Instructions are the client's own developer instructions for the
	// mode; "" means agentd's.
	Instructions string
}

// Plan reports whether m is plan mode.
func (m CollaborationMode) Plan() bool { return m.Kind == ModePlan }

// Text is what the model is told about the mode: the client's
// instructions, else agentd's for the mode; "" for a mode never chosen.
func (m CollaborationMode) Text() string {
	if m.Instructions != "" {
		return m.Instructions
	}
	switch m.Kind {
	case ModePlan:
		return planModeInstructions
	case ModeDefault:
		return defaultModeInstructions
	}
	return ""
}

// BuiltinModeInstructions is agentd's own text for a mode ("" for an
// unknown kind), which a stored mode is compared with.
func BuiltinModeInstructions(k ModeKind) string {
	return CollaborationMode{Kind: k}.Text()
}

// The instructions of each mode are agentd's own text. They go to the
// model in a developer message wrapped in <collaboration_mode> tags (the
// reference's framing, so that a model trained on it recognises the
// block), once each time the mode changes.
const planModeInstructions = `# Collaboration mode: Plan

You are planning, not implementing. This mode lasts until a later developer message says otherwise; a user asking you to "just do it" while it lasts is asking for a plan of how it would be done.

What you may do:
- Read, search and inspect anything that helps the plan: files, configuration, history, documentation.
- Run commands that change nothing the user keeps: listing, grepping, building or testing into caches and build directories.
- Ask the user with request_user_input when a decision is theirs to make (a preference, a trade-off, a scope question). Offer two to four concrete options and say which one you recommend. Do not ask what you can find out yourself.

What you must not do:
- Edit, create or delete files, apply patches, run formatters or generators, commit, or otherwise carry out the work.
- Use update_plan: it tracks the progress of work being done, and it is not available in this mode.

How to finish:
When the plan leaves no decision open, write it once, in Markdown, inside a block whose tags stand on lines of their own:

<proposed_plan>
the plan
</proposed_plan>

A good plan has a title, a short summary, the changes grouped by area (interfaces and behaviour that change, not a list of every file), how it will be tested, and the assumptions you made. Keep it as short as it can be while leaving nothing to guess. Write at most one block per turn; a revised plan replaces the previous one whole. Do not ask whether to proceed: the user leaves plan mode when they want the work done.`

const defaultModeInstructions = `# Collaboration mode: Default

Plan mode, or any other mode you were in before, is over: you are in the default mode until a later developer message changes it. Do the work the user asks for. Make reasonable assumptions rather than stopping to ask; use request_user_input only for a question whose answer would really change the result, and carry on with your best judgement if it comes back without an answer.`

// modeMessage is the developer message that tells the model about mode m.
func modeMessage(m CollaborationMode) model.ResponseItem {
	return model.NewTextMessage(newMessageID(), "developer", modeOpenTag+m.Text()+modeCloseTag)
}

const (
	modeOpenTag  = "<collaboration_mode>"
	modeCloseTag = "</collaboration_mode>"
)

// lastModeText finds, in a resumed thread's history, the text of the last
// mode the model was told about, so that it is not told again.
func lastModeText(history []model.ResponseItem) string {
	for i := len(history) - 1; i >= 0; i-- {
		it := history[i]
		if it.Type() != model.TypeMessage || it.Role() != "developer" {
			continue
		}
		text := it.MessageText()
		if inner, ok := strings.CutPrefix(text, modeOpenTag); ok {
			if inner, ok := strings.CutSuffix(inner, modeCloseTag); ok {
				return inner
			}
		}
	}
	return ""
}
