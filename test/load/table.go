package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// row is one figure of one scenario.
type row struct {
	scenario string // as printed, with its sizes
	key      string // stable across runs at other sizes: the ratio's key
	figure   string
	value    float64
	unit     string // "ms", "µs", "KB", "MB", "s", "" (a count), "%"
	note     string // printed instead of a value when set and value is NaN
	nan      bool
}

func (r row) text() string {
	if r.nan {
		return r.note
	}
	var v string
	switch {
	case r.unit == "":
		v = thousands(int64(r.value + 0.5))
	case r.value >= 100:
		v = fmt.Sprintf("%.0f", r.value)
	case r.value >= 10:
		v = fmt.Sprintf("%.1f", r.value)
	default:
		v = fmt.Sprintf("%.2f", r.value)
	}
	if r.unit != "" {
		v += " " + r.unit
	}
	if r.note != "" {
		v += " (" + r.note + ")"
	}
	return v
}

// thousands writes n with commas.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// results is what one target's run measured, in order.
type results struct {
	target string
	rows   []row
}

func (r *results) find(key string) (row, bool) {
	for _, x := range r.rows {
		if x.key == key {
			return x, true
		}
	}
	return row{}, false
}

// printTable writes one Markdown table: agentd's figures, and when the
// reference ran, the reference's and agentd's at the reference's sizes
// (only when those differ) and the ratio agentd/reference. A figure one
// run has and another lacks (a scenario failed) is shown blank there.
func printTable(w io.Writer, agentd, agentdAtRef, ref *results) {
	header := []string{"scenario", "figure", "agentd"}
	runs := []*results{agentd}
	if ref != nil {
		if agentdAtRef != agentd {
			header = append(header, "agentd at the reference's sizes", "scenario at those sizes")
			runs = append(runs, agentdAtRef)
		}
		header = append(header, "reference", "agentd/reference")
		runs = append(runs, ref)
	}
	var lines [][]string
	for _, key := range mergedKeys(runs) {
		a, ok := agentd.find(key)
		first := a
		if !ok {
			first = firstWith(runs, key)
		}
		line := []string{first.scenario, first.figure, cell(a, ok)}
		if ref != nil {
			x, xok := ref.find(key)
			at, atok := agentdAtRef.find(key)
			if agentdAtRef != agentd {
				line = append(line, cell(at, atok), at.scenario)
			}
			q := ""
			if atok && xok {
				q = ratio(at, x)
			}
			line = append(line, cell(x, xok), q)
		}
		lines = append(lines, line)
	}
	writeMarkdown(w, header, lines)
}

func cell(r row, ok bool) string {
	if !ok {
		return ""
	}
	return r.text()
}

func firstWith(runs []*results, key string) row {
	for _, r := range runs {
		if x, ok := r.find(key); ok {
			return x
		}
	}
	return row{}
}

// mergedKeys lists every figure's key in the order of the runs: the
// first run's, then each key only a later run has, after the last key of
// its scenario (the part before "/").
func mergedKeys(runs []*results) []string {
	var keys []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, x := range r.rows {
			if seen[x.key] {
				continue
			}
			seen[x.key] = true
			slot, _, _ := strings.Cut(x.key, "/")
			at := len(keys)
			for i := len(keys) - 1; i >= 0; i-- {
				if s, _, _ := strings.Cut(keys[i], "/"); s == slot {
					at = i + 1
					break
				}
			}
			keys = slices.Insert(keys, at, x.key)
		}
	}
	return keys
}

// ratio is a/b for two measurements of the same unit; "" for counts
// (refusals, items read, …), where a ratio means nothing.
func ratio(a, b row) string {
	if a.nan || b.nan || a.unit != b.unit || b.value == 0 || a.unit == "" || a.unit == "%" {
		return ""
	}
	q := a.value / b.value
	switch {
	case q >= 10:
		return fmt.Sprintf("%.0f×", q)
	case q >= 0.1:
		return fmt.Sprintf("%.2f×", q)
	default:
		return fmt.Sprintf("%.3f×", q)
	}
}

func writeMarkdown(w io.Writer, header []string, lines [][]string) {
	width := make([]int, len(header))
	for _, l := range append([][]string{header}, lines...) {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	put := func(l []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range l {
			b.WriteString(" " + c + strings.Repeat(" ", width[i]-len([]rune(c))) + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	put(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	put(sep)
	// A scenario's name is printed on its first row only, and so is the
	// name at the reference's sizes.
	blank := []int{0}
	if len(header) > 4 && header[4] == "scenario at those sizes" {
		blank = append(blank, 4)
	}
	var last []string
	for _, l := range lines {
		shown := slices.Clone(l)
		for _, col := range blank {
			if last != nil && l[col] == last[col] {
				shown[col] = ""
			}
		}
		last = l
		put(shown)
	}
}

// percentiles of delays in ns, as milliseconds.
type spread struct {
	n             int
	p50, p99, max float64 // ms
}

func percentiles(ns []int64) spread {
	if len(ns) == 0 {
		return spread{}
	}
	slices.Sort(ns)
	at := func(p float64) float64 { return ms(time.Duration(ns[int(p*float64(len(ns)-1))])) }
	return spread{n: len(ns), p50: at(0.5), p99: at(0.99), max: ms(time.Duration(ns[len(ns)-1]))}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
