package rollout

import (
	"strconv"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/core"
)

// UserInputLineBound is an upper bound on the longest line that recording
// in as a user message (with clientID, the client's own id for it) writes:
// the response item the model's history keeps (its texts, and every image
// as the data URL or URL the model gets, local ones included, each framed
// by a text naming its path) and the user_message event (its texts and
// client image URLs, twice when agentd_content repeats them, local images
// by path, and the client's id). A reader refuses a line longer than its
// cap (Limits), so a turn whose input is over the cap must be refused
// before it runs: once recorded, the thread could not be read back.
func UserInputLineBound(in []core.UserInput, clientID string) int64 {
	// Each input's members, names and separators, and each record's
	// envelope (ids, times, types), with room to spare.
	const perInput, perElement, envelope = 512, 128, 4096
	var item, event int64
	for _, u := range in {
		// What both records hold of the input: its text, names, and
		// placeholders with their offsets.
		common := jsonLen(u.Text) + jsonLen(u.Name) + jsonLen(u.Detail) + perInput
		for _, e := range u.TextElements {
			common += jsonLen(e.Placeholder) + perElement
		}
		// The item frames an image with its path quoted (%q), then
		// JSON-escaped; the event has the path as it is.
		item += common + jsonLen(u.ImageURL) + jsonLen(strconv.Quote(u.Path)) + jsonLen(u.Path)
		url := jsonLen(u.ImageURL)
		if u.Kind == core.InputLocalImage {
			url = 0 // the event has the path, not the bytes
		}
		event += 2 * (common + url + jsonLen(u.Path))
	}
	return max(item, event+jsonLen(clientID)) + envelope
}

// jsonLen bounds the length of s as a JSON string: what an encoder writes
// that replaces invalid UTF-8 and escapes control characters, and, to be
// safe whatever encoder writes the record, HTML characters (the rollout's
// own encoders leave them as they are).
func jsonLen(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			case b == '"' || b == '\\':
				n += 2
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += int64(size)
		}
		i += size
	}
	return n
}
