package threads

import (
	"context"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// Observer is told what the threads do, for metrics. Its methods are
// called on the threads' event paths: they must be quick and safe for
// concurrent use.
type Observer interface {
	// TurnEnded: status is "completed", "failed" or "interrupted".
	TurnEnded(status string)
	// ModelRequest: a request to the provider opened its stream (ok) or
	// failed, after d.
	ModelRequest(ok bool, d time.Duration)
	// ModelRetry: a stream is retried after an error.
	ModelRetry()
	// Tokens: n tokens of a kind ("input", "cached_input", "output",
	// "reasoning_output") reported by the model.
	Tokens(kind string, n int64)
	// ToolCall: a tool call ("command", "patch", "dynamic", "mcp") ended with
	// status after d.
	ToolCall(tool, status string, d time.Duration)
	// RolloutWriteFailed: an attempt to write or sync a thread's rollout
	// failed (a full disk); the writer retries.
	RolloutWriteFailed()
}

// toolKind names the tool of an item, "" for items that are not tool
// calls.
func toolKind(it core.TurnItem) (kind string, status core.ItemStatus) {
	switch i := it.(type) {
	case core.CommandExecutionItem:
		return "command", i.Status
	case core.FileChangeItem:
		return "patch", i.Status
	case core.DynamicToolCallItem:
		return "dynamic", i.Status
	case core.McpToolCallItem:
		return "mcp", i.Status
	}
	return "", ""
}

// report tells the observer what ev means for the metrics. t.mu must be
// held (it keeps the start times of the tools running).
func (t *thread) report(ev core.Event) {
	obs := t.sv.obs
	if obs == nil {
		return
	}
	switch m := ev.Msg.(type) {
	case core.TurnComplete:
		if m.Error != nil {
			obs.TurnEnded("failed")
		} else {
			obs.TurnEnded("completed")
		}
	case core.TurnAborted:
		obs.TurnEnded("interrupted")
	case core.StreamError:
		obs.ModelRetry()
	case core.TokenCount:
		u := m.Info.Last
		obs.Tokens("input", u.InputTokens)
		obs.Tokens("cached_input", u.CachedInputTokens)
		obs.Tokens("output", u.OutputTokens)
		obs.Tokens("reasoning_output", u.ReasoningOutputTokens)
	case core.ItemStarted:
		if kind, _ := toolKind(m.Item); kind != "" {
			if t.toolStarts == nil {
				t.toolStarts = map[string]time.Time{}
			}
			t.toolStarts[m.Item.ItemID()] = ev.Time
		}
	case core.ItemCompleted:
		kind, status := toolKind(m.Item)
		if kind == "" {
			return
		}
		var d time.Duration
		if start, ok := t.toolStarts[m.Item.ItemID()]; ok {
			d = ev.Time.Sub(start)
			delete(t.toolStarts, m.Item.ItemID())
		}
		obs.ToolCall(kind, string(status), d)
	}
}

// timedClient measures each request to the model provider until its
// stream opens.
type timedClient struct {
	core.ModelClient
	obs Observer
}

func (c timedClient) Stream(ctx context.Context, req *model.Request, meta model.CallMeta) (model.Stream, error) {
	start := time.Now()
	s, err := c.ModelClient.Stream(ctx, req, meta)
	c.obs.ModelRequest(err == nil, time.Since(start))
	return s, err
}

// pendingRequests counts the server requests of every loaded thread that
// await an answer.
func (sv *service) pendingRequests() int {
	n := 0
	for _, t := range sv.threads.all() {
		t.mu.Lock()
		n += len(t.proj.Requests())
		t.mu.Unlock()
	}
	return n
}
