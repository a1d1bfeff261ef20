package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// DefaultTranscriptDir holds the sessions recorded with the reference
// server; AGENTD_REFERENCE_TRANSCRIPTS overrides it.
const DefaultTranscriptDir = "/work/shared/reference/transcripts"

// TranscriptDir returns the directory of the reference transcripts.
func TranscriptDir() string {
	if d := os.Getenv("AGENTD_REFERENCE_TRANSCRIPTS"); d != "" {
		return d
	}
	return DefaultTranscriptDir
}

// refRecord is one line of a reference transcript: a message sent by the
// reference server (FromServer) or by the recording client, or a note the
// recorder wrote between steps.
type refRecord struct {
	Line       int
	FromServer bool
	Note       string
	Msg        map[string]json.RawMessage
	Raw        json.RawMessage
}

// method returns the record's "method" ("" for a response).
func (r refRecord) method() string {
	var s string
	_ = json.Unmarshal(r.Msg["method"], &s)
	return s
}

func (r refRecord) id() json.RawMessage { return r.Msg["id"] }

// isResponse reports whether the record is a result or an error.
func (r refRecord) isResponse() bool {
	_, res := r.Msg["result"]
	_, err := r.Msg["error"]
	return r.method() == "" && (res || err)
}

// loadTranscript reads a transcript by base name ("text-turn.jsonl"),
// skipping the test when the directory is not there. With untilNote set,
// it stops at the first note with that text. With fromNote set, it keeps
// what precedes the first note (the handshake and the thread's start) and
// what follows the note with that text, and skips what is between.
func loadTranscript(t testing.TB, name, fromNote, untilNote string) []refRecord {
	t.Helper()
	path := filepath.Join(TranscriptDir(), name)
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		t.Skipf("reference transcript %s not found (set AGENTD_REFERENCE_TRANSCRIPTS): %v", path, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []refRecord
	skipping, foundFrom := false, fromNote == ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Dir  string          `json:"dir"`
			Note string          `json:"note"`
			Msg  json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		r := refRecord{Line: line, Raw: rec.Msg}
		switch rec.Dir {
		case "note":
			if untilNote != "" && rec.Note == untilNote {
				return out
			}
			if !foundFrom {
				skipping = rec.Note != fromNote
				foundFrom = !skipping
			}
			continue
		case "in":
			r.FromServer = true
		case "out":
		default:
			t.Fatalf("%s:%d: unknown direction %q", path, line, rec.Dir)
		}
		if skipping {
			continue
		}
		if err := json.Unmarshal(rec.Msg, &r.Msg); err != nil {
			t.Fatalf("%s:%d: message is not an object: %v", path, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !foundFrom {
		t.Fatalf("%s: no note %q", path, fromNote)
	}
	if untilNote != "" {
		t.Fatalf("%s: no note %q", path, untilNote)
	}
	return out
}

// refThreadStart returns the first thread/start request and its result in
// a transcript.
func refThreadStart(recs []refRecord) (params, result map[string]any, err error) {
	var id string
	for _, r := range recs {
		switch {
		case !r.FromServer && r.method() == "thread/start":
			id = string(r.id())
			if err := json.Unmarshal(r.Msg["params"], &params); err != nil {
				return nil, nil, err
			}
		case r.FromServer && id != "" && r.isResponse() && string(r.id()) == id:
			if err := json.Unmarshal(r.Msg["result"], &result); err != nil {
				return nil, nil, err
			}
			return params, result, nil
		}
	}
	return nil, nil, fmt.Errorf("no thread/start with a result")
}
