package model

import (
	"bytes"
	"io"
)

// outputElider reads an SSE body and leaves out the value of
// "response"."output" in the data of the events named response.completed,
// response.incomplete and response.failed, writing [] in its place.
//
// response.completed repeats the whole output of the response (every
// item, every text in full), and the SSE parser reads an event as one
// line: a long answer made that one line megabytes long, held (with a
// read buffer grown by doubling to fit it) at the very end of the turn,
// for nothing: the client takes the items from response.output_item.done,
// and from the response object only its id, model, usage, end_turn and
// error (scanResponse). Issue 17: a turn's RSS at its end grew with the
// length of its answer.
//
// It works on the bytes as they pass, in place (it only removes bytes).
// The events it looks into are known by their "event:" line, so the
// deltas, nearly all of a stream, pass at the cost of finding their
// lines' ends; an event without one is not looked into (a server that
// sends only data lines keeps its repeated output, as before). The name
// that counts is the last before the event's first data line: the parser
// takes the last of all, but a name after a data line comes too late to
// follow the JSON from its start (servers send the name first). In those
// events a small JSON state machine follows strings and their escapes,
// the depth, and the names of members at depths 1 and 2 (as written: a
// name with an escape is not matched). Everything else passes unchanged:
// other fields, comments, other events, an "output" that is not an array
// (null), and JSON it does not follow (which the parser then rejects as
// it would have). The inside of the output array is not checked, only
// its strings followed and its brackets and braces counted: malformed
// JSON there is left out with it, so the parser accepts the event.
type outputElider struct {
	r io.Reader

	// Line state. field: the line's field name is being read (fieldLen
	// bytes of it so far, still possibly "data" or "event"); other: the
	// rest of the line passes; json: the rest of the line is the JSON of
	// an event that is looked into; naming: the rest is the event's name.
	field, other, json, naming bool
	fieldLen                   int
	maybeData, maybeEvent      bool
	empty                      bool // nothing but the line's end seen on this line
	lastCR                     bool // the last byte was a CR (a CRLF is one line end)
	// name collects the event's name (nameLen bytes; -1 when too long);
	// terminal: it names an event that repeats the output. sawData: the
	// event had a data line, after which its name no longer changes what
	// is looked into.
	name     [24]byte
	nameLen  int
	spaced   bool
	terminal bool
	sawData  bool

	// JSON state, across the data lines of one event.
	inString, escape bool
	depth            int
	// objects[d] is set when the container at depth d is an object, and
	// wantKey[d] when its next string is a member's name.
	objects, wantKey [maxElideDepth + 1]bool
	// want is the member name looked for at the depth of the name being
	// read ("response", then "output"); keyLen is how much of it the name
	// matches so far, -1 once it cannot (or the string is no name).
	want   string
	keyLen int
	// isResponse: the member of the top-level object being read is
	// "response".
	isResponse bool
	skipNext   bool // the next value is response.output
	// skipping: inside the output array being left out; skipDepth is the
	// depth within it.
	skipping  bool
	skipDepth int
}

// maxElideDepth bounds the depths tracked; deeper containers are only
// counted.
const maxElideDepth = 64

func newOutputElider(r io.Reader) *outputElider {
	e := &outputElider{r: r}
	e.resetEvent()
	return e
}

// Read reads on while all it read was left out: a reader that returns no
// bytes too often is taken for one that makes no progress (bufio).
func (e *outputElider) Read(p []byte) (int, error) {
	for {
		n, err := e.r.Read(p)
		if n == 0 || err != nil {
			return e.filter(p[:n]), err
		}
		if kept := e.filter(p[:n]); kept > 0 {
			return kept, nil
		}
	}
}

// filter removes the left-out bytes of b in place and returns how many
// remain. Runs that change no state but the position (the inside of a
// string, the rest of a line that is not data) are passed over as one:
// they are nearly all of a stream's bytes.
func (e *outputElider) filter(b []byte) int {
	w := 0
	for i := 0; i < len(b); {
		if n := e.run(b[i:]); n > 0 {
			// Inside the left-out array only data is left out: the other
			// lines between its data lines pass.
			if !e.skipping || !e.json {
				w += copy(b[w:], b[i:i+n])
			}
			i += n
			continue
		}
		c := b[i]
		i++
		if e.keep(c) {
			b[w] = c
			w++
		}
	}
	return w
}

// Stop tables: the bytes that end a run that keep passes over with no
// change of state. Inside a string: its end, an escape, a line's end.
// Outside strings (no value pending a look): structure, a string's start,
// a line's end (whitespace, digits and literals pass). Inside the
// left-out array, outside strings: brackets, braces, a string's start, a
// line's end. (A line that is not looked into runs to its end: lineEnd.)
var stringStop, structStop, skipStop = func() (str, st, sk [256]bool) {
	for _, c := range "\"\\\n\r" {
		str[c] = true
	}
	for _, c := range "\"{}[],:\n\r" {
		st[c] = true
	}
	for _, c := range "\"{}[]\n\r" {
		sk[c] = true
	}
	return
}()

// run returns the length of the run at the start of b that keep would
// pass over (or leave out) with no change of state but the line's
// emptiness.
func (e *outputElider) run(b []byte) int {
	var stop *[256]bool
	switch {
	case e.naming:
		return e.nameRun(b)
	case e.other:
		n := lineEnd(b)
		if n > 0 {
			e.empty, e.lastCR = false, false
		}
		return n
	case !e.json:
		return 0
	case e.inString:
		if e.escape || e.keyLen >= 0 {
			return 0
		}
		stop = &stringStop
	case e.skipping:
		stop = &skipStop
	case e.skipNext:
		return 0
	default:
		stop = &structStop
	}
	n := 0
	for n < len(b) && !stop[b[n]] {
		n++
	}
	if n > 0 {
		e.empty, e.lastCR = false, false
	}
	return n
}

// lineEnd returns the index of the first line end in b, or len(b).
func lineEnd(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	if n < 0 {
		n = len(b)
	}
	if r := bytes.IndexByte(b[:n], '\r'); r >= 0 {
		n = r
	}
	return n
}

// nameRun collects the event's name, up to the line's end.
func (e *outputElider) nameRun(b []byte) int {
	n := lineEnd(b)
	if n == 0 {
		return 0
	}
	e.empty, e.lastCR = false, false
	name := b[:n]
	if e.nameLen == 0 && !e.spaced {
		e.spaced = true
		if name[0] == ' ' { // the one space after the colon is not the name's
			name = name[1:]
		}
	}
	if e.nameLen >= 0 {
		if e.nameLen+len(name) > len(e.name) {
			e.nameLen = -1
		} else {
			e.nameLen += copy(e.name[e.nameLen:], name)
		}
	}
	return n
}

// keep advances the state over c and reports whether c is kept.
func (e *outputElider) keep(c byte) bool {
	if c == '\n' || c == '\r' {
		if c == '\n' && e.lastCR {
			e.lastCR = false
			return true // the end of the line CR began
		}
		if e.naming && !e.sawData {
			// The last name counts, as in the parser.
			e.terminal = false
			if e.nameLen >= 0 {
				switch string(e.name[:e.nameLen]) {
				case "response.completed", "response.incomplete", "response.failed":
					e.terminal = true
				}
			}
		}
		if e.field { // a line with no colon: a field with no value
			switch {
			case e.maybeData && e.fieldLen == len("data"):
				e.sawData = true
			case e.maybeEvent && e.fieldLen == len("event") && !e.sawData:
				e.terminal = false
			}
		}
		if e.empty && e.field {
			e.resetEvent() // a blank line ends the event
		}
		e.startLine()
		e.lastCR = c == '\r'
		return true
	}
	e.lastCR = false
	e.empty = false
	switch {
	case e.field:
		e.fieldByte(c)
		return true
	case e.naming:
		return true // nameRun took the line's bytes
	case !e.json:
		return true
	case e.skipping:
		e.skipByte(c)
		// The array's own brackets stay: the value becomes [].
		return !e.skipping && c == ']'
	}
	e.jsonByte(c)
	return true
}

// startLine is the state at a line's start.
func (e *outputElider) startLine() {
	e.field, e.other, e.json, e.naming = true, false, false, false
	e.fieldLen, e.maybeData, e.maybeEvent, e.empty = 0, true, true, true
}

// fieldByte reads the line's field name: "data" lines of an event named
// response.completed (or another that repeats the output) are looked into;
// "event" lines give the name; the others pass.
func (e *outputElider) fieldByte(c byte) {
	if c == ':' {
		e.field = false
		switch {
		case e.maybeData && e.fieldLen == len("data"):
			e.sawData = true
			e.json = e.terminal
			e.other = !e.terminal
		case e.maybeEvent && e.fieldLen == len("event"):
			e.naming, e.nameLen, e.spaced = true, 0, false
		default:
			e.other = true
		}
		return
	}
	e.maybeData = e.maybeData && e.fieldLen < len("data") && c == "data"[e.fieldLen]
	e.maybeEvent = e.maybeEvent && e.fieldLen < len("event") && c == "event"[e.fieldLen]
	e.fieldLen++
	if !e.maybeData && !e.maybeEvent {
		e.field, e.other = false, true
	}
}

// resetEvent forgets the event's state at its end.
func (e *outputElider) resetEvent() {
	r := e.r
	*e = outputElider{r: r, keyLen: -1}
	e.startLine()
}

// jsonByte follows the JSON outside the left-out value.
func (e *outputElider) jsonByte(c byte) {
	if e.inString {
		switch {
		case e.escape:
			e.escape = false
			e.keyByte(c)
		case c == '\\':
			e.escape = true
			e.keyLen = -1 // a name with escapes never matches
		case c == '"':
			e.inString = false
		default:
			e.keyByte(c)
		}
		return
	}
	switch c {
	case ' ', '\t':
		return
	}
	if e.skipNext {
		e.skipNext = false
		if c == '[' {
			e.skipping, e.skipDepth = true, 1
			return
		}
	}
	switch c {
	case '"':
		e.inString = true
		e.keyLen = -1
		if e.depth <= maxElideDepth && e.objects[e.depth] && e.wantKey[e.depth] {
			e.wantKey[e.depth] = false
			switch { // deeper names are never looked at
			case e.depth == 1:
				e.keyLen, e.want = 0, "response"
			case e.depth == 2 && e.isResponse:
				e.keyLen, e.want = 0, "output"
			}
		}
		return
	case ':':
		e.member()
		return
	}
	switch c {
	case '{', '[':
		e.depth++
		if e.depth <= maxElideDepth {
			e.objects[e.depth] = c == '{'
			e.wantKey[e.depth] = c == '{'
		}
	case '}', ']':
		if e.depth == 1 {
			e.isResponse = false
		}
		e.depth--
		if e.depth < 0 {
			e.depth = 0
		}
	case ',':
		if e.depth <= maxElideDepth && e.objects[e.depth] {
			e.wantKey[e.depth] = true
		}
		if e.depth == 1 {
			e.isResponse = false
		}
	}
}

// keyByte matches c against the name looked for at this depth.
func (e *outputElider) keyByte(c byte) {
	if e.keyLen < 0 {
		return
	}
	if e.keyLen == len(e.want) || e.want[e.keyLen] != c {
		e.keyLen = -1
		return
	}
	e.keyLen++
}

// member notes the name just read: "response" at depth 1, then "output"
// at depth 2 within it.
func (e *outputElider) member() {
	matched := e.keyLen >= 0 && e.keyLen == len(e.want)
	e.keyLen = -1
	switch e.depth {
	case 1:
		e.isResponse = matched
	case 2:
		e.skipNext = e.isResponse && matched
	}
}

// skipByte follows the left-out array until its closing bracket.
func (e *outputElider) skipByte(c byte) {
	if e.inString {
		switch {
		case e.escape:
			e.escape = false
		case c == '\\':
			e.escape = true
		case c == '"':
			e.inString = false
		}
		return
	}
	switch c {
	case '"':
		e.inString = true
	case '[', '{':
		e.skipDepth++
	case ']', '}':
		if e.skipDepth--; e.skipDepth == 0 {
			e.skipping = false
		}
	}
}
