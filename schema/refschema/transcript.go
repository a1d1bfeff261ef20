package refschema

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DefaultTranscriptDir holds recorded sessions with the reference server;
// AGENTD_REFERENCE_TRANSCRIPTS overrides it.
const DefaultTranscriptDir = "/work/shared/reference/transcripts"

// Message is one recorded JSON-RPC message.
type Message struct {
	File       string // base name of the transcript
	Line       int    // 1-based line in the file
	FromServer bool
	Conn       string // connection of a multi-connection transcript ("", "2", …)
	Raw        json.RawMessage
	ID         json.RawMessage // nil for notifications
	// Method is the message's method or, for a response, the method of the
	// request it answers ("" when that request was not recorded).
	Method   string
	Params   json.RawMessage
	Result   json.RawMessage
	Error    json.RawMessage
	Response bool // a result or an error
}

// Transcripts reads every recorded message, skipping the test when the
// transcripts are not there.
func Transcripts(t testing.TB) []Message {
	t.Helper()
	dir := DefaultTranscriptDir
	if d := os.Getenv("AGENTD_REFERENCE_TRANSCRIPTS"); d != "" {
		dir = d
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("no reference transcripts in %s (set AGENTD_REFERENCE_TRANSCRIPTS)", dir)
	}
	var out []Message
	for _, f := range files {
		msgs, err := readTranscript(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msgs...)
	}
	return out
}

func readTranscript(path string) ([]Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Message
	pending := map[string]string{} // conn + id → method
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(rec.Msg) == 0 {
			continue
		}
		m := Message{File: filepath.Base(path), Line: line, Raw: rec.Msg}
		switch {
		case strings.HasPrefix(rec.Dir, "in"):
			m.FromServer, m.Conn = true, strings.TrimPrefix(rec.Dir, "in")
		case strings.HasPrefix(rec.Dir, "out"):
			m.Conn = strings.TrimPrefix(rec.Dir, "out")
		default:
			continue
		}
		var body struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(rec.Msg, &body); err != nil {
			// Deliberately malformed input sent to the server.
			continue
		}
		m.ID, m.Method, m.Params, m.Result, m.Error = body.ID, body.Method, body.Params, body.Result, body.Error
		key := m.Conn + "\x00" + string(m.ID)
		switch {
		case m.Method != "" && m.ID != nil:
			pending[key] = m.Method
		case m.Method == "" && (m.Result != nil || m.Error != nil):
			m.Response = true
			m.Method = pending[key]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}
