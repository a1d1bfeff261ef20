package review

import (
	"strings"
	"testing"
)

const oneFinding = `{"findings":[{"title":"[P1] Bad thing","body":"It breaks.","confidence_score":0.8,"priority":1,"code_location":{"absolute_file_path":"/r/a.txt","line_range":{"start":2,"end":3}}}],"overall_correctness":"patch is incorrect","overall_explanation":"One bug.","overall_confidence_score":0.7}`

// The reviewer's JSON becomes structured findings, rendered in the
// layout clients read.
func TestParseAndRenderOneFinding(t *testing.T) {
	o := Parse(oneFinding)
	if len(o.Findings) != 1 || o.OverallCorrectness != "patch is incorrect" || o.OverallConfidenceScore != 0.7 {
		t.Fatalf("parsed %+v", o)
	}
	f := o.Findings[0]
	if f.Title != "[P1] Bad thing" || f.Body != "It breaks." || f.ConfidenceScore != 0.8 || f.Priority == nil || *f.Priority != 1 ||
		f.CodeLocation.AbsoluteFilePath != "/r/a.txt" || f.CodeLocation.LineRange != (LineRange{2, 3}) {
		t.Fatalf("finding %+v", f)
	}
	want := "One bug.\n\nReview comment:\n\n- [P1] Bad thing — /r/a.txt:2-3\n  It breaks."
	if got := o.Render(); got != want {
		t.Fatalf("render:\n%q\nwant\n%q", got, want)
	}
}

func TestRenderSeveralFindings(t *testing.T) {
	p2 := 2
	o := Output{OverallExplanation: "Two problems.", Findings: []Finding{
		{Title: "First", Body: "Line one.\n\nLine two.", CodeLocation: Location{AbsoluteFilePath: "/a.go", LineRange: LineRange{4, 4}}},
		{Title: "Second", Priority: &p2},
	}}
	want := "Two problems.\n\nFull review comments:\n\n- First — /a.go:4-4\n  Line one.\n\n  Line two.\n\n- Second"
	if got := o.Render(); got != want {
		t.Fatalf("render:\n%q\nwant\n%q", got, want)
	}
	if got := (Output{}).Render(); got != NoReview {
		t.Fatalf("empty review renders %q", got)
	}
}

// JSON in a fence or amid text is found; numbers as strings and
// priorities as tags are read; other text is kept whole.
func TestParseTolerance(t *testing.T) {
	fenced := "```json\n" + oneFinding + "\n```"
	amid := "Here is my review:\n" + oneFinding + "\nThanks."
	for name, in := range map[string]string{"fenced": fenced, "amid text": amid} {
		if o := Parse(in); len(o.Findings) != 1 || o.OverallExplanation != "One bug." {
			t.Errorf("%s: %+v", name, o)
		}
	}
	loose := Parse(`{"findings":[{"title":"T","body":"B","confidence_score":"0.5","priority":"P2","code_location":{"absolute_file_path":"/x","line_range":{"start":"7","end":9}}}],"overall_explanation":"E"}`)
	f := loose.Findings[0]
	if f.ConfidenceScore != 0.5 || f.Priority == nil || *f.Priority != 2 || f.CodeLocation.LineRange != (LineRange{7, 9}) {
		t.Fatalf("loose finding %+v", f)
	}
	if p := Parse(`{"findings":[{"title":"T","priority":9}]}`).Findings[0].Priority; p != nil {
		t.Fatalf("priority 9 read as %d", *p)
	}
	plain := Parse("  Looks fine to me.\n")
	if len(plain.Findings) != 0 || plain.OverallExplanation != "Looks fine to me." || plain.Render() != "Looks fine to me." {
		t.Fatalf("plain text %+v", plain)
	}
	other := Parse(`{"answer": 42}`)
	if other.OverallExplanation != `{"answer": 42}` || len(other.Findings) != 0 {
		t.Fatalf("unrelated JSON %+v", other)
	}
	if got := Parse("").Render(); got != NoReview {
		t.Fatalf("empty answer renders %q", got)
	}
}

func TestResultsMessageCarriesTheReview(t *testing.T) {
	m := ResultsMessage("current changes", "One bug.")
	if !strings.Contains(m, "current changes") || !strings.Contains(m, "One bug.") {
		t.Fatalf("results message %q", m)
	}
}
