package mockmodel

import (
	"strconv"
	"strings"
	"time"
)

// stampKind says how the server completes an event of StampedText when it
// writes it.
type stampKind uint8

const (
	noStamp    stampKind = iota
	stampDelta           // the delta becomes "t=<unix ns>;", taken now
	stampDone            // the item's text becomes what its deltas sent
)

// StampPrefix and StampEnd frame each stamp: "t=<unix nanoseconds>;".
const (
	StampPrefix = "t="
	StampEnd    = ";"
)

// StampedText is an assistant message of n deltas whose text is not known
// in advance: each delta is the time it is written, "t=<unix
// nanoseconds>;", taken just before the write, and the done item (and
// response.completed's output) carries the concatenation of what was
// sent. A client on the same machine subtracts a stamp from the time it
// read the delta to get the delivery delay (ParseStamps). Pace spaces
// the deltas.
func StampedText(itemID string, n int) Events {
	out := message(itemID, "", make([]string, n))
	for i := range out {
		switch out[i].Type {
		case "response.output_text.delta":
			out[i].stamp = stampDelta
		case "response.output_item.done":
			out[i].stamp = stampDone
		}
	}
	return out
}

// ParseStamps returns the stamps (unix nanoseconds) in text, one or more
// joined deltas of a StampedText, in order; ok is false when text holds
// anything else.
func ParseStamps(text string, into []int64) (stamps []int64, ok bool) {
	stamps = into
	for text != "" {
		rest, found := strings.CutPrefix(text, StampPrefix)
		end := strings.Index(rest, StampEnd)
		if !found || end < 0 {
			return stamps, false
		}
		ns, err := strconv.ParseInt(rest[:end], 10, 64)
		if err != nil {
			return stamps, false
		}
		stamps = append(stamps, ns)
		text = rest[end+len(StampEnd):]
	}
	return stamps, true
}

// stamper completes the stamped events of one response as they are
// written: it remembers what each stamped item has sent so far.
type stamper struct {
	sent map[string]*strings.Builder // by item id
}

// apply returns e as it is to be written: a copy with the stamp or the
// text filled in, or e itself when it has nothing stamped.
func (s *stamper) apply(e Event) Event {
	switch {
	case e.stamp == stampDelta:
		id, _ := e.Data["item_id"].(string)
		stamp := StampPrefix + strconv.FormatInt(time.Now().UnixNano(), 10) + StampEnd
		s.text(id).WriteString(stamp)
		return e.with("delta", stamp)
	case e.stamp == stampDone:
		return e.with("item", s.fill(e.Data["item"]))
	case e.Type == "response.completed" && len(s.sent) > 0:
		r, _ := e.Data["response"].(map[string]any)
		out, _ := r["output"].([]any)
		filled := make([]any, len(out))
		for i, it := range out {
			filled[i] = s.fill(it)
		}
		r2 := make(map[string]any, len(r))
		for k, v := range r {
			r2[k] = v
		}
		r2["output"] = filled
		return e.with("response", r2)
	}
	return e
}

func (s *stamper) text(id string) *strings.Builder {
	if s.sent == nil {
		s.sent = map[string]*strings.Builder{}
	}
	b, ok := s.sent[id]
	if !ok {
		b = &strings.Builder{}
		s.sent[id] = b
	}
	return b
}

// fill returns a copy of a message item whose id was stamped, with the
// text sent for it; any other value unchanged.
func (s *stamper) fill(v any) any {
	item, _ := v.(map[string]any)
	id, _ := item["id"].(string)
	b, ok := s.sent[id]
	if !ok {
		return v
	}
	c := make(map[string]any, len(item))
	for k, v := range item {
		c[k] = v
	}
	c["content"] = []any{map[string]any{"type": "output_text", "text": b.String(), "annotations": []any{}}}
	return c
}

// with returns a copy of e whose data has key set to v.
func (e Event) with(key string, v any) Event {
	d := make(map[string]any, len(e.Data))
	for k, x := range e.Data {
		d[k] = x
	}
	d[key] = v
	return Event{Type: e.Type, Data: d}
}
