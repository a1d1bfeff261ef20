package execcli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// maxOutputLines bounds the command output the transcript shows.
const maxOutputLines = 20

// humanSink writes a transcript of the turn for a person (stderr): the
// settings, the user's message, what the agent thinks, runs and says,
// and the tokens used. The final message itself goes to stdout, where a
// script reads it.
type humanSink struct {
	w       io.Writer
	version string
	tokens  int64
	// shownError is the last error printed, so a failed turn's error is
	// not printed twice.
	shownError string
}

func newHumanSink(w io.Writer, version string) *humanSink {
	return &humanSink{w: w, version: version}
}

func (h *humanSink) printf(format string, args ...any) { fmt.Fprintf(h.w, format, args...) }

func (h *humanSink) threadStarted(info threadInfo, prompt string) {
	h.printf("agentd exec %s\n--------\n", h.version)
	for _, kv := range [][2]string{
		{"workdir", info.Cwd}, {"model", info.Model}, {"provider", info.Provider},
		{"approval", info.Approval}, {"sandbox", info.Sandbox}, {"reasoning effort", info.Effort},
		{"session id", info.ID},
	} {
		h.printf("%s: %s\n", kv[0], kv[1])
	}
	h.printf("--------\nuser\n%s\n", strings.TrimRight(prompt, "\n"))
}

func (h *humanSink) notification(method string, params json.RawMessage) {
	switch method {
	case "item/started":
		var p struct{ Item wireItem }
		if json.Unmarshal(params, &p) == nil && p.Item.Type == "commandExecution" {
			h.printf("exec\n%s\n", p.Item.Command)
		}
	case "item/completed":
		var p struct {
			Item struct {
				wireItem
				DurationMs *int64 `json:"durationMs"`
			}
		}
		if json.Unmarshal(params, &p) == nil {
			h.item(p.Item.wireItem, p.Item.DurationMs)
		}
	case "turn/plan/updated":
		var p struct {
			Plan []struct {
				Step   string `json:"step"`
				Status string `json:"status"`
			} `json:"plan"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		h.printf("plan\n")
		for _, s := range p.Plan {
			mark := map[string]string{"completed": "[x]", "inProgress": "[>]"}[s.Status]
			if mark == "" {
				mark = "[ ]"
			}
			h.printf("  %s %s\n", mark, s.Step)
		}
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage struct {
				Total struct {
					TotalTokens int64 `json:"totalTokens"`
				} `json:"total"`
			} `json:"tokenUsage"`
		}
		if json.Unmarshal(params, &p) == nil {
			h.tokens = p.TokenUsage.Total.TotalTokens
		}
	case "error":
		var p struct{ Error wireTurnError }
		if json.Unmarshal(params, &p) == nil {
			h.shownError = withDetails(p.Error.Message, p.Error.AdditionalDetails)
			h.printf("ERROR: %s\n", h.shownError)
		}
	case "warning":
		var p struct{ Message string }
		if json.Unmarshal(params, &p) == nil {
			h.warning(p.Message)
		}
	case "configWarning", "deprecationNotice":
		var p struct {
			Summary string  `json:"summary"`
			Details *string `json:"details"`
		}
		if json.Unmarshal(params, &p) == nil {
			h.warning(withDetails(p.Summary, p.Details))
		}
	}
}

func (h *humanSink) item(it wireItem, durationMs *int64) {
	switch it.Type {
	case "reasoning":
		if text := strings.TrimSpace(strings.Join(it.Summary, "\n")); text != "" {
			h.printf("thinking\n%s\n", text)
		}
	case "agentMessage":
		h.printf("codex\n%s\n", it.Text)
	case "commandExecution":
		took := ""
		if durationMs != nil {
			took = fmt.Sprintf(" in %dms", *durationMs)
		}
		switch {
		case it.Status == "declined":
			h.printf("declined\n")
		case it.ExitCode != nil && *it.ExitCode == 0:
			h.printf("succeeded%s:\n", took)
		case it.ExitCode != nil:
			h.printf("exited %d%s:\n", *it.ExitCode, took)
		default:
			h.printf("%s%s\n", snake(it.Status), took)
		}
		if it.AggregatedOutput != nil {
			h.output(*it.AggregatedOutput)
		}
	case "fileChange":
		h.printf("file update\n")
		for _, c := range it.Changes {
			mark := map[string]string{"add": "A", "delete": "D"}[c.Kind.Type]
			if mark == "" {
				mark = "M"
			}
			h.printf("%s %s\n", mark, c.Path)
		}
		if it.Status != "completed" {
			h.printf("(%s)\n", snake(it.Status))
		}
	case "mcpToolCall":
		h.printf("tool %s.%s (%s)\n", it.Server, it.Tool, snake(it.Status))
	case "webSearch":
		h.printf("web search: %s\n", it.Query)
	}
}

// output prints a command's output, its first lines only.
func (h *humanSink) output(s string) {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return
	}
	lines := strings.Split(s, "\n")
	if len(lines) > maxOutputLines {
		rest := len(lines) - maxOutputLines
		lines = append(lines[:maxOutputLines], fmt.Sprintf("… +%d lines", rest))
	}
	h.printf("%s\n", strings.Join(lines, "\n"))
}

func (h *humanSink) warning(msg string) { h.printf("warning: %s\n", msg) }

func (h *humanSink) finish(o outcome) {
	switch o.status {
	case "completed":
		h.printf("tokens used\n%d\n", h.tokens)
	case "failed":
		msg := o.errMessage
		if msg == "" {
			msg = "turn failed"
		}
		if msg != h.shownError {
			h.printf("ERROR: %s\n", msg)
		}
	default:
		h.printf("turn %s\n", o.status)
	}
}
