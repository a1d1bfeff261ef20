package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// elide runs in through an outputElider, read one byte at a time (every
// state crosses a read boundary) and all at once; both must agree.
func elide(t *testing.T, in string) string {
	t.Helper()
	whole, err := io.ReadAll(newOutputElider(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	bytewise, err := io.ReadAll(newOutputElider(iotest.OneByteReader(strings.NewReader(in))))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, bytewise) {
		t.Fatalf("read whole and byte by byte differ:\n%s\n%s", whole, bytewise)
	}
	return string(whole)
}

// elideCases are streams and what the elider makes of them (they also
// seed FuzzOutputElider).
var elideCases = func() []struct{ name, in, want string } {
	const ev = "event: response.completed\n"
	return []struct{ name, in, want string }{
		{"completed",
			ev + "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[{\"type\":\"message\",\"content\":[{\"text\":\"a ] } [ { \\\" \\\\\"}]}],\"usage\":{\"total_tokens\":3}}}\n\n",
			ev + "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[],\"usage\":{\"total_tokens\":3}}}\n\n"},
		{"incomplete and failed too",
			"event: response.incomplete\ndata: {\"response\":{\"output\":[1]}}\n\nevent:response.failed\ndata: {\"response\":{\"output\":[1]}}\n\n",
			"event: response.incomplete\ndata: {\"response\":{\"output\":[]}}\n\nevent:response.failed\ndata: {\"response\":{\"output\":[]}}\n\n"},
		{"response first, spaces, CRLF",
			"event: response.completed\r\ndata: { \"response\" : { \"output\" : [ 1, [2], {\"a\":3} ] , \"id\":\"r\"}, \"type\":\"response.completed\"}\r\n\r\n",
			"event: response.completed\r\ndata: { \"response\" : { \"output\" : [] , \"id\":\"r\"}, \"type\":\"response.completed\"}\r\n\r\n"},
		{"no space after data:",
			ev + "data:{\"response\":{\"output\":[\"x\"]}}\n\n",
			ev + "data:{\"response\":{\"output\":[]}}\n\n"},
		{"output split over data lines",
			ev + "data: {\"response\":{\"output\":[\"x\",\ndata: \"y\"],\"id\":\"r\"}}\n\n",
			ev + "data: {\"response\":{\"output\":[\ndata:],\"id\":\"r\"}}\n\n"},
		{"lines within the output stay",
			ev + "data: {\"response\":{\"output\":[\"x\",\n: keep-alive\nid: 7\nevent: response.completed\nretry\ndata: \"y\"],\"id\":\"r\"}}\n\n",
			ev + "data: {\"response\":{\"output\":[\n: keep-alive\nid: 7\nevent: response.completed\nretry\ndata:],\"id\":\"r\"}}\n\n"},
		{"null output stays", ev + "data: {\"response\":{\"output\":null}}\n\n", ev + "data: {\"response\":{\"output\":null}}\n\n"},
		{"a string before",
			ev + "data: {\"response\":{\"status\":\"x\",\"output\":[1]}}\n\n",
			ev + "data: {\"response\":{\"status\":\"x\",\"output\":[]}}\n\n"},
		{"output elsewhere stays",
			ev + "data: {\"output\":[1],\"item\":{\"output\":[2],\"response\":{\"output\":[3]}},\"x\":{\"response\":{\"output\":[4]}}}\n\n",
			ev + "data: {\"output\":[1],\"item\":{\"output\":[2],\"response\":{\"output\":[3]}},\"x\":{\"response\":{\"output\":[4]}}}\n\n"},
		{"names that only look alike stay",
			ev + "data: {\"response\":{\"outputs\":[1],\"o\\u0075tput\":[2],\"x\":\"\\\"output\\\":[3]\"}}\n\n",
			ev + "data: {\"response\":{\"outputs\":[1],\"o\\u0075tput\":[2],\"x\":\"\\\"output\\\":[3]\"}}\n\n"},
		{"other events and lines stay",
			"event: response.output_item.done\ndata: {\"response\":{\"output\":[1]}}\n\n: {\"response\":{\"output\":[1]}}\nevent: response.completed.x\ndata: {\"response\":{\"output\":[1]}}\n\n",
			"event: response.output_item.done\ndata: {\"response\":{\"output\":[1]}}\n\n: {\"response\":{\"output\":[1]}}\nevent: response.completed.x\ndata: {\"response\":{\"output\":[1]}}\n\n"},
		{"an event without a name stays",
			"data: {\"type\":\"response.completed\",\"response\":{\"output\":[1]}}\n\n",
			"data: {\"type\":\"response.completed\",\"response\":{\"output\":[1]}}\n\n"},
		{"the name lasts one event",
			ev + "data: {\"response\":{\"id\":\"a\"\n\ndata: {\"response\":{\"output\":[1]}}\n\n" + ev + "data: {\"response\":{\"output\":[1]}}\n\n",
			ev + "data: {\"response\":{\"id\":\"a\"\n\ndata: {\"response\":{\"output\":[1]}}\n\n" + ev + "data: {\"response\":{\"output\":[]}}\n\n"},
		// The parser takes the last name; the elider the last before the
		// first data line (a name after it comes too late to follow the
		// JSON from its start).
		{"the last name before the data counts",
			ev + "event: response.output_item.done\ndata: {\"response\":{\"output\":[1]}}\n\n" +
				ev + "event\ndata: {\"response\":{\"output\":[1]}}\n\n" +
				"event: x\n" + ev + "data: {\"response\":{\"output\":[1]}}\n\n",
			ev + "event: response.output_item.done\ndata: {\"response\":{\"output\":[1]}}\n\n" +
				ev + "event\ndata: {\"response\":{\"output\":[1]}}\n\n" +
				"event: x\n" + ev + "data: {\"response\":{\"output\":[]}}\n\n"},
		{"a name after the data is not followed",
			"data: [1,\n" + ev + "data: {\"response\":{\"output\":[1]}}]\n\n" +
				"data\n" + ev + "data: {\"response\":{\"output\":[1]}}\n\n",
			"data: [1,\n" + ev + "data: {\"response\":{\"output\":[1]}}]\n\n" +
				"data\n" + ev + "data: {\"response\":{\"output\":[1]}}\n\n"},
	}
}()

// The elider leaves out response.output in the data of the events that
// repeat the output, and nothing else.
func TestOutputEliderLeavesOutResponseOutput(t *testing.T) {
	for _, c := range elideCases {
		t.Run(c.name, func(t *testing.T) {
			if got := elide(t, c.in); got != c.want {
				t.Fatalf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// Over encoded responses of every shape the encoder makes, the elided
// event is the same JSON with an empty output.
func TestOutputEliderKeepsTheRestOfTheJSON(t *testing.T) {
	outputs := []any{
		[]any{},
		[]any{map[string]any{"type": "message", "content": []any{map[string]any{"type": "output_text", "text": "he said \"]}\" \\ \u2028 done"}}}},
		[]any{map[string]any{"type": "function_call", "arguments": `{"cmd":["a","]"]}`}, []any{[]any{}}, "x", 1.5, nil, true},
	}
	for i, out := range outputs {
		for j, extra := range []map[string]any{{}, {"status": "completed", "usage": map[string]any{"total_tokens": 7, "output": []any{1}}}, {"model": "m", "end_turn": true}} {
			resp := map[string]any{"id": fmt.Sprint("resp_", i, j), "output": out}
			for k, v := range extra {
				resp[k] = v
			}
			ev := map[string]any{"type": "response.completed", "sequence_number": 9, "response": resp}
			raw, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			got := elide(t, "event: response.completed\ndata: "+string(raw)+"\n\n")
			data, ok := strings.CutPrefix(got, "event: response.completed\ndata: ")
			if !ok || !strings.HasSuffix(data, "\n\n") {
				t.Fatalf("the lines changed: %q", got)
			}
			var gotEv map[string]any
			if err := json.Unmarshal([]byte(strings.TrimSuffix(data, "\n\n")), &gotEv); err != nil {
				t.Fatalf("%v in %s", err, data)
			}
			resp["output"] = []any{}
			want, _ := json.Marshal(ev)
			gotRaw, _ := json.Marshal(gotEv)
			if string(gotRaw) != string(want) {
				t.Fatalf("got  %s\nwant %s", gotRaw, want)
			}
		}
	}
}

// BenchmarkOutputElider: the elider's cost on the deltas that make up
// nearly all of a stream (MB/s; every byte of the body passes it).
func BenchmarkOutputElider(b *testing.B) {
	line := []byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":12,\"item_id\":\"msg_0123456789abcdef\",\"output_index\":0,\"content_index\":0,\"delta\":\"word \\\"quoted\\\" \",\"logprobs\":[]}\n\n")
	buf := make([]byte, len(line))
	e := newOutputElider(nil)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		copy(buf, line)
		if e.filter(buf) != len(line) {
			b.Fatal("a delta was changed")
		}
	}
}

// Leaving out a long output read in small pieces never hands its reader
// a run of empty reads (bufio takes a hundred for a broken reader).
func TestOutputEliderNeverReadsEmpty(t *testing.T) {
	in := "event: response.completed\ndata: {\"response\":{\"output\":[\"" + strings.Repeat("x", 10000) + "\"]}}\n\n"
	sc := bufio.NewScanner(newOutputElider(iotest.OneByteReader(strings.NewReader(in))))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "|"); got != `event: response.completed|data: {"response":{"output":[]}}|` {
		t.Fatalf("lines %q", got)
	}
}
