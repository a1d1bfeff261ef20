package patch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigCase is a 10,000-line file and a patch of 100 hunks replacing 3 lines
// each (300 changed lines), spread over the whole file.
func bigCase() (content, patch string) {
	var file, p strings.Builder
	lines := make([]string, 10000)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %05d: some code that is long enough to look real()", i)
		file.WriteString(lines[i] + "\n")
	}
	p.WriteString("*** Begin Patch\n*** Update File: big.txt\n")
	for h := range 100 {
		at := h*100 + 50
		p.WriteString("@@\n")
		for i := at - 3; i < at; i++ {
			p.WriteString(" " + lines[i] + "\n")
		}
		for i := at; i < at+3; i++ {
			p.WriteString("-" + lines[i] + "\n")
		}
		for i := at; i < at+3; i++ {
			p.WriteString("+" + strings.ToUpper(lines[i]) + "\n")
		}
		for i := at + 3; i < at+6; i++ {
			p.WriteString(" " + lines[i] + "\n")
		}
	}
	p.WriteString("*** End Patch\n")
	return file.String(), p.String()
}

func BenchmarkParse10k(b *testing.B) {
	_, text := bigCase()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlan10k(b *testing.B) {
	content, text := bigCase()
	dir := b.TempDir()
	writeTree(b, dir, map[string]string{"big.txt": content})
	p := mustParse(b, text)
	for b.Loop() {
		if _, err := p.Plan(dir, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAndApply10k(b *testing.B) {
	content, text := bigCase()
	dir := b.TempDir()
	path := filepath.Join(dir, "big.txt")
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		p, err := Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Apply(dir, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTurnDiff10k(b *testing.B) {
	content, text := bigCase()
	dir := b.TempDir()
	writeTree(b, dir, map[string]string{"big.txt": content})
	tr := NewTurnDiffTracker(dir)
	pl, err := mustParse(b, text).Plan(dir, ApplyOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pl.Commit(); err != nil {
		b.Fatal(err)
	}
	tr.Track(pl)
	for b.Loop() {
		if _, err := tr.Diff(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPreviewDelta is the streaming preview's cost per model delta
// (8 bytes, about two tokens), with a snapshot whenever the preview
// changes, as a throttle-free caller would take.
func BenchmarkPreviewDelta(b *testing.B) {
	_, text := bigCase()
	const delta = 8
	deltas := 0
	for b.Loop() {
		sp := NewStreamParser()
		for i := 0; i < len(text); i += delta {
			if sp.Push(text[i:min(i+delta, len(text))]) {
				sp.Snapshot()
			}
			deltas++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(deltas), "ns/delta")
}
