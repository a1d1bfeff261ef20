package exec

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// DefaultMaxOutputTokens is how much output the model gets when the call
// does not say.
const DefaultMaxOutputTokens = 10000

// BytesPerToken approximates the tokenizer: about four bytes a token.
const BytesPerToken = 4

// approxTokens estimates the tokens of n bytes of output.
func approxTokens(n int64) int64 { return (n + BytesPerToken - 1) / BytesPerToken }

// TruncateForModel shortens text to about maxTokens tokens, keeping its
// head and tail and saying how much was cut. maxTokens ≤ 0 means
// DefaultMaxOutputTokens.
func TruncateForModel(text string, maxTokens int) string {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxOutputTokens
	}
	limit := maxTokens * BytesPerToken
	if len(text) <= limit {
		return text
	}
	half := limit / 2
	cut := int64(len(text) - 2*half)
	note := fmt.Sprintf("[… %d tokens truncated …]", approxTokens(cut))
	return joinCut(text[:half], text[len(text)-half:], note)
}

func newChunkID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ModelText formats r as the exec_command / write_stdin output the model
// reads:
//
//	Chunk ID: 1f2e3d
//	Wall time: 0.5123 seconds
//	Process exited with code 0          (or: Process running with session ID 7)
//	Original token count: 12
//	Output:
//	…
//
// The output is cut to r.MaxOutputTokens (head and tail kept). Notes, if
// any, come before the output.
func (r *Result) ModelText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %s\n", r.ChunkID)
	fmt.Fprintf(&b, "Wall time: %.4f seconds\n", r.Wall.Seconds())
	if r.Running {
		fmt.Fprintf(&b, "Process running with session ID %d\n", r.SessionID)
	} else {
		fmt.Fprintf(&b, "Process exited with code %d\n", r.ExitCode)
	}
	fmt.Fprintf(&b, "Original token count: %d\n", approxTokens(r.OutputBytes))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	b.WriteString("Output:\n")
	b.WriteString(TruncateForModel(r.Output, r.MaxOutputTokens))
	return b.String()
}
