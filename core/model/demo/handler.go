package demo

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// maxRequestBody bounds a request; a long conversation is a few MiB.
const maxRequestBody = 64 << 20

// Handler serves POST …/responses as the demo model. The zero value is
// ready to use and it keeps no state between requests: the answer depends
// only on the request.
type Handler struct{}

// request is the part of a Responses request the demo reads.
type request struct {
	Model  string      `json:"model"`
	Stream *bool       `json:"stream"`
	Input  []inputItem `json:"input"`
}

// inputItem is one input item, with the fields of every type it reads.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// contentPart is one part of a message's content or of a structured tool
// output.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// text joins the text parts of a message item.
func (it inputItem) text() string {
	return partsText(it.Content)
}

// outputText is a tool output as text: the string, or the text parts of a
// list of content items.
func (it inputItem) outputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	return partsText(it.Output)
}

func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ServeHTTP answers one request with an event stream, or an error in the
// Responses API's JSON form.
func (Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		writeError(w, http.StatusNotFound, "not_found", "the demo model only serves POST /v1/responses")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "the request exceeds 64 MiB")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request", "cannot read the request: "+err.Error())
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", "the request is not valid JSON: "+err.Error())
		return
	}
	if req.Stream != nil && !*req.Stream {
		writeError(w, http.StatusBadRequest, "unsupported_value", "the demo model only streams; set \"stream\": true")
		return
	}
	if req.Model == "" {
		req.Model = "demo"
	}
	plan := answer(req.Input)
	writeStream(w, req.Model, len(req.Input), inputWords(req.Input), plan)
}

// writeError writes {"error":{…}} with the status.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "invalid_request_error", "code": code, "param": nil,
	}})
	_, _ = w.Write(b)
}

// inputWords counts the words of the input, the demo's token count.
func inputWords(input []inputItem) int {
	n := 0
	for _, it := range input {
		switch it.Type {
		case "message":
			n += words(it.text())
		case "function_call":
			n += words(it.Arguments)
		case "custom_tool_call":
			n += words(it.Input)
		case "function_call_output", "custom_tool_call_output":
			n += words(it.outputText())
		}
	}
	return n
}

func words(s string) int { return len(strings.Fields(s)) }
