package core

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/model"
)

// streamState turns one model stream into turn items: it opens an item
// when the model starts one, forwards deltas, and on output_item.done
// records the item and completes it. A tool call is returned to the caller
// to start.
type streamState struct {
	s *Session
	t *turn
	// open holds items started and not yet done, by model item id.
	open        map[string]*openItem
	previews    map[string]*patchPreview
	lastMessage string
	// quiet: the model's messages are not shown (a sub-agent's: a
	// reviewer's answer is its JSON, which the turn shows as the review
	// once it is read).
	quiet bool
}

type openItem struct {
	kind    string // "message" or "reasoning"
	summary []string
	content []string
	// plans splits a message of a plan-mode turn into its text and its
	// proposed plan (nil in other modes).
	plans *planSplitter
	// plan is the proposed plan block streaming now, if any; planSeen,
	// whether the message had one.
	plan     *PlanItem
	planSeen bool
}

func newStreamState(s *Session, t *turn) *streamState {
	return &streamState{s: s, t: t, open: map[string]*openItem{}, previews: map[string]*patchPreview{}, quiet: t.sub != nil}
}

func (st *streamState) emit(msg EventMsg) { st.s.emit(st.t.subID, st.t.id, msg) }

// start opens the item id of kind if it is not open yet.
func (st *streamState) start(id, kind string) *openItem {
	if it, ok := st.open[id]; ok {
		return it
	}
	it := &openItem{kind: kind}
	st.open[id] = it
	switch kind {
	case model.TypeMessage:
		if st.quiet {
			// A reviewer's answer is neither shown nor read for a plan.
			break
		}
		if st.t.tc.Mode.Plan() {
			it.plans = &planSplitter{}
		}
		st.emit(ItemStarted{Item: AgentMessageItem{ID: id}})
	case model.TypeReasoning:
		st.emit(ItemStarted{Item: ReasoningItem{ID: id, Summary: []string{}, Content: []string{}}})
	}
	return it
}

func (st *streamState) handle(ev model.StreamEvent) {
	switch ev.Kind {
	case model.EventOutputItemAdded:
		switch ev.Item.Type() {
		case model.TypeMessage:
			if ev.Item.Role() == "" || ev.Item.Role() == "assistant" {
				st.start(ev.Item.ID(), model.TypeMessage)
			}
		case model.TypeReasoning:
			st.start(ev.Item.ID(), model.TypeReasoning)
		case model.TypeCustomToolCall:
			st.previewStart(ev.Item)
		case model.TypeWebSearchCall, model.TypeImageGenerationCall:
			st.hostedStart(ev.Item)
		}
	case model.EventOutputTextDelta:
		it := st.start(ev.ItemID, model.TypeMessage)
		switch {
		case st.quiet:
		case it.plans == nil:
			st.emit(AgentMessageDelta{ItemID: ev.ItemID, Delta: ev.Delta})
		default:
			st.planSegments(ev.ItemID, it, it.plans.push(ev.Delta))
		}
	case model.EventReasoningSummaryPartAdded:
		it := st.start(ev.ItemID, model.TypeReasoning)
		for len(it.summary) <= ev.SummaryIndex {
			it.summary = append(it.summary, "")
		}
		st.emit(ReasoningSummaryPartAdded{ItemID: ev.ItemID, SummaryIndex: ev.SummaryIndex})
	case model.EventReasoningSummaryDelta:
		it := st.start(ev.ItemID, model.TypeReasoning)
		for len(it.summary) <= ev.SummaryIndex {
			it.summary = append(it.summary, "")
		}
		it.summary[ev.SummaryIndex] += ev.Delta
		st.emit(ReasoningSummaryDelta{ItemID: ev.ItemID, SummaryIndex: ev.SummaryIndex, Delta: ev.Delta})
	case model.EventReasoningTextDelta:
		it := st.start(ev.ItemID, model.TypeReasoning)
		for len(it.content) <= ev.ContentIndex {
			it.content = append(it.content, "")
		}
		it.content[ev.ContentIndex] += ev.Delta
		st.emit(ReasoningRawDelta{ItemID: ev.ItemID, ContentIndex: ev.ContentIndex, Delta: ev.Delta})
	case model.EventCustomToolCallInputDelta:
		st.previewDelta(ev.ItemID, ev.Delta)
	}
}

// itemDone handles response.output_item.done: the item is complete. It
// returns the tool call to run, if the item is one.
func (st *streamState) itemDone(item model.ResponseItem) *toolCall {
	switch item.Type() {
	case model.TypeMessage:
		if item.Role() != "assistant" && item.Role() != "" {
			st.s.recordTurn(st.t, item)
			return nil
		}
		it := st.start(item.ID(), model.TypeMessage)
		delete(st.open, item.ID())
		text := item.MessageText()
		if it.plans != nil {
			text = st.endPlans(item.ID(), it, text)
		}
		var phase struct {
			Phase string `json:"phase"`
		}
		_ = item.Decode(&phase)
		if !st.quiet {
			st.emit(ItemCompleted{Item: AgentMessageItem{ID: item.ID(), Text: text, Phase: phase.Phase}})
			st.emit(AgentMessage{ItemID: item.ID(), Message: text})
		}
		st.lastMessage = text
		st.s.recordTurn(st.t, item)
		return nil
	case model.TypeReasoning:
		it := st.start(item.ID(), model.TypeReasoning)
		delete(st.open, item.ID())
		var f model.ReasoningFields
		summary, content := it.summary, it.content
		if err := item.Decode(&f); err == nil {
			if len(f.Summary) > 0 {
				summary = summary[:0:0]
				for _, p := range f.Summary {
					summary = append(summary, p.Text)
				}
			}
			if len(f.Content) > 0 {
				content = content[:0:0]
				for _, p := range f.Content {
					content = append(content, p.Text)
				}
			}
		}
		if summary == nil {
			summary = []string{}
		}
		if content == nil {
			content = []string{}
		}
		st.emit(ItemCompleted{Item: ReasoningItem{ID: item.ID(), Summary: summary, Content: content}})
		st.s.recordTurn(st.t, item)
		return nil
	case model.TypeFunctionCall, model.TypeCustomToolCall:
		st.previewDone(item.ID())
		st.s.recordTurn(st.t, item)
		return newToolCall(item, st.s.cfg.ToolOutputTokenLimit)
	case model.TypeWebSearchCall, model.TypeImageGenerationCall:
		st.hostedDone(item)
		st.s.recordTurn(st.t, item)
		return nil
	case model.TypeLocalShellCall:
		st.s.recordTurn(st.t, item)
		if item.CallID() == "" && item.ID() == "" {
			// Nothing could name the answer: the call stays unanswered.
			st.t.log.Warn("local_shell_call without call_id or id; not run")
			return nil
		}
		return newToolCall(item, st.s.cfg.ToolOutputTokenLimit)
	default:
		st.s.recordTurn(st.t, item)
		return nil
	}
}

// planSegments emits what a plan-mode message's text made known: message
// deltas, and the proposed plan as a plan item of its own, streamed with
// PlanDelta.
func (st *streamState) planSegments(msgID string, it *openItem, segs []planSeg) {
	for _, seg := range segs {
		switch seg.kind {
		case segText:
			st.emit(AgentMessageDelta{ItemID: msgID, Delta: seg.text})
		case segPlanStart:
			it.plan = &PlanItem{ID: st.t.nextPlanID()}
			it.planSeen = true
			st.emit(ItemStarted{Item: PlanItem{ID: it.plan.ID}})
		case segPlanText:
			it.plan.Text += seg.text
			st.emit(PlanDelta{ItemID: it.plan.ID, Delta: seg.text})
		case segPlanEnd:
			st.emit(ItemCompleted{Item: *it.plan})
			it.plan = nil
		}
	}
}

// endPlans finishes a plan-mode message and returns its visible text (the
// whole text without its plan blocks). A plan that came only with the
// finished item, without deltas, is emitted whole.
func (st *streamState) endPlans(msgID string, it *openItem, text string) string {
	st.planSegments(msgID, it, it.plans.finish())
	visible, plans := splitPlans(text)
	if !it.planSeen {
		for _, p := range plans {
			st.planSegments(msgID, it, []planSeg{{kind: segPlanStart}, {kind: segPlanText, text: p}, {kind: segPlanEnd}})
		}
	}
	return visible
}

// hostedStart starts the item of a hosted tool call (web search, image
// generation) when the model begins it.
func (st *streamState) hostedStart(item model.ResponseItem) {
	id := item.ID()
	if _, ok := st.open[id]; ok || id == "" {
		return
	}
	st.open[id] = &openItem{kind: item.Type()}
	switch item.Type() {
	case model.TypeWebSearchCall:
		st.emit(ItemStarted{Item: WebSearchItem{ID: id, Action: WebSearchAction{Kind: WebSearchOther}}})
	case model.TypeImageGenerationCall:
		st.emit(ItemStarted{Item: ImageGenerationItem{ID: id, Status: "in_progress"}})
	}
}

// hostedDone completes a hosted tool call's item with its outcome; a
// generated image is saved first. A call the provider did not announce
// is started here.
func (st *streamState) hostedDone(item model.ResponseItem) {
	if item.ID() == "" {
		st.t.log.Warn("hosted tool call without an id: no item shown", zap.String("type", item.Type()))
		return
	}
	st.hostedStart(item)
	delete(st.open, item.ID())
	switch item.Type() {
	case model.TypeWebSearchCall:
		st.emit(ItemCompleted{Item: webSearchItem(item)})
	case model.TypeImageGenerationCall:
		it := imageGenerationItem(item)
		path, err := st.s.saveGeneratedImage(it)
		if err != nil {
			st.t.log.Warn("generated image not saved", zap.String("item", it.ID), zap.Error(err))
			st.emit(Warning{Message: fmt.Sprintf("The generated image %s could not be saved: %v", it.ID, err)})
		}
		it.SavedPath = path
		st.emit(ItemCompleted{Item: it})
	}
}
