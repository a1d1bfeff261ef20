package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
)

// ErrUnknownType is returned when decoding a record whose type tag this
// version does not know. Readers skip such records.
var ErrUnknownType = errors.New("rollout: unknown record type")

// Item type tags of format 1, the same names the public protocol uses for
// ThreadItem.
const (
	itemUserMessage       = "userMessage"
	itemAgentMessage      = "agentMessage"
	itemReasoning         = "reasoning"
	itemCommandExecution  = "commandExecution"
	itemFileChange        = "fileChange"
	itemPlan              = "plan"
	itemDynamicToolCall   = "dynamicToolCall"
	itemContextCompaction = "contextCompaction"
)

type wireUserMessage struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Content  []wireUserInput `json:"content"`
	ClientID string          `json:"clientId,omitempty"`
}

type wireUserInput struct {
	Type         string            `json:"type"`
	Text         string            `json:"text,omitempty"`
	TextElements []wireTextElement `json:"textElements,omitempty"`
	ImageURL     string            `json:"imageUrl,omitempty"`
	Path         string            `json:"path,omitempty"`
	Name         string            `json:"name,omitempty"`
	Detail       string            `json:"detail,omitempty"`
}

type wireTextElement struct {
	Start       int    `json:"start"`
	End         int    `json:"end"`
	Placeholder string `json:"placeholder,omitempty"`
}

type wireAgentMessage struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Text  string `json:"text"`
	Phase string `json:"phase,omitempty"`
}

type wireReasoning struct {
	Type    string   `json:"type"`
	ID      string   `json:"id"`
	Summary []string `json:"summary,omitempty"`
	Content []string `json:"content,omitempty"`
}

type wireCommand struct {
	Type             string       `json:"type"`
	ID               string       `json:"id"`
	Command          string       `json:"command"`
	Argv             []string     `json:"argv,omitempty"`
	Cwd              string       `json:"cwd"`
	Status           string       `json:"status"`
	Source           string       `json:"source,omitempty"`
	ProcessID        string       `json:"processId,omitempty"`
	CommandActions   []wireAction `json:"commandActions,omitempty"`
	AggregatedOutput *string      `json:"aggregatedOutput,omitempty"`
	ExitCode         *int         `json:"exitCode,omitempty"`
	DurationMs       *int64       `json:"durationMs,omitempty"`
}

type wireAction struct {
	Type    string `json:"type"`
	Command string `json:"command,omitempty"`
	Name    string `json:"name,omitempty"`
	Path    string `json:"path,omitempty"`
	Query   string `json:"query,omitempty"`
}

type wireFileChange struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Changes []wireChange `json:"changes"`
	Status  string       `json:"status"`
}

type wireChange struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	MovePath string `json:"movePath,omitempty"`
	Diff     string `json:"diff"`
}

type wirePlan struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Text string `json:"text"`
}

type wireDynamicTool struct {
	Type         string           `json:"type"`
	ID           string           `json:"id"`
	Tool         string           `json:"tool"`
	Namespace    string           `json:"namespace,omitempty"`
	Arguments    json.RawMessage  `json:"arguments,omitempty"`
	Status       string           `json:"status"`
	ContentItems []wireDynContent `json:"contentItems,omitempty"`
	Success      *bool            `json:"success,omitempty"`
	DurationMs   *int64           `json:"durationMs,omitempty"`
}

type wireDynContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"imageUrl,omitempty"`
	AudioURL string `json:"audioUrl,omitempty"`
}

type wireCompaction struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// unmarshalItemV1 decodes a turn item of format 1 (the item of an
// itemStarted or itemCompleted event). A type tag it does not know yields
// an error wrapping ErrUnknownType.
func unmarshalItemV1(b []byte) (core.TurnItem, error) {
	typ, err := peekType(b)
	if err != nil {
		return nil, fmt.Errorf("rollout: turn item: %w", err)
	}
	switch typ {
	case itemUserMessage:
		var w wireUserMessage
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		it := core.UserMessageItem{ID: w.ID, ClientID: w.ClientID, Content: make([]core.UserInput, len(w.Content))}
		for i, in := range w.Content {
			it.Content[i] = core.UserInput{
				Kind: core.UserInputKind(in.Type), Text: in.Text, ImageURL: in.ImageURL, Path: in.Path, Name: in.Name, Detail: in.Detail,
			}
			for _, te := range in.TextElements {
				it.Content[i].TextElements = append(it.Content[i].TextElements, core.TextElement(te))
			}
		}
		return it, nil
	case itemAgentMessage:
		var w wireAgentMessage
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.AgentMessageItem{ID: w.ID, Text: w.Text, Phase: w.Phase}, nil
	case itemReasoning:
		var w wireReasoning
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.ReasoningItem{ID: w.ID, Summary: w.Summary, Content: w.Content}, nil
	case itemCommandExecution:
		var w wireCommand
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		it := core.CommandExecutionItem{
			ID: w.ID, Command: w.Command, Argv: w.Argv, Cwd: w.Cwd, Status: core.ItemStatus(w.Status),
			Source: core.CommandSource(w.Source), ProcessID: w.ProcessID, AggregatedOutput: w.AggregatedOutput,
			ExitCode: w.ExitCode, DurationMs: w.DurationMs,
		}
		for _, a := range w.CommandActions {
			it.Actions = append(it.Actions, policy.CommandAction{
				Kind: policy.CommandActionKind(a.Type), Command: a.Command, Name: a.Name, Path: a.Path, Query: a.Query,
			})
		}
		return it, nil
	case itemFileChange:
		var w wireFileChange
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		it := core.FileChangeItem{ID: w.ID, Status: core.ItemStatus(w.Status), Changes: make([]core.FileChange, len(w.Changes))}
		for i, c := range w.Changes {
			it.Changes[i] = core.FileChange{Path: c.Path, Kind: core.FileChangeKind(c.Kind), MovePath: c.MovePath, Diff: c.Diff}
		}
		return it, nil
	case itemPlan:
		var w wirePlan
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.PlanItem{ID: w.ID, Text: w.Text}, nil
	case itemDynamicToolCall:
		var w wireDynamicTool
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		it := core.DynamicToolCallItem{
			ID: w.ID, Tool: w.Tool, Namespace: w.Namespace, Arguments: w.Arguments, Status: core.ItemStatus(w.Status),
			Success: w.Success, DurationMs: w.DurationMs,
		}
		for _, c := range w.ContentItems {
			it.ContentItems = append(it.ContentItems, core.DynamicContentItem(c))
		}
		return it, nil
	case itemContextCompaction:
		var w wireCompaction
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return core.ContextCompactionItem{ID: w.ID}, nil
	default:
		return nil, fmt.Errorf("%w: turn item %q", ErrUnknownType, typ)
	}
}

// peekItemID returns the "id" of an encoded item: the member after "type"
// in our own encoding, else found by decoding.
func peekItemID(b []byte) (string, error) {
	const p = `{"type":"`
	if bytes.HasPrefix(b, []byte(p)) {
		rest := b[len(p):]
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			rest = rest[end:]
			const q = `","id":"`
			if bytes.HasPrefix(rest, []byte(q)) {
				rest = rest[len(q):]
				if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
					return string(rest[:end]), nil
				}
			}
		}
	}
	var w struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return "", fmt.Errorf("rollout: turn item: %w", err)
	}
	return w.ID, nil
}
