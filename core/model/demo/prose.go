package demo

import (
	"strings"
	"unicode/utf8"
)

// helpText is the demo's answer to anything that is not a command.
const helpText = `Hi! I am the demo model built into agentd. I run offline and give the same answer to the same conversation, so you can try agentd without an API key or a network.

agentd is a daemon that speaks the Codex app-server protocol. It keeps your threads, streams every turn from a model, runs tools such as shell commands and file patches, and asks for your approval when a tool needs it. Point it at any Responses-compatible model for real work.

Try one of these messages:

- ` + "`run: ls -la`" + ` runs a shell command with the exec_command tool.
- ` + "`patch: notes.txt Hello from agentd`" + ` writes a file with the apply_patch tool.
- ` + "`plan:`" + ` followed by one step per line records a plan with update_plan.`

func helpReply(msg string) reply {
	text := helpText
	if m := oneLine(msg, 200); m != "" {
		text += "\n\nYou wrote: \u201c" + m + "\u201d"
	}
	return reply{
		summary: "**Reading the message**\n\nIt holds no demo command, so I explain what agentd and the demo model can do.",
		text:    text,
	}
}

// Limits of a quoted tool output.
const (
	quoteMaxLines = 30
	quoteMaxBytes = 2000
)

// quote puts a tool output in a fenced block, shortened to its first lines.
func quote(out string) string {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return "(no output)"
	}
	cut := false
	if lines := strings.SplitN(out, "\n", quoteMaxLines+1); len(lines) > quoteMaxLines {
		out, cut = strings.Join(lines[:quoteMaxLines], "\n"), true
	}
	if len(out) > quoteMaxBytes {
		out, cut = truncate(out, quoteMaxBytes), true
	}
	if cut {
		out += "\n…"
	}
	f := fence(out)
	return f + "\n" + out + "\n" + f
}

// fence is a run of backticks longer than any in s, at least three.
func fence(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i] + "…"
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
