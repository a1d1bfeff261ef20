package mockmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Event is one SSE event: its type and its JSON data (which repeats the
// type, as the Responses API does).
type Event struct {
	Type string
	Data map[string]any
	// stamp marks the events of a StampedText, completed when written.
	stamp stampKind
}

// Events is a run of events; the builders return it so that they compose.
type Events []Event

// Usage is the token usage of response.completed.
type Usage struct {
	Input, Cached, Output, Reasoning int64
}

func ev(typ string, fields map[string]any) Event {
	fields["type"] = typ
	return Event{Type: typ, Data: fields}
}

// Raw is one event with arbitrary JSON data. It panics on invalid JSON (a
// bug in the test). The event name is typ; the data is used as given, so it
// may disagree with typ.
func Raw(typ, data string) Events {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		panic(fmt.Sprintf("mockmodel.Raw(%q): %v", typ, err))
	}
	return Events{{Type: typ, Data: m}}
}

// Created is response.created.
func Created(respID string) Events {
	return Events{ev("response.created", map[string]any{
		"response": map[string]any{"id": respID, "object": "response", "status": "in_progress"},
	})}
}

// CreatedBy is response.created naming the model that serves the response.
func CreatedBy(respID, model string) Events {
	return Events{ev("response.created", map[string]any{
		"response": map[string]any{"id": respID, "object": "response", "status": "in_progress", "model": model},
	})}
}

func usageJSON(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": u.Cached},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens":          u.Input + u.Output,
	}
}

// Completed is response.completed with usage u (total = input + output).
// SSE fills its output with the items done before it.
func Completed(respID string, u Usage) Events {
	return Events{ev("response.completed", map[string]any{
		"response": map[string]any{"id": respID, "object": "response", "status": "completed", "usage": usageJSON(u)},
	})}
}

// CompletedBy is Completed naming the serving model and the end_turn hint.
func CompletedBy(respID, model string, endTurn bool, u Usage) Events {
	e := Completed(respID, u)
	r := e[0].Data["response"].(map[string]any)
	r["model"] = model
	r["end_turn"] = endTurn
	return e
}

// Failed is response.failed with an error code and message.
func Failed(respID, code, message string) Events {
	return Events{ev("response.failed", map[string]any{
		"response": map[string]any{"id": respID, "object": "response", "status": "failed",
			"error": map[string]any{"code": code, "message": message}},
	})}
}

// Incomplete is response.incomplete with the reason in incomplete_details.
func Incomplete(respID, reason string) Events {
	return Events{ev("response.incomplete", map[string]any{
		"response": map[string]any{"id": respID, "object": "response", "status": "incomplete",
			"incomplete_details": map[string]any{"reason": reason}},
	})}
}

// ErrorEvent is an "error" event.
func ErrorEvent(code, message string) Events {
	return Events{ev("error", map[string]any{"code": code, "message": message, "param": nil})}
}

// Text is an assistant message streamed one word (with its trailing
// space) per delta.
func Text(itemID, text string) Events {
	return message(itemID, text, splitWords(text))
}

// TextN is an assistant message streamed in n deltas of about equal size.
func TextN(itemID, text string, n int) Events {
	return message(itemID, text, splitN(text, n))
}

func message(itemID, text string, deltas []string) Events {
	out := Events{ev("response.output_item.added", map[string]any{
		"output_index": 0,
		"item": map[string]any{"type": "message", "id": itemID, "role": "assistant",
			"status": "in_progress", "content": []any{}},
	})}
	for _, d := range deltas {
		out = append(out, ev("response.output_text.delta", map[string]any{
			"item_id": itemID, "output_index": 0, "content_index": 0, "delta": d,
		}))
	}
	return append(out, ev("response.output_item.done", map[string]any{
		"output_index": 0,
		"item": map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}},
	}))
}

// Reasoning is a reasoning item with one summary part per entry of summary
// (each streamed a word per delta) and, when raw is not empty, raw
// reasoning text. The done item carries encrypted_content "enc-<id>".
func Reasoning(itemID string, summary []string, raw string) Events {
	out := Events{ev("response.output_item.added", map[string]any{
		"output_index": 0,
		"item":         map[string]any{"type": "reasoning", "id": itemID, "summary": []any{}},
	})}
	var parts []any
	for i, s := range summary {
		out = append(out, ev("response.reasoning_summary_part.added", map[string]any{
			"item_id": itemID, "output_index": 0, "summary_index": i,
			"part": map[string]any{"type": "summary_text", "text": ""},
		}))
		for _, d := range splitWords(s) {
			out = append(out, ev("response.reasoning_summary_text.delta", map[string]any{
				"item_id": itemID, "output_index": 0, "summary_index": i, "delta": d,
			}))
		}
		out = append(out, ev("response.reasoning_summary_part.done", map[string]any{
			"item_id": itemID, "output_index": 0, "summary_index": i,
			"part": map[string]any{"type": "summary_text", "text": s},
		}))
		parts = append(parts, map[string]any{"type": "summary_text", "text": s})
	}
	item := map[string]any{"type": "reasoning", "id": itemID, "summary": nonNil(parts),
		"encrypted_content": "enc-" + itemID}
	if raw != "" {
		for _, d := range splitWords(raw) {
			out = append(out, ev("response.reasoning_text.delta", map[string]any{
				"item_id": itemID, "output_index": 0, "content_index": 0, "delta": d,
			}))
		}
		item["content"] = []any{map[string]any{"type": "reasoning_text", "text": raw}}
	}
	return append(out, ev("response.output_item.done", map[string]any{"output_index": 0, "item": item}))
}

// FunctionCall is a function_call item with item id "fc_<callID>";
// arguments is the JSON text of the arguments.
func FunctionCall(callID, name, arguments string) Events {
	id := "fc_" + callID
	return Events{
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": "", "status": "in_progress"}}),
		ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": 0, "delta": arguments}),
		ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": 0, "arguments": arguments}),
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": arguments, "status": "completed"}}),
	}
}

// ExecCommand is a call of the exec_command tool with {"cmd": cmd}.
func ExecCommand(callID, cmd string) Events {
	return FunctionCall(callID, "exec_command", jsonText(map[string]any{"cmd": cmd}))
}

// Shell is a call of the shell function with {"command": argv}.
func Shell(callID string, argv ...string) Events {
	return FunctionCall(callID, "shell", jsonText(map[string]any{"command": argv}))
}

// ShellCommand is a call of the shell_command function with {"command":
// cmd}.
func ShellCommand(callID, cmd string) Events {
	return FunctionCall(callID, "shell_command", jsonText(map[string]any{"command": cmd}))
}

// ApplyPatchFunction is a call of apply_patch as a JSON function, with
// {"input": patch}.
func ApplyPatchFunction(callID, patch string) Events {
	return FunctionCall(callID, "apply_patch", jsonText(map[string]any{"input": patch}))
}

// LocalShellCall is a local_shell_call item (the hosted local_shell tool)
// with item id "lsh_<callID>" and the action {"type": "exec", "command":
// argv}.
func LocalShellCall(callID string, argv ...string) Events {
	return LocalShellAction(callID, map[string]any{"type": "exec", "command": argv})
}

// LocalShellAction is a local_shell_call item with item id "lsh_<callID>"
// and the given action.
func LocalShellAction(callID string, action map[string]any) Events {
	item := func(status string) map[string]any {
		return map[string]any{"type": "local_shell_call", "id": "lsh_" + callID, "call_id": callID, "status": status, "action": action}
	}
	return Events{
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": item("in_progress")}),
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": item("completed")}),
	}
}

// UpdatePlan is a call of the update_plan tool; the first step is
// in_progress, the others pending.
func UpdatePlan(callID string, steps ...string) Events {
	plan := make([]any, len(steps))
	for i, s := range steps {
		status := "pending"
		if i == 0 {
			status = "in_progress"
		}
		plan[i] = map[string]any{"step": s, "status": status}
	}
	return FunctionCall(callID, "update_plan", jsonText(map[string]any{"plan": plan}))
}

// CustomToolCall is a custom_tool_call item with item id "ctc_<callID>",
// its input streamed one line per delta.
func CustomToolCall(callID, name, input string) Events {
	id := "ctc_" + callID
	out := Events{ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "custom_tool_call", "id": id, "call_id": callID, "name": name, "input": "", "status": "in_progress"}})}
	for _, line := range strings.SplitAfter(input, "\n") {
		if line == "" {
			continue
		}
		out = append(out, ev("response.custom_tool_call_input.delta", map[string]any{
			"item_id": id, "output_index": 0, "delta": line}))
	}
	return append(out, ev("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "custom_tool_call", "id": id, "call_id": callID, "name": name, "input": input, "status": "completed"}}))
}

// ApplyPatch is a call of the apply_patch custom tool.
func ApplyPatch(callID, patch string) Events {
	return CustomToolCall(callID, "apply_patch", patch)
}

// finish flattens the parts and fills in output_index, sequence_number and
// the output of response.completed. It copies every event it changes.
func finish(parts []Events) []Event {
	var out []Event
	var done []any
	index := -1
	for _, p := range parts {
		for _, e := range p {
			d := make(map[string]any, len(e.Data)+1)
			for k, v := range e.Data {
				d[k] = v
			}
			if e.Type == "response.output_item.added" {
				index++
			}
			if _, ok := d["output_index"]; ok && index >= 0 {
				d["output_index"] = index
			}
			if e.Type == "response.output_item.done" {
				done = append(done, d["item"])
			}
			if e.Type == "response.completed" {
				if r, ok := d["response"].(map[string]any); ok {
					if _, has := r["output"]; !has {
						r2 := make(map[string]any, len(r)+1)
						for k, v := range r {
							r2[k] = v
						}
						r2["output"] = nonNil(done)
						d["response"] = r2
					}
				}
			}
			d["sequence_number"] = len(out)
			out = append(out, Event{Type: e.Type, Data: d, stamp: e.stamp})
		}
	}
	return out
}

// encode writes one event in SSE framing.
func (e Event) encode(dataOnly bool) []byte {
	var b bytes.Buffer
	if !dataOnly {
		b.WriteString("event: ")
		b.WriteString(e.Type)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.WriteString(jsonText(e.Data))
	b.WriteString("\n\n")
	return b.Bytes()
}

func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("mockmodel: %v", err))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func nonNil(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// splitWords splits s after each space, so that joining the pieces gives s.
func splitWords(s string) []string {
	var out []string
	for _, w := range strings.SplitAfter(s, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// splitN splits s into n pieces of about equal length on rune boundaries.
func splitN(s string, n int) []string {
	if n < 1 {
		n = 1
	}
	runes := utf8.RuneCountInString(s)
	if n > runes {
		n = max(runes, 1)
	}
	out := make([]string, 0, n)
	per, extra := runes/n, runes%n
	i := 0
	for k := 0; k < n; k++ {
		size := per
		if k < extra {
			size++
		}
		j := i
		for c := 0; c < size; c++ {
			_, w := utf8.DecodeRuneInString(s[j:])
			j += w
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// ProposedPlan is the text of a plan-mode message: intro, then plan in a
// <proposed_plan> block whose tags stand on lines of their own. Stream it
// with TextN to cut the tags across deltas.
func ProposedPlan(intro, plan string) string {
	return intro + "\n<proposed_plan>\n" + plan + "</proposed_plan>\n"
}

// WebSearchCall is a web_search_call item (the hosted web_search tool)
// with the given id and action ({"type": "search", "query": …},
// {"type": "open_page", "url": …}, {"type": "find_in_page", "url": …,
// "pattern": …}): added without an action, in progress, then done with it.
func WebSearchCall(id string, action map[string]any) Events {
	return Events{
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "web_search_call", "id": id, "status": "in_progress"}}),
		ev("response.web_search_call.in_progress", map[string]any{"output_index": 0, "item_id": id}),
		ev("response.web_search_call.searching", map[string]any{"output_index": 0, "item_id": id}),
		ev("response.web_search_call.completed", map[string]any{"output_index": 0, "item_id": id}),
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "web_search_call", "id": id, "status": "completed", "action": action}}),
	}
}

// ImageGenerationCall is an image_generation_call item (the hosted
// image_generation tool) whose result is the base64 of image, with the
// model's revised prompt.
func ImageGenerationCall(id, revisedPrompt, resultBase64 string) Events {
	return Events{
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "image_generation_call", "id": id, "status": "in_progress"}}),
		ev("response.image_generation_call.in_progress", map[string]any{"output_index": 0, "item_id": id}),
		ev("response.image_generation_call.generating", map[string]any{"output_index": 0, "item_id": id}),
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "image_generation_call", "id": id, "status": "completed", "revised_prompt": revisedPrompt, "result": resultBase64}}),
	}
}
