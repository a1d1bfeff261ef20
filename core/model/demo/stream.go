package demo

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// eventWriter writes SSE events, flushing each so that the client sees
// them one by one. After a write error it writes nothing more.
type eventWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	seq int
	err error
	buf bytes.Buffer
}

func (e *eventWriter) send(typ string, fields map[string]any) {
	if e.err != nil {
		return
	}
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	e.buf.Reset()
	e.buf.WriteString("event: " + typ + "\ndata: ")
	enc := json.NewEncoder(&e.buf)
	enc.SetEscapeHTML(false)
	if e.err = enc.Encode(fields); e.err != nil {
		return
	}
	// Encode ended the JSON with a newline; one more ends the event.
	e.buf.WriteByte('\n')
	if _, e.err = e.w.Write(e.buf.Bytes()); e.err == nil {
		e.err = e.rc.Flush()
	}
}

// writeStream streams reply rp as one response. n (the number of input
// items) makes the ids unique within a conversation without keeping state.
func writeStream(w http.ResponseWriter, model string, n, inWords int, rp reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &eventWriter{w: w, rc: http.NewResponseController(w)}
	id := strconv.Itoa(n)
	respID := "resp_demo_" + id
	e.send("response.created", map[string]any{"response": map[string]any{
		"id": respID, "object": "response", "status": "in_progress", "model": model}})

	var output []any
	rsID := "rs_demo_" + id
	e.send("response.output_item.added", map[string]any{"output_index": 0,
		"item": map[string]any{"type": "reasoning", "id": rsID, "summary": []any{}}})
	e.send("response.reasoning_summary_part.added", map[string]any{"item_id": rsID, "output_index": 0,
		"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
	for _, d := range deltas(rp.summary) {
		e.send("response.reasoning_summary_text.delta", map[string]any{"item_id": rsID, "output_index": 0,
			"summary_index": 0, "delta": d})
	}
	e.send("response.reasoning_summary_part.done", map[string]any{"item_id": rsID, "output_index": 0,
		"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": rp.summary}})
	rs := map[string]any{"type": "reasoning", "id": rsID,
		"summary": []any{map[string]any{"type": "summary_text", "text": rp.summary}}}
	e.send("response.output_item.done", map[string]any{"output_index": 0, "item": rs})
	output = append(output, rs)

	outWords := words(rp.summary)
	switch c := rp.call; {
	case c == nil:
		output = append(output, writeMessage(e, "msg_demo_"+id, rp.text))
		outWords += words(rp.text)
	case c.custom:
		output = append(output, writeCustomCall(e, "ctc_demo_"+id, "call_demo_"+id, c))
		outWords += words(c.payload)
	default:
		output = append(output, writeFunctionCall(e, "fc_demo_"+id, "call_demo_"+id, c))
		outWords += words(c.payload)
	}

	e.send("response.completed", map[string]any{"response": map[string]any{
		"id": respID, "object": "response", "status": "completed", "model": model, "output": output,
		"usage": map[string]any{
			"input_tokens":          inWords,
			"input_tokens_details":  map[string]any{"cached_tokens": 0},
			"output_tokens":         outWords,
			"output_tokens_details": map[string]any{"reasoning_tokens": words(rp.summary)},
			"total_tokens":          inWords + outWords,
		},
	}})
}

func writeMessage(e *eventWriter, id, text string) map[string]any {
	e.send("response.output_item.added", map[string]any{"output_index": 1, "item": map[string]any{
		"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
	for _, d := range deltas(text) {
		e.send("response.output_text.delta", map[string]any{"item_id": id, "output_index": 1,
			"content_index": 0, "delta": d})
	}
	item := map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	e.send("response.output_item.done", map[string]any{"output_index": 1, "item": item})
	return item
}

func writeFunctionCall(e *eventWriter, id, callID string, c *toolCall) map[string]any {
	e.send("response.output_item.added", map[string]any{"output_index": 1, "item": map[string]any{
		"type": "function_call", "id": id, "call_id": callID, "name": c.name, "arguments": "", "status": "in_progress"}})
	e.send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": 1, "delta": c.payload})
	item := map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": c.name,
		"arguments": c.payload, "status": "completed"}
	e.send("response.output_item.done", map[string]any{"output_index": 1, "item": item})
	return item
}

func writeCustomCall(e *eventWriter, id, callID string, c *toolCall) map[string]any {
	e.send("response.output_item.added", map[string]any{"output_index": 1, "item": map[string]any{
		"type": "custom_tool_call", "id": id, "call_id": callID, "name": c.name, "input": "", "status": "in_progress"}})
	for _, line := range strings.SplitAfter(c.payload, "\n") {
		if line != "" {
			e.send("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": 1, "delta": line})
		}
	}
	item := map[string]any{"type": "custom_tool_call", "id": id, "call_id": callID, "name": c.name,
		"input": c.payload, "status": "completed"}
	e.send("response.output_item.done", map[string]any{"output_index": 1, "item": item})
	return item
}

// deltas splits text the way a model streams it: a few words at a time.
func deltas(text string) []string {
	const perDelta = 3
	var out []string
	start, n := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' || text[i] == '\n' {
			n++
			if n == perDelta {
				out = append(out, text[start:i+1])
				start, n = i+1, 0
			}
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}
