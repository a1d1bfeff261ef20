package core

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/agentd-dev/agentd/core/model"
)

// compactionPrompt asks the model for a summary that can replace the
// history. Our own words.
const compactionPrompt = `Summarise this conversation so that the work can continue from the summary alone; the earlier messages will be removed. Include: the user's goals and constraints, decisions taken and why, what has been done (files changed, commands run and their outcomes), what remains to do, and any open questions. Be complete but concise; use short sections and lists.`

// summaryPrefix introduces the summary in the new history.
const summaryPrefix = "Summary of the conversation so far (earlier messages were compacted):\n\n"

// maxKeptUserText bounds the recent user messages kept verbatim after a
// compaction.
const maxKeptUserText = 20000

// runCompactTurn summarises the history through the model and replaces the
// history with the summary: a contextCompaction item, as a turn.
func (s *Session) runCompactTurn(t *turn) {
	s.emitTurnStarted(t, TurnCompact)
	item := ContextCompactionItem{ID: newItemID()}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	replacement, err := s.compact(t)
	if err != nil {
		if t.ctx.Err() != nil {
			s.endTurn(t, "", nil)
			return
		}
		s.endTurn(t, "", turnErrorFrom(err))
		return
	}
	s.emit(t.subID, t.id, ItemCompleted{Item: item})
	s.emit(t.subID, t.id, ContextCompacted{Replacement: replacement})
	s.endTurn(t, "", nil)
}

// compactInTurn compacts the history in the middle of a regular turn, as
// a contextCompaction item of that turn.
func (s *Session) compactInTurn(t *turn) error {
	item := ContextCompactionItem{ID: newItemID()}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	replacement, err := s.compact(t)
	if err != nil {
		return err
	}
	s.emit(t.subID, t.id, ItemCompleted{Item: item})
	s.emit(t.subID, t.id, ContextCompacted{Replacement: replacement})
	return nil
}

// nearContextLimit reports whether the last response filled the context
// up to the auto-compaction limit.
func (s *Session) nearContextLimit() bool {
	limit := s.cfg.AutoCompactTokens
	if limit == 0 && s.cfg.ContextWindow > 0 {
		limit = s.cfg.ContextWindow * 9 / 10
	}
	return limit > 0 && s.lastUsage.TotalTokens >= limit
}

func isContextWindowExceeded(err error) bool {
	var me *model.Error
	return errors.As(err, &me) && me.Kind == model.ErrContextWindowExceeded
}

// compact asks for a summary and swaps the history. It returns the new
// history.
func (s *Session) compact(t *turn) ([]model.ResponseItem, error) {
	hist := s.hist.snapshot()
	input := append(hist[:len(hist):len(hist)], model.NewTextMessage(newMessageID(), "user", compactionPrompt))
	req := &model.Request{
		Model:          t.tc.Model,
		Input:          input,
		Tools:          []json.RawMessage{},
		ToolChoice:     "auto",
		Store:          false,
		Stream:         true,
		Include:        []string{"reasoning.encrypted_content"},
		PromptCacheKey: s.cfg.ThreadID,
	}
	var summary string
	err := s.retrying(t, func() error {
		text, usage, limits, err := s.streamText(t, req)
		if usage != nil {
			s.tokenTotal = s.tokenTotal.Add(*usage)
			t.usage = t.usage.Add(*usage)
			s.emit(t.subID, t.id, TokenCount{Info: TokenUsageInfo{Total: s.tokenTotal, Turn: t.usage, Last: *usage, ModelContextWindow: s.cfg.ContextWindow}})
		}
		if limits != nil {
			s.emit(t.subID, t.id, RateLimits{Snapshot: *limits})
		}
		summary = text
		return err
	})
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(summary) == "" {
		return nil, errors.New("the model returned an empty summary")
	}
	replacement := compactedHistory(hist, summary)
	s.hist.replacePrefix(t.id, len(hist), replacement)
	// The sink's rebuild replaces everything recorded before the
	// compaction record: what came in meanwhile is in the replacement too.
	return s.hist.snapshot(), nil
}

// compactedHistory keeps the developer instructions, the latest
// environment context, the most recent user messages (up to a budget), and
// the summary.
func compactedHistory(hist []model.ResponseItem, summary string) []model.ResponseItem {
	var out []model.ResponseItem
	var env model.ResponseItem
	var users []model.ResponseItem
	for _, it := range hist {
		if it.Type() != model.TypeMessage {
			continue
		}
		switch it.Role() {
		case "developer", "system":
			out = append(out, it)
		case "user":
			text := it.MessageText()
			switch {
			case strings.HasPrefix(text, "<environment_context>"):
				env = it
			case strings.HasPrefix(text, summaryPrefix), strings.HasPrefix(text, "<turn_aborted>"):
			default:
				users = append(users, it)
			}
		}
	}
	if !env.IsZero() {
		out = append(out, env)
	}
	budget := maxKeptUserText
	start := len(users)
	for start > 0 {
		n := len(users[start-1].MessageText())
		if n > budget {
			break
		}
		budget -= n
		start--
	}
	out = append(out, users[start:]...)
	return append(out, model.NewTextMessage(newMessageID(), "user", summaryPrefix+summary))
}

// streamText streams a response that is expected to be text only and
// returns the text of its last message, its usage, and the rate limits
// its headers reported (nil when no stream opened).
func (s *Session) streamText(t *turn, req *model.Request) (string, *model.TokenUsage, *model.RateLimitSnapshot, error) {
	meta := model.CallMeta{
		Originator: s.cfg.Originator, UserAgent: s.cfg.UserAgent, ThreadID: s.cfg.ThreadID, TurnID: t.id,
	}
	req.ClientMetadata = requestMetadata(&meta, nil)
	stream, err := s.cfg.Client.Stream(t.ctx, req, meta)
	if err != nil {
		return "", nil, nil, err
	}
	defer stream.Close()
	limits := stream.RateLimits()
	var text string
	for {
		ev, err := stream.Next()
		if err == io.EOF {
			return "", nil, &limits, &model.Error{Kind: model.ErrStreamDisconnected, Message: "stream closed before response.completed"}
		}
		if err != nil {
			return "", nil, &limits, err
		}
		switch ev.Kind {
		case model.EventOutputItemDone:
			if ev.Item.Type() == model.TypeMessage {
				text = ev.Item.MessageText()
			}
		case model.EventCompleted:
			return text, ev.Usage, &limits, nil
		}
	}
}
