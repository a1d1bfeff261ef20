package test

import (
	"slices"
	"strings"
)

// deviation is a deliberate, documented difference between agentd and the
// reference. apply rewrites the reference's compared sequence into what
// agentd sends instead; it reports false when the reference no longer has
// what it rewrites, so that the table cannot go stale. A deviation with a
// nil apply changes no message: it documents a difference in how the
// scenario is set up.
type deviation struct {
	scenarios []string
	what, why string
	apply     func(ref []string) ([]string, bool)
}

// deviations is the table of deliberate differences, by scenario.
var deviations = []deviation{
	{
		scenarios: []string{"dynamic-tool-turn"},
		what:      "serverRequest/resolved follows the answer to item/tool/call",
		why:       "agentd's invariant: every server request ends with serverRequest/resolved; the reference skips it for this one request type only (protocol map §6.4)",
		apply:     insertAfter("request item/tool/call ", "notify serverRequest/resolved params{requestId,threadId}"),
	},
	{
		scenarios: []string{"patch-turn", "patch-auto-turn", "patch-decline-turn"},
		what:      "item/fileChange/patchUpdated previews precede the fileChange item",
		why:       "agentd streams patch previews by default; the reference only with [features] apply_patch_streaming_events (patch-streaming-turn); the method is in the stable schema",
		apply:     insertBefore("notify item/started fileChange ", "notify item/fileChange/patchUpdated"),
	},
	{
		scenarios: []string{"patch-turn", "patch-auto-turn"},
		what:      "turn/diff/updated is sent once, when the diff changes",
		why:       "the reference repeats the unchanged diff after each model response and at the end of the turn; the diff a client holds is the same",
		apply:     keepFirst("notify turn/diff/updated "),
	},
	{
		scenarios: []string{"steer"},
		what:      "no thread/tokenUsage/updated when a stream is abandoned for steered input",
		why:       "agentd reports usage when a response completes with usage; the reference also re-sends the unchanged totals for the abandoned stream",
		apply:     removeFirstAfter("response turn/steer result", "notify thread/tokenUsage/updated "),
	},
	{
		scenarios: []string{"interrupt-pending-approval"},
		what:      "turn/interrupt is answered before the notifications the abort produces (here the late token usage of the tool-call response)",
		why:       "agentd answers once the core has taken the interrupt and holds the thread's events until the answer is written; the reference answers when the abort is done. Both answer before thread/status/changed idle and turn/completed",
		apply:     moveBefore("response turn/interrupt ", "notify thread/tokenUsage/updated "),
	},
	{
		scenarios: []string{"interrupt-turn"},
		what:      "turn/interrupt is answered before the notifications the abort produces (here the rate limits of the abandoned stream)",
		why:       "as in interrupt-pending-approval: agentd answers once the core has taken the interrupt; the stream's end, which reports its rate limits, follows",
		apply:     moveBefore("response turn/interrupt ", "notify account/rateLimits/updated "),
	},
	{
		scenarios: []string{"shell-approval-turn", "interrupt-pending-approval"},
		what:      "the model's command is `echo hello-from-shell | tee hello.txt` instead of `echo hello-from-shell`",
		why:       "under untrusted, agentd runs known-safe read-only commands without asking (core/policy: a `bash -lc` script of safe commands is safe); the reference asked even for echo. The variant writes a file, so both ask and the approval flow of the transcript is replayed",
	},
	{
		scenarios: []string{"shell-approval-turn"},
		what:      "a short command's output is streamed as item/commandExecution/outputDelta",
		why:       "agentd streams every command's output; the reference sent no delta for a command that ended before its first read (it does stream longer ones: shell-stream-turn)",
		apply:     insertBefore("notify item/completed commandExecution ", "notify item/commandExecution/outputDelta"),
	},
	{
		scenarios: []string{"review"},
		what:      "no item/started for the reviewer's own message",
		why:       "the reference leaks the reviewer sub-agent's streaming agentMessage (its raw JSON answer) as an item/started that never completes (protocol map §3.18); agentd shows the reviewer's answer once, read and rendered, as exitedReviewMode and the agentMessage after it",
		apply:     removeFirstAfter("response review/start ", "notify item/started agentMessage "),
	},
	{
		scenarios: []string{"review"},
		what:      "account/rateLimits/updated after the reviewer's response",
		why:       "the rate limits a provider reports with every response are the account's, whoever made the request; the reference keeps the reviewer's events on its sub-agent thread. The reviewer's token usage is not the thread's and is not reported, as in the reference",
		apply:     insertBefore("notify item/started exitedReviewMode ", "notify account/rateLimits/updated params{rateLimits}"),
	},
	{
		scenarios: []string{"review"},
		what:      "review/start with delivery \"detached\" is served",
		why:       "agentd's extension: a detached review runs on a fork of the thread (docs/protocol.md, Code review); 0.169 refuses the value. Served, the request goes on to its target, which this scenario's directory (no git repository) refuses",
		apply: replaceLine("response review/start error -32600 \"Invalid request: unknown variant `detached`, expected `inline`\"",
			"response review/start error -32600 \"not a git repository: <cwd>\""),
	},
	{
		scenarios: []string{"plan-tool-turn"},
		what:      "update_plan is offered by default",
		why:       "the reference offers it only with [tools.update_plan] enabled = true, which its run set; agentd needs no setting",
	},
	{
		scenarios: []string{"user-input-turn"},
		what:      "request_user_input is offered in the default collaboration mode",
		why:       "the reference answers it only in plan mode (its run sent collaborationMode plan, as agentd's would work); in the default mode it tells the model the tool is unavailable, while agentd lets the model ask in any mode",
	},
	{
		scenarios: []string{"shell-approval-turn", "shell-decline-turn", "shell-noapproval-turn", "shell-stream-turn", "patch-turn", "patch-auto-turn", "patch-decline-turn", "interrupt-pending-approval"},
		what:      "tool output texts sent to the model differ",
		why:       "agentd words its own tool results (exec summary, patch result, refusals); they reach the model only, never a client",
	},
}

// floating lists, per scenario, responses whose place among the turn's
// notifications is a race in the reference as well: they are compared
// apart from the sequence.
var floating = map[string][]string{
	// turn/start while a turn runs is answered while the core takes the
	// steered input in; the reference's answer came before the steered
	// user messages only because its client was faster.
	"steer": {"response 7"},
}

func scenarioDeviations(name string) []deviation {
	var out []deviation
	for _, d := range deviations {
		if slices.Contains(d.scenarios, name) {
			out = append(out, d)
		}
	}
	return out
}

func indexPrefix(lines []string, from int, prefix string) int {
	for i := from; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], prefix) {
			return i
		}
	}
	return -1
}

func insertAt(lines []string, i int, line string) []string {
	return append(lines[:i:i], append([]string{line}, lines[i:]...)...)
}

// insertAfter inserts line after the first line starting with anchor.
func insertAfter(anchor, line string) func([]string) ([]string, bool) {
	return func(ref []string) ([]string, bool) {
		i := indexPrefix(ref, 0, anchor)
		if i < 0 {
			return ref, false
		}
		return insertAt(ref, i+1, line), true
	}
}

// replaceLine replaces the first line starting with prefix by line.
func replaceLine(prefix, line string) func([]string) ([]string, bool) {
	return func(ref []string) ([]string, bool) {
		i := indexPrefix(ref, 0, prefix)
		if i < 0 {
			return ref, false
		}
		out := slices.Clone(ref)
		out[i] = line
		return out, true
	}
}

// withCwd writes <cwd> for dir in lines.
func withCwd(lines []string, dir string) []string {
	if dir == "" {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.ReplaceAll(l, dir, "<cwd>")
	}
	return out
}

// insertBefore inserts line before the first line starting with anchor.
func insertBefore(anchor, line string) func([]string) ([]string, bool) {
	return func(ref []string) ([]string, bool) {
		i := indexPrefix(ref, 0, anchor)
		if i < 0 {
			return ref, false
		}
		return insertAt(ref, i, line), true
	}
}

// keepFirst drops the lines starting with prefix after the first one; it
// needs at least two.
func keepFirst(prefix string) func([]string) ([]string, bool) {
	return func(ref []string) ([]string, bool) {
		first := indexPrefix(ref, 0, prefix)
		if first < 0 || indexPrefix(ref, first+1, prefix) < 0 {
			return ref, false
		}
		out := append([]string(nil), ref[:first+1]...)
		for _, l := range ref[first+1:] {
			if !strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return out, true
	}
}

// removeFirstAfter drops the first line starting with prefix after the
// first line starting with anchor.
func removeFirstAfter(anchor, prefix string) func([]string) ([]string, bool) {
	return func(ref []string) ([]string, bool) {
		a := indexPrefix(ref, 0, anchor)
		if a < 0 {
			return ref, false
		}
		i := indexPrefix(ref, a+1, prefix)
		if i < 0 {
			return ref, false
		}
		return append(ref[:i:i], ref[i+1:]...), true
	}
}

// moveBefore moves the first line starting with prefix to just before the
// last line starting with anchor that precedes it.
func moveBefore(prefix, anchor string) func([]string) ([]string, bool) {
	return func(ref []string) ([]string, bool) {
		i := indexPrefix(ref, 0, prefix)
		a := -1
		for j := 0; j < i; j++ {
			if strings.HasPrefix(ref[j], anchor) {
				a = j
			}
		}
		if i < 0 || a < 0 {
			return ref, false
		}
		line := ref[i]
		out := append(ref[:i:i], ref[i+1:]...)
		return insertAt(out, a, line), true
	}
}

// takeFloating removes the events with the given triggers from seq and
// returns them apart.
func takeFloating(seq []wireEvent, triggers []string) (rest, taken []wireEvent) {
	for _, e := range seq {
		if slices.Contains(triggers, e.Trigger) {
			taken = append(taken, e)
		} else {
			rest = append(rest, e)
		}
	}
	return rest, taken
}
