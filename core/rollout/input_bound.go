package rollout

import (
	"unicode/utf8"

	"github.com/agentd-dev/agentd/core"
)

// UserInputLineBound is an upper bound on the longest line that recording
// in as a user message writes: the response item the model's history
// keeps (its texts, and every image as the data URL or URL the model
// gets, local ones included) and the user_message event (its texts and
// client image URLs, twice when agentd_content repeats them, and local
// images by path). A reader refuses a line longer than its cap (Limits),
// so a turn whose input is over the cap must be refused before it runs:
// once recorded, the thread could not be read back.
func UserInputLineBound(in []core.UserInput) int64 {
	// Each input's members, names and separators, and each record's
	// envelope (ids, times, types), with room to spare.
	const perInput, envelope = 512, 4096
	var item, event int64
	for _, u := range in {
		fixed := jsonLen(u.Text) + jsonLen(u.Name) + jsonLen(u.Detail) + perInput
		// The item shows a local image by path; %q and JSON may escape
		// it twice.
		fixed += 2 * jsonLen(u.Path)
		for _, e := range u.TextElements {
			fixed += jsonLen(e.Placeholder) + 64
		}
		url := jsonLen(u.ImageURL)
		item += fixed + url
		if u.Kind == core.InputLocalImage {
			url = 0 // the event has the path, not the bytes
		}
		event += 2 * (fixed + url)
	}
	return max(item, event) + envelope
}

// jsonLen bounds the length of s as a JSON string: what an encoder that
// escapes HTML characters, and replaces invalid UTF-8, writes.
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
