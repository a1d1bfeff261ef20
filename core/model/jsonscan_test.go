package model

import (
	"encoding/json"
	"strings"
	"testing"
)

// oracle decodes the fields scanEvent reads with encoding/json, matching
// keys exactly (as the scanner does; encoding/json alone would also accept
// "Type" for "type").
func oracle(t *testing.T, data string) (eventFields, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &m); err != nil || m == nil {
		// A JSON null decodes into a map without error; it is no event
		// object, and the scanner may refuse it.
		return eventFields{}, false
	}
	var f eventFields
	str := func(key string, dst *string) bool {
		raw, ok := m[key]
		if !ok || string(raw) == "null" {
			return true
		}
		return json.Unmarshal(raw, dst) == nil
	}
	num := func(key string, dst *int) bool {
		raw, ok := m[key]
		if !ok || string(raw) == "null" {
			return true
		}
		return json.Unmarshal(raw, dst) == nil
	}
	span := func(key string, dst *string) {
		if raw, ok := m[key]; ok && string(raw) != "null" {
			*dst = string(raw)
		}
	}
	ok := str("type", &f.typ) && str("item_id", &f.itemID) && str("delta", &f.delta) &&
		num("summary_index", &f.summaryIndex) && num("content_index", &f.contentIndex) &&
		str("code", &f.code) && str("message", &f.message)
	span("item", &f.item)
	span("response", &f.response)
	span("error", &f.errorObj)
	return f, ok
}

func TestScanEventMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":2,"delta":"hello ","sequence_number":7}`,
		`{"type":"response.output_text.delta","delta":"tab\tquote\"slash\/back\\nl\nuni\u00e9\ud83d\ude00"}`,
		`{"type":"x","delta":"caf\u00e9 – ok"}`,
		`{"delta":"lone \ud800 surrogate","type":"x"}`,
		`{"delta":"low first \udc00\ud800 end"}`,
		`{"delta":"bad utf8 ` + "\xff\xfe" + ` end"}`,
		` { "type" : "response.reasoning_summary_part.added" , "summary_index" : 3 , "part" : {"type":"summary_text","text":""} } `,
		`{"type":"response.output_item.done","item":{"type":"message","id":"m","content":[{"type":"output_text","text":"a}]\"b"}]}}`,
		`{"type":"error","code":null,"message":"boom","param":null}`,
		`{"type":"error","error":{"code":"c","message":"m"}}`,
		`{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":1},"output":[]}}`,
		`{"type":"a","type":"b"}`,
		`{"summary_index":-4,"content_index":0}`,
		`{"item":null,"response":null,"delta":null}`,
		`{}`,
		`{"n":1.5e3,"b":true,"f":false,"arr":[1,[2,{"x":"]"}]],"delta":"x"}`,
	}
	for _, data := range cases {
		want, ok := oracle(t, data)
		if !ok {
			t.Fatalf("oracle rejects %q", data)
		}
		var got eventFields
		if err := scanEvent(data, &got); err != nil {
			t.Errorf("scanEvent(%q): %v", data, err)
			continue
		}
		if got != want {
			t.Errorf("scanEvent(%q)\n got %+v\nwant %+v", data, got, want)
		}
	}
}

func TestScanEventRejectsMalformed(t *testing.T) {
	for _, data := range []string{
		``, `[]`, `"x"`, `{`, `{"type"}`, `{"type":}`, `{"type":"x"`, `{"type":"x",}`,
		`{"type":"x"} trailing`, `{"delta":"unterminated}`, "{\"delta\":\"ctl\x01\"}",
		`{"delta":"bad \q escape"}`, `{"delta":"bad \u12 escape"}`, `{"type":1}`,
		`{"summary_index":"1"}`, `{"summary_index":1.5}`, `{"summary_index":99999999999999999999}`,
		`{"item":{"a":"b"}`, `{"item":tru}`, `{"a" "b"}`, `{"a":1 "b":2}`,
		`{"type":{},"type":"x"}`, // named twice, first as no string (duplicateNames)
		`{"item":` + strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1) + `}`,
	} {
		var f eventFields
		if err := scanEvent(data, &f); err == nil {
			t.Errorf("scanEvent(%q) = %+v, want an error", data, f)
		}
	}
}

func TestScanEventNoAllocationForPlainDelta(t *testing.T) {
	data := `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"héllo wörld ","sequence_number":12}`
	var f eventFields
	allocs := testing.AllocsPerRun(100, func() {
		if err := scanEvent(data, &f); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("scanEvent allocates %v times per delta, want 0", allocs)
	}
	if f.delta != "héllo wörld " || f.itemID != "msg_1" {
		t.Errorf("got %+v", f)
	}
}

func FuzzScanEvent(f *testing.F) {
	f.Add(`{"type":"response.output_text.delta","item_id":"m","delta":"a\nb\u00e9"}`)
	f.Add(`{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":3}}}`)
	f.Add(`{"summary_index":2,"content_index":-1,"item":{"x":[1,2,"]"]},"error":null}`)
	f.Add(`{"delta":"\ud83d\ude00\udc00"}`)
	f.Fuzz(func(t *testing.T, data string) {
		var got eventFields
		err := scanEvent(data, &got)
		want, ok := oracle(t, data)
		if !ok {
			return // the scanner may accept or reject; it must only not panic
		}
		if err != nil && !duplicateNames(data) {
			t.Fatalf("scanEvent(%q): %v; encoding/json accepts it", data, err)
		}
		if err != nil {
			return // an event naming a member twice: it may be refused
		}
		// Spans of nested values are compared after compaction by the
		// oracle's RawMessage (which keeps them verbatim).
		if got != want {
			t.Fatalf("scanEvent(%q)\n got %+v\nwant %+v", data, got, want)
		}
	})
}

// duplicateNames reports whether the JSON object data names a member of
// its top level twice. encoding/json keeps the last; the scanner may
// refuse such an event instead, when an earlier one has a value of the
// wrong kind (a model never sends one).
func duplicateNames(data string) bool {
	dec := json.NewDecoder(strings.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		name, _ := tok.(string)
		if seen[name] {
			return true
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}

// An event's data that is JSON but no object (a null, an array, a
// number, a string) is refused, not read as an event of no fields.
func TestScanEventRefusesNonObjects(t *testing.T) {
	for _, data := range []string{"null", " null ", "[]", "1", `"response.output_text.delta"`} {
		var f eventFields
		if err := scanEvent(data, &f); err == nil {
			t.Errorf("scanEvent(%q) = %+v, no error", data, f)
		}
	}
}
