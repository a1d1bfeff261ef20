package rollout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
)

// Format 1 encoders: agentd's own camelCase schema, which agentd no longer
// writes and still reads. Tests use them to write format 1 files.

type wireErrorEvent struct {
	Type  string        `json:"type"`
	Error wireTurnError `json:"error"`
}

type wireTypeOnly struct {
	Type string `json:"type"`
}

func turnErrorToWire(e core.TurnError) wireTurnError {
	return wireTurnError{Message: e.Message, Kind: string(e.Kind), HTTPStatus: e.HTTPStatus, Details: e.Details}
}

// appendRecord appends whole records to a closed thread's file in one
// write and fsyncs it. A torn last line (a crash) is ended first so the
// record starts on a line of its own.
func appendRecord(path string, rec []byte) error {
	torn, err := endsTorn(path)
	if err != nil {
		return err
	}
	if torn {
		rec = append([]byte{'\n'}, rec...)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(rec); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MarshalItem encodes a turn item in the rollout's stable form: an object
// tagged by "type" with camelCase fields.
func MarshalItem(it core.TurnItem) ([]byte, error) {
	w, err := itemToWire(it)
	if err != nil {
		return nil, err
	}
	return model.MarshalNoEscape(w)
}

func itemToWire(it core.TurnItem) (any, error) {
	switch v := it.(type) {
	case core.UserMessageItem:
		w := wireUserMessage{Type: itemUserMessage, ID: v.ID, ClientID: v.ClientID, Content: make([]wireUserInput, len(v.Content))}
		for i, in := range v.Content {
			w.Content[i] = wireUserInput{
				Type: string(in.Kind), Text: in.Text, ImageURL: in.ImageURL, Path: in.Path, Name: in.Name, Detail: in.Detail,
			}
			for _, te := range in.TextElements {
				w.Content[i].TextElements = append(w.Content[i].TextElements, wireTextElement(te))
			}
		}
		return w, nil
	case core.AgentMessageItem:
		return wireAgentMessage{Type: itemAgentMessage, ID: v.ID, Text: v.Text, Phase: v.Phase}, nil
	case core.ReasoningItem:
		return wireReasoning{Type: itemReasoning, ID: v.ID, Summary: v.Summary, Content: v.Content}, nil
	case core.CommandExecutionItem:
		w := wireCommand{
			Type: itemCommandExecution, ID: v.ID, Command: v.Command, Argv: v.Argv, Cwd: v.Cwd,
			Status: string(v.Status), Source: string(v.Source), ProcessID: v.ProcessID,
			AggregatedOutput: v.AggregatedOutput, ExitCode: v.ExitCode, DurationMs: v.DurationMs,
		}
		for _, a := range v.Actions {
			w.CommandActions = append(w.CommandActions, wireAction{
				Type: string(a.Kind), Command: a.Command, Name: a.Name, Path: a.Path, Query: a.Query,
			})
		}
		return w, nil
	case core.FileChangeItem:
		w := wireFileChange{Type: itemFileChange, ID: v.ID, Status: string(v.Status), Changes: make([]wireChange, len(v.Changes))}
		for i, c := range v.Changes {
			w.Changes[i] = wireChange{Path: c.Path, Kind: string(c.Kind), MovePath: c.MovePath, Diff: c.Diff}
		}
		return w, nil
	case core.PlanItem:
		return wirePlan{Type: itemPlan, ID: v.ID, Text: v.Text}, nil
	case core.DynamicToolCallItem:
		w := wireDynamicTool{
			Type: itemDynamicToolCall, ID: v.ID, Tool: v.Tool, Namespace: v.Namespace, Arguments: v.Arguments,
			Status: string(v.Status), Success: v.Success, DurationMs: v.DurationMs,
		}
		for _, c := range v.ContentItems {
			w.ContentItems = append(w.ContentItems, wireDynContent(c))
		}
		return w, nil
	case core.ContextCompactionItem:
		return wireCompaction{Type: itemContextCompaction, ID: v.ID}, nil
	case nil:
		return nil, errors.New("rollout: nil turn item")
	default:
		return nil, fmt.Errorf("rollout: cannot encode turn item %T", it)
	}
}

// MarshalEvent encodes a kept event in the rollout's stable form. Durations
// are kept in whole milliseconds, the precision the protocol shows.
func MarshalEvent(msg core.EventMsg) ([]byte, error) {
	var w any
	switch v := msg.(type) {
	case core.TurnStarted:
		w = wireTurnStarted{Type: evTurnStarted, Kind: string(v.Kind), StartedAt: v.StartedAt.UTC(), ModelContextWindow: v.ModelContextWindow}
	case core.TurnComplete:
		tw := wireTurnComplete{Type: evTurnComplete, LastAgentMessage: v.LastAgentMessage, CompletedAt: v.CompletedAt.UTC(), DurationMs: v.Duration.Milliseconds()}
		if v.Error != nil {
			e := turnErrorToWire(*v.Error)
			tw.Error = &e
		}
		w = tw
	case core.TurnAborted:
		w = wireTurnAborted{Type: evTurnAborted, Reason: string(v.Reason), CompletedAt: v.CompletedAt.UTC(), DurationMs: v.Duration.Milliseconds()}
	case core.ItemStarted:
		return marshalItemEvent(evItemStarted, v.Item)
	case core.ItemCompleted:
		return marshalItemEvent(evItemCompleted, v.Item)
	case core.Error:
		w = wireErrorEvent{Type: "error", Error: turnErrorToWire(v.Err)}
	case core.TokenCount:
		w = wireTokenCount{Type: evTokenCount, Info: wireUsageInfo{
			Total: wireUsage(v.Info.Total), Last: wireUsage(v.Info.Last), ModelContextWindow: v.Info.ModelContextWindow,
		}}
	case core.ContextCompacted:
		w = wireTypeOnly{Type: evContextCompacted}
	default:
		return nil, fmt.Errorf("rollout: event %T is not recorded", msg)
	}
	return model.MarshalNoEscape(w)
}

func marshalItemEvent(tag string, it core.TurnItem) ([]byte, error) {
	item, err := MarshalItem(it)
	if err != nil {
		return nil, err
	}
	return model.MarshalNoEscape(wireItemEvent{Type: tag, Item: item})
}

// writeThreadFileV1 writes a thread in format 1, as agentd wrote them
// before format 2. It returns the path.
func writeThreadFileV1(t testing.TB, home string, meta SessionMeta, turns int, name string) string {
	t.Helper()
	var b []byte
	first, err := metaLineV1(meta)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, first...)
	at := meta.CreatedAt
	for i := range turns {
		tid := fmt.Sprintf("%s-t%d", meta.ID, i)
		add := func(msg core.EventMsg) {
			at = at.Add(time.Millisecond)
			p, err := MarshalEvent(msg)
			if err != nil {
				t.Fatal(err)
			}
			b = appendLine(b, at, LineEventMsg, tid, p)
		}
		add(core.TurnStarted{Kind: core.TurnRegular, StartedAt: at})
		prompt := fmt.Sprintf("prompt %d of %s", i, meta.ID)
		add(core.ItemCompleted{Item: core.UserMessageItem{ID: tid + "-u", Content: []core.UserInput{core.TextInput(prompt)}}})
		b = appendLine(b, at, LineResponseItem, tid, model.NewTextMessage("", "user", prompt).Raw())
		b = appendLine(b, at, LineResponseItem, tid, model.NewTextMessage("m"+tid, "assistant", "answer").Raw())
		add(core.ItemCompleted{Item: core.AgentMessageItem{ID: "m" + tid, Text: "answer"}})
		add(core.TurnComplete{CompletedAt: at})
	}
	if name != "" {
		p, _ := model.MarshalNoEscape(wireThreadName{Name: name})
		b = appendLine(b, at, LineThreadName, "", p)
	}
	path := filepath.Join(datedDir(home, meta.CreatedAt), FileName(meta.CreatedAt, meta.ID))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// metaLineV1 is a format 1 session_meta record.
func metaLineV1(m SessionMeta) ([]byte, error) {
	w := map[string]any{
		"id": m.ID, "createdAt": m.CreatedAt.UTC(), "cwd": m.Cwd, "modelProvider": m.ModelProvider, "model": m.Model,
		"source": m.Source, "originator": m.Originator, "cliVersion": m.CLIVersion, "ephemeral": false, "format": 1,
	}
	if m.ForkedFromID != "" {
		w["forkedFromId"] = m.ForkedFromID
	}
	payload, err := model.MarshalNoEscape(w)
	if err != nil {
		return nil, err
	}
	return appendLine(nil, m.CreatedAt, LineSessionMeta, "", payload), nil
}
