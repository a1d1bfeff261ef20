package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// A record the writer writes must be one a reader can read back: a line
// longer than the readers' cap (Limits.MaxLineBytes) would make the whole
// thread unreadable. Most records cannot get there (a user message is
// refused before its turn when its record would, command output is
// capped), but some carry what others produced whole: an MCP tool's
// result, a resource's text, a compaction's replacement history with the
// images of the messages it keeps. Such a line has its longest strings
// shortened until it fits: an image's data URL becomes a one-pixel image,
// any other string keeps its start and says how much was left out.

// tinyPNG is a one-pixel PNG, what a data-URL image left out of a record
// becomes (a URL that is still an image, so that a history holding it can
// be sent to the model).
const tinyPNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

// fitLines shortens the lines of dst[start:] that are longer than max (see
// above); it calls warn for each. Lines within max are left as they are.
func fitLines(dst []byte, start int, max int64, warn func(string)) []byte {
	if max <= 0 || int64(len(dst)-start) <= max {
		return dst
	}
	tail := bytes.Clone(dst[start:])
	dst = dst[:start]
	for len(tail) > 0 {
		n := bytes.IndexByte(tail, '\n') + 1
		if n == 0 {
			n = len(tail)
		}
		ln := tail[:n]
		tail = tail[n:]
		body := bytes.TrimSuffix(ln, []byte{'\n'})
		if int64(len(body)) <= max {
			dst = append(dst, ln...)
			continue
		}
		l, err := parseLine(body, nil)
		if err != nil {
			dst = append(dst, ln...) // not ours to change; written as it came
			continue
		}
		room := int(max) - (len(body) - len(l.Payload))
		payload, ok := shrinkPayload(l.Payload, room)
		how := "its longest strings were shortened so that it can be read back"
		if !ok {
			how = "shortening its strings was not enough: the thread cannot be read back past it"
		}
		warn(fmt.Sprintf("a record (%s) of %s was longer than a line of a rollout may be (%s); %s", l.Type, byteSize(int64(len(body))), byteSize(max), how))
		dst = appendLine(dst, l.time(), l.Type, l.TurnID, payload)
	}
	return dst
}

// shrinkPayload shortens the longest strings of the JSON value payload
// until it is encoded in at most room bytes, and reports whether it is.
func shrinkPayload(payload []byte, room int) ([]byte, bool) {
	orig := payload
	for keep := 4096; ; keep /= 4 {
		// From the original each time, so that a note counts what the
		// original string had.
		dec := json.NewDecoder(bytes.NewReader(orig))
		dec.UseNumber()
		var root any
		if err := dec.Decode(&root); err != nil {
			return orig, false
		}
		var slots []stringSlot
		collectStrings(root, func(v any) { root = v }, &slots)
		slices.SortFunc(slots, func(a, b stringSlot) int { return len(b.s) - len(a.s) })
		over := len(orig) - room
		for _, sl := range slots {
			if over <= 0 {
				break
			}
			if short := shortenString(sl.s, keep); len(short) < len(sl.s) {
				sl.set(short)
				over -= len(sl.s) - len(short)
			}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(root); err != nil {
			return orig, false
		}
		payload = bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
		if len(payload) <= room {
			return payload, true
		}
		if keep == 0 {
			return payload, false
		}
	}
}

// stringSlot is a string of a decoded JSON value and how to replace it.
type stringSlot struct {
	s   string
	set func(any)
}

func collectStrings(v any, set func(any), out *[]stringSlot) {
	switch x := v.(type) {
	case string:
		*out = append(*out, stringSlot{x, set})
	case map[string]any:
		for k, e := range x {
			collectStrings(e, func(n any) { x[k] = n }, out)
		}
	case []any:
		for i, e := range x {
			collectStrings(e, func(n any) { x[i] = n }, out)
		}
	}
}

// shortenString is s left out but for its first keep bytes, and a note of
// how much went; an image's data URL is the one-pixel image.
func shortenString(s string, keep int) string {
	if strings.HasPrefix(s, "data:image/") {
		if len(s) > len(tinyPNG) {
			return tinyPNG
		}
		return s
	}
	if len(s) <= keep+128 {
		return s
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes left out: too long for a line of the thread's record]", len(s)-cut)
}
