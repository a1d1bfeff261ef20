package demo

import (
	"encoding/json"
	"strconv"
	"strings"
)

// reply is what the demo answers: a reasoning summary, then a message or
// one tool call.
type reply struct {
	summary string
	text    string    // the message, when call is nil
	call    *toolCall // the tool call, if any
}

// toolCall is a function_call (arguments JSON) or, when custom, a
// custom_tool_call (free-form input).
type toolCall struct {
	custom  bool
	name    string
	payload string
}

// answer decides the reply to a conversation.
func answer(input []inputItem) reply {
	if n := len(input); n > 0 && isToolOutput(input[n-1].Type) {
		return afterTool(input, input[n-1])
	}
	msg := lastUserText(input)
	verb, rest := command(msg)
	switch verb {
	case "run":
		return runReply(rest)
	case "patch":
		return patchReply(input, rest)
	case "plan":
		return planReply(rest)
	}
	return helpReply(msg)
}

func isToolOutput(typ string) bool {
	return typ == "function_call_output" || typ == "custom_tool_call_output"
}

// lastUserText is the text of the last user message: what the user just
// said, after any context messages the server put before it.
func lastUserText(input []inputItem) string {
	for i := len(input) - 1; i >= 0; i-- {
		if input[i].Type == "message" && input[i].Role == "user" {
			return input[i].text()
		}
	}
	return ""
}

// command splits "verb: rest" for the demo's verbs (any letter case).
func command(msg string) (verb, rest string) {
	trimmed := strings.TrimLeft(msg, " \t\r\n")
	for _, v := range [...]string{"run", "patch", "plan"} {
		p := v + ":"
		if len(trimmed) >= len(p) && strings.EqualFold(trimmed[:len(p)], p) {
			return v, trimmed[len(p):]
		}
	}
	return "", ""
}

func runReply(rest string) reply {
	cmd := strings.TrimSpace(rest)
	if cmd == "" {
		return usageReply("`run:` needs a command after it, for example `run: ls -la`.")
	}
	args, _ := json.Marshal(map[string]string{"cmd": cmd})
	return reply{
		summary: "**Running a command**\n\nThe message asks me to run `" + oneLine(cmd, 80) + "`, so I call exec_command.",
		call:    &toolCall{name: "exec_command", payload: string(args)},
	}
}

func patchReply(input []inputItem, rest string) reply {
	rest = strings.TrimLeft(rest, " \t")
	file, text := rest, ""
	if i := strings.IndexAny(rest, " \t\r\n"); i >= 0 {
		file, text = rest[:i], strings.TrimLeft(rest[i+1:], " \t")
	}
	text = strings.TrimRight(text, "\r\n")
	if file == "" || text == "" || strings.HasPrefix(file, "***") {
		return usageReply("`patch:` needs a file name and the text to write, for example `patch: notes.txt Hello from agentd`.")
	}
	lines := splitLines(text)
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	if old := lastWritten(input, file); old != nil {
		b.WriteString("*** Update File: " + file + "\n@@\n")
		for _, l := range old {
			b.WriteString("-" + l + "\n")
		}
	} else {
		b.WriteString("*** Add File: " + file + "\n")
	}
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	b.WriteString("*** End Patch\n")
	return reply{
		summary: "**Writing a file**\n\nThe message asks me to write " + oneLine(file, 80) + ", so I call apply_patch.",
		call:    &toolCall{custom: true, name: "apply_patch", payload: b.String()},
	}
}

// lastWritten returns the lines the last apply_patch call in the
// conversation wrote to file, or nil when none did.
func lastWritten(input []inputItem, file string) []string {
	var found []string
	for _, it := range input {
		if it.Type != "custom_tool_call" || it.Name != "apply_patch" {
			continue
		}
		var lines []string
		in := false
		hit := false
		for _, l := range strings.Split(it.Input, "\n") {
			switch {
			case l == "*** Add File: "+file || l == "*** Update File: "+file:
				in, hit, lines = true, true, nil
			case strings.HasPrefix(l, "*** "):
				in = false
			case in && strings.HasPrefix(l, "+"):
				lines = append(lines, l[1:])
			}
		}
		if hit {
			found = lines
		}
	}
	return found
}

func planReply(rest string) reply {
	var steps []string
	for _, l := range splitLines(rest) {
		if s := stripBullet(strings.TrimSpace(l)); s != "" {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return usageReply("`plan:` needs steps after it, one per line.")
	}
	type step struct {
		Step   string `json:"step"`
		Status string `json:"status"`
	}
	plan := make([]step, len(steps))
	for i, s := range steps {
		plan[i] = step{Step: s, Status: "pending"}
	}
	plan[0].Status = "in_progress"
	args, _ := json.Marshal(map[string]any{"explanation": "Plan taken from your message.", "plan": plan})
	return reply{
		summary: "**Recording a plan**\n\nThe message lists " + strconv.Itoa(len(steps)) + " step(s), so I call update_plan.",
		call:    &toolCall{name: "update_plan", payload: string(args)},
	}
}

// stripBullet removes a list marker: "- ", "* ", "• ", "1. ", "2) ", "[ ] ".
func stripBullet(s string) string {
	for _, p := range [...]string{"- ", "* ", "• ", "[ ] ", "[x] "} {
		if strings.HasPrefix(s, p) {
			return strings.TrimSpace(s[len(p):])
		}
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && s[i+1] == ' ' {
		return strings.TrimSpace(s[i+2:])
	}
	return s
}

func afterTool(input []inputItem, out inputItem) reply {
	name := "tool"
	for _, it := range input {
		if (it.Type == "function_call" || it.Type == "custom_tool_call") && it.CallID == out.CallID {
			name = it.Name
		}
	}
	quoted := quote(out.outputText())
	var text string
	switch name {
	case "exec_command":
		text = "The command ran. Here is what it returned:\n\n" + quoted
	case "apply_patch":
		text = "I sent the patch to apply_patch, which answered:\n\n" + quoted
	case "update_plan":
		text = "The plan is recorded. The tool answered:\n\n" + quoted
	default:
		text = "The " + name + " tool answered:\n\n" + quoted
	}
	return reply{
		summary: "**Reading the tool output**\n\nThe " + name + " call finished, so I report what it returned.",
		text:    text,
	}
}

func usageReply(text string) reply {
	return reply{summary: "**Explaining a command**\n\nThe command is missing a part, so I show how to use it.", text: text}
}

func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
