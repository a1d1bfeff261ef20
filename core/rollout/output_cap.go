package rollout

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/core"
)

// DefaultMaxItemOutput is how much of a command's aggregated output a
// rollout keeps per item. The model history keeps what the model saw; this
// cap bounds only the public view, which a resumed client does not need in
// full.
const DefaultMaxItemOutput = 64 << 10

// capItem returns it with a command's aggregated output cut to max bytes:
// the head and the tail are kept, with a note of what was left out between
// them. Other items are returned unchanged.
func capItem(it core.TurnItem, max int) core.TurnItem {
	c, ok := it.(core.CommandExecutionItem)
	if !ok || c.AggregatedOutput == nil || max <= 0 || len(*c.AggregatedOutput) <= max {
		return it
	}
	s := capOutput(*c.AggregatedOutput, max)
	c.AggregatedOutput = &s
	return c
}

// capOutput keeps about max bytes of s: half from the head, half from the
// tail, cut on rune boundaries.
func capOutput(s string, max int) string {
	half := max / 2
	headEnd := half
	for headEnd > 0 && !utf8.RuneStart(s[headEnd]) {
		headEnd--
	}
	tailStart := len(s) - half
	for tailStart < len(s) && !utf8.RuneStart(s[tailStart]) {
		tailStart++
	}
	return fmt.Sprintf("%s\n[… %d bytes of output omitted from the thread record …]\n%s",
		s[:headEnd], tailStart-headEnd, s[tailStart:])
}
