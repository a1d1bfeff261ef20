package model

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzOutputElider checks the elider against a model of what its doc
// says it does, built on a plain SSE parser of its own (sseModel): the
// output has the input's lines and events, in order; the data of an
// event named response.completed, response.incomplete or
// response.failed (by the name in force at its first data line) that is
// JSON loses the arrays that are "response"."output" (names written
// plainly, at depths 1 and 2, every such member) and nothing else; any
// other data, line or byte is kept. Terminal data that is not JSON is
// not followed and is only held to the rest.
func FuzzOutputElider(f *testing.F) {
	for _, c := range elideCases {
		f.Add([]byte(c.in))
	}
	for _, s := range elideSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := []byte(elide(t, string(in))) // read whole and byte by byte alike
		if !isSubsequence(out, in) {
			t.Fatalf("in %q: out %q adds or moves bytes", in, out)
		}
		inLines, outLines := sseLines(in), sseLines(out)
		if len(inLines) != len(outLines) {
			t.Fatalf("in %q: %d lines, out %q: %d", in, len(inLines), out, len(outLines))
		}
		inEvents := sseModel(inLines)
		outEvents := sseModel(outLines)
		if len(inEvents) != len(outEvents) {
			t.Fatalf("in %q: %d events, out %q: %d", in, len(inEvents), out, len(outEvents))
		}
		looked := make([]bool, len(inLines)) // the data lines the elider may change
		for i, ie := range inEvents {
			oe := outEvents[i]
			if ie.name != oe.name || ie.lookedInto != oe.lookedInto {
				t.Fatalf("in %q: event %d named %q, out %q: %q", in, i, ie.name, out, oe.name)
			}
			want := ie.data
			if ie.lookedInto {
				for _, l := range ie.dataLines {
					looked[l] = true
				}
				if !json.Valid(ie.data) {
					continue // not followed
				}
				want = elideExpected(ie.data)
				var got, wantV any
				if err := json.Unmarshal(oe.data, &got); err != nil {
					t.Fatalf("in %q: event %d data %q no longer JSON: %v", in, i, oe.data, err)
				}
				if err := json.Unmarshal(want, &wantV); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, wantV) {
					t.Fatalf("in %q: event %d data %q decodes to %v, want %v", in, i, oe.data, got, wantV)
				}
			}
			if !bytes.Equal(oe.data, want) {
				t.Fatalf("in %q: event %d (%q) data\n%q\nbecame\n%q\nwant\n%q", in, i, ie.name, ie.data, oe.data, want)
			}
		}
		for i, l := range inLines {
			o := outLines[i]
			if l.end != o.end {
				t.Fatalf("in %q: line %d ends %q, out %q: %q", in, i, l.end, out, o.end)
			}
			if looked[i] {
				if !bytes.HasPrefix(o.text, []byte("data")) {
					t.Fatalf("in %q: data line %d became %q", in, i, o.text)
				}
				continue
			}
			if !bytes.Equal(l.text, o.text) {
				t.Fatalf("in %q: line %d %q became %q", in, i, l.text, o.text)
			}
		}
	})
}

// elideSeeds are streams as a server sends them, and the corners around.
var elideSeeds = []string{
	// A whole turn: created, deltas, the item, completed (CRLF).
	strings.ReplaceAll("event: response.created\n"+
		"data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"output\":[]}}\n\n"+
		"event: response.output_text.delta\n"+
		"data: {\"type\":\"response.output_text.delta\",\"delta\":\"a \\\"b\\\" \\\\ \\u2028\"}\n\n"+
		": keep-alive\n\n"+
		"event: response.output_item.done\n"+
		"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"message\",\"content\":[{\"text\":\"ok\"}]}}\n\n"+
		"event: response.completed\n"+
		"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[{\"type\":\"message\",\"content\":[{\"text\":\"ok ]}\\\"[{\"}]}],\"usage\":{\"output\":[1],\"total_tokens\":3}}}\n\n",
		"\n", "\r\n"),
	// Multi-line data, a comment and an id between its lines, bare CRs.
	"event: response.incomplete\r" +
		"data: {\"response\":\r: c\rdata:  {\"output\"\nid: 1\ndata: :\ndata: [\"x\",\rdata: {\"a\":[\"]\"]}\ndata: ]\n" +
		"data: ,\"output\":null}}\r\r",
	// "response" and "output" in strings, nested and at other depths.
	"event: response.failed\n" +
		"data: {\"x\":\"\\\"response\\\":{\\\"output\\\":[1]}\",\"item\":{\"response\":{\"output\":[2]}},\"response\":{\"error\":{\"output\":[3]},\"output\":[[\"output\"],{\"response\":{\"output\":[4]}}],\"status\":\"failed\"}}\n\n",
	// Not JSON.
	"event: response.completed\ndata: {\"response\":{\"output\":[1,}]}\n\nevent: response.completed\ndata: {\"response\":{\"output\":[}],\"x\":1}}\n\n",
	// Duplicate and escaped names, an output that is no array.
	"event: response.completed\ndata: {\"response\":{\"output\":[1],\"output\":\"x\",\"o\\u0075tput\":[2]},\"response\":{\"output\":{\"a\":[1]}}}\n\n",
	// Deeper than the depths tracked, outside and inside the output.
	"event: response.completed\ndata: {\"a\":" + strings.Repeat("[{\"output\":", 70) + "1" + strings.Repeat("}]", 70) +
		",\"response\":{\"output\":" + strings.Repeat("[", 70) + strings.Repeat("]", 70) + ",\"output\":[]}}\n\n",
	// An event with no blank line after it.
	"event: response.completed\ndata: {\"response\":{\"output\":[1]}}",
}

// sseLine is one line of a stream: its text and its end ("\n", "\r\n",
// "\r", or "" for an unfinished last line).
type sseLine struct {
	text []byte
	end  string
}

func sseLines(b []byte) []sseLine {
	var lines []sseLine
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			lines = append(lines, sseLine{text: b})
			break
		}
		end := b[i : i+1]
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			end = b[i : i+2]
		}
		lines = append(lines, sseLine{text: b[:i], end: string(end)})
		b = b[i+len(end):]
	}
	return lines
}

// sseEvent is an event as the model reads it.
type sseEvent struct {
	name string // from the last event line
	data []byte // the values of its data lines, joined by \n
	// lookedInto: the name in force at its first data line names an event
	// that repeats the output; dataLines are the indexes of its data lines.
	lookedInto bool
	dataLines  []int
}

// sseModel reads the events of a stream: a blank line ends an event
// that had a field; comments are left out. An event the stream ends in
// is read too (a parser drops it, but the elider does not know).
func sseModel(lines []sseLine) []sseEvent {
	var (
		events []sseEvent
		cur    sseEvent
		fields bool
		data   [][]byte
	)
	for i, l := range lines {
		if len(l.text) == 0 {
			if fields {
				cur.data = bytes.Join(data, []byte("\n"))
				events = append(events, cur)
			}
			cur, fields, data = sseEvent{}, false, nil
			continue
		}
		if l.text[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(l.text, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		fields = true
		switch string(name) {
		case "event":
			cur.name = string(value)
		case "data":
			if data == nil {
				switch cur.name {
				case "response.completed", "response.incomplete", "response.failed":
					cur.lookedInto = true
				}
			}
			data = append(data, value)
			cur.dataLines = append(cur.dataLines, i)
		}
	}
	if fields {
		cur.data = bytes.Join(data, []byte("\n"))
		events = append(events, cur)
	}
	return events
}

// elideExpected returns data (valid JSON) with each array that is the
// value of a member named "output" (written so) of an object that is the
// value of a member named "response" (written so) of the top-level
// object replaced by [] (keeping the line ends within it).
func elideExpected(data []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	var spans [][2]int
	// name reads a member's name and returns it as written.
	name := func() (string, bool) {
		from := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		if tok == json.Delim('}') {
			return "", false
		}
		return strings.TrimLeft(string(data[from:dec.InputOffset()]), " \t\r\n,"), true
	}
	// skip reads a value; the first token is given.
	skip := func(tok json.Token) {
		depth := 0
		for {
			if d, ok := tok.(json.Delim); ok {
				if d == '{' || d == '[' {
					depth++
				} else {
					depth--
				}
			}
			if depth == 0 {
				return
			}
			var err error
			if tok, err = dec.Token(); err != nil {
				panic(err)
			}
		}
	}
	next := func() json.Token {
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		return tok
	}
	tok := next()
	if tok != json.Delim('{') {
		return data
	}
	for {
		n, ok := name()
		if !ok {
			break
		}
		tok := next()
		if n != `"response"` || tok != json.Delim('{') {
			skip(tok)
			continue
		}
		for {
			n, ok := name()
			if !ok {
				break
			}
			tok := next()
			if n == `"output"` && tok == json.Delim('[') {
				from := int(dec.InputOffset()) - 1
				skip(tok)
				spans = append(spans, [2]int{from, int(dec.InputOffset())})
				continue
			}
			skip(tok)
		}
	}
	var b []byte
	at := 0
	for _, s := range spans {
		b = append(b, data[at:s[0]]...)
		b = append(b, '[')
		b = append(b, bytes.Repeat([]byte("\n"), bytes.Count(data[s[0]:s[1]], []byte("\n")))...)
		b = append(b, ']')
		at = s[1]
	}
	return append(b, data[at:]...)
}

// isSubsequence reports whether a is b with some bytes left out.
func isSubsequence(a, b []byte) bool {
	for _, c := range a {
		i := bytes.IndexByte(b, c)
		if i < 0 {
			return false
		}
		b = b[i+1:]
	}
	return true
}
