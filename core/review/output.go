package review

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Output is a reviewer's answer. The JSON names are the ones the reviewer
// is asked for and the reference's rollouts record (review_output).
type Output struct {
	Findings               []Finding `json:"findings"`
	OverallCorrectness     string    `json:"overall_correctness"`
	OverallExplanation     string    `json:"overall_explanation"`
	OverallConfidenceScore float64   `json:"overall_confidence_score"`
}

// Finding is one problem the reviewer reports.
type Finding struct {
	Title           string  `json:"title"`
	Body            string  `json:"body"`
	ConfidenceScore float64 `json:"confidence_score"`
	// Priority is 0 (most urgent) to 3; nil when the reviewer gave none.
	Priority     *int     `json:"priority,omitempty"`
	CodeLocation Location `json:"code_location"`
}

// Location is where a finding is.
type Location struct {
	AbsoluteFilePath string    `json:"absolute_file_path"`
	LineRange        LineRange `json:"line_range"`
}

// LineRange is an inclusive range of lines, from 1.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// NoReview is the text of a review whose reviewer said nothing.
const NoReview = "The reviewer gave no review."

// Parse reads the reviewer's last message: the JSON object it was asked
// for (alone, in a Markdown fence, or amid text), with some tolerance for
// numbers written as strings and priorities written as tags ("P1"). Any
// other text is kept whole as the explanation, without findings.
func Parse(text string) Output {
	trimmed := strings.TrimSpace(text)
	for _, cand := range candidates(trimmed) {
		if o, ok := parseJSON(cand); ok {
			return o
		}
	}
	return Output{Findings: []Finding{}, OverallExplanation: trimmed}
}

// candidates are the texts that may hold the JSON object: the whole text,
// the inside of a Markdown fence, and the span from the first '{' to the
// last '}'.
func candidates(s string) []string {
	out := []string{s}
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[i+1:]
		}
		out = append(out, strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```")))
	}
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		out = append(out, s[i:j+1])
	}
	return out
}

// rawOutput is Output as a reviewer may write it.
type rawOutput struct {
	Findings               []rawFinding `json:"findings"`
	OverallCorrectness     any          `json:"overall_correctness"`
	OverallExplanation     any          `json:"overall_explanation"`
	OverallConfidenceScore any          `json:"overall_confidence_score"`
}

type rawFinding struct {
	Title           any `json:"title"`
	Body            any `json:"body"`
	ConfidenceScore any `json:"confidence_score"`
	Priority        any `json:"priority"`
	CodeLocation    *struct {
		AbsoluteFilePath any `json:"absolute_file_path"`
		LineRange        *struct {
			Start any `json:"start"`
			End   any `json:"end"`
		} `json:"line_range"`
	} `json:"code_location"`
}

// parseJSON decodes s as a review; ok is false when s is not a JSON object
// with findings or an explanation.
func parseJSON(s string) (Output, bool) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &keys); err != nil {
		return Output{}, false
	}
	_, hasFindings := keys["findings"]
	_, hasExplanation := keys["overall_explanation"]
	if !hasFindings && !hasExplanation {
		return Output{}, false
	}
	var raw rawOutput
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return Output{}, false
	}
	o := Output{
		Findings:               make([]Finding, 0, len(raw.Findings)),
		OverallCorrectness:     text(raw.OverallCorrectness),
		OverallExplanation:     text(raw.OverallExplanation),
		OverallConfidenceScore: number(raw.OverallConfidenceScore),
	}
	for _, rf := range raw.Findings {
		f := Finding{Title: text(rf.Title), Body: text(rf.Body), ConfidenceScore: number(rf.ConfidenceScore), Priority: priority(rf.Priority)}
		if loc := rf.CodeLocation; loc != nil {
			f.CodeLocation.AbsoluteFilePath = text(loc.AbsoluteFilePath)
			if lr := loc.LineRange; lr != nil {
				f.CodeLocation.LineRange = LineRange{Start: int(number(lr.Start)), End: int(number(lr.End))}
			}
		}
		o.Findings = append(o.Findings, f)
	}
	return o, true
}

func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func number(v any) float64 {
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case string:
		f, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// priority reads 0 to 3, or a tag "P0" to "P3".
func priority(v any) *int {
	var n int
	switch v := v.(type) {
	case float64:
		if v != math.Trunc(v) {
			return nil
		}
		n = int(v)
	case string:
		s := strings.TrimPrefix(strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(v)), "["), "P")
		var err error
		if n, err = strconv.Atoi(strings.TrimSuffix(s, "]")); err != nil {
			return nil
		}
	default:
		return nil
	}
	if n < 0 || n > 3 {
		return nil
	}
	return &n
}

// Render is the review as the user reads it (the exitedReviewMode item
// and the agent message): the explanation, then the findings under
// "Review comment:" (one) or "Full review comments:" (several), each as
// "- <title> — <file>:<start>-<end>" with its body indented below, the
// layout the reference's clients and scripts read.
func (o Output) Render() string {
	var parts []string
	if e := strings.TrimSpace(o.OverallExplanation); e != "" {
		parts = append(parts, e)
	}
	if len(o.Findings) > 0 {
		parts = append(parts, findingsBlock(o.Findings))
	}
	if len(parts) == 0 {
		return NoReview
	}
	return strings.Join(parts, "\n\n")
}

func findingsBlock(fs []Finding) string {
	heading := "Full review comments:"
	if len(fs) == 1 {
		heading = "Review comment:"
	}
	items := make([]string, 0, len(fs))
	for _, f := range fs {
		items = append(items, f.render())
	}
	return heading + "\n\n" + strings.Join(items, "\n\n")
}

func (f Finding) render() string {
	var sb strings.Builder
	sb.WriteString("- ")
	sb.WriteString(strings.TrimSpace(f.Title))
	if loc := f.CodeLocation; loc.AbsoluteFilePath != "" {
		sb.WriteString(" — ")
		sb.WriteString(loc.AbsoluteFilePath)
		if r := loc.LineRange; r.Start > 0 {
			fmt.Fprintf(&sb, ":%d-%d", r.Start, max(r.End, r.Start))
		}
	}
	body := strings.TrimSpace(f.Body)
	if body == "" {
		return sb.String()
	}
	for _, l := range strings.Split(body, "\n") {
		sb.WriteString("\n")
		if l = strings.TrimRight(l, " \t"); l != "" {
			sb.WriteString("  ")
			sb.WriteString(l)
		}
	}
	return sb.String()
}
