package patch

import (
	"slices"
	"strings"
	"unicode"
)

// fileText is a file's content split into lines for matching.
type fileText struct {
	lines        []string // without "\n" (a CRLF file's lines keep "\r")
	newlineAtEnd bool
	crlf         bool
	norm         [tierCount][]string         // lines normalised per tier, on demand
	index        [tierCount]map[string][]int // tier's line → ascending indexes, on demand
}

func splitText(s string) *fileText {
	f := &fileText{newlineAtEnd: strings.HasSuffix(s, "\n")}
	if s == "" {
		return f
	}
	f.lines = strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	cr := 0
	for _, l := range f.lines {
		if strings.HasSuffix(l, "\r") {
			cr++
		}
	}
	// A file is CRLF when most of its lines are: new lines get "\r" too.
	f.crlf = cr*2 > len(f.lines)
	return f
}

// A tier is one level of leniency in matching lines. Tiers are tried in
// order; the first that finds the lines wins.
type tier int

const (
	tierExact     tier = iota
	tierTrimRight      // ignore trailing whitespace (and CR)
	tierTrimSpace      // ignore leading and trailing whitespace
	tierFold           // also fold typographic punctuation to ASCII
	tierCount
)

func normalize(t tier, s string) string {
	switch t {
	case tierTrimRight:
		return strings.TrimRightFunc(s, unicode.IsSpace)
	case tierTrimSpace:
		return strings.TrimSpace(s)
	case tierFold:
		return foldPunctuation(strings.TrimSpace(s))
	}
	return s
}

func (f *fileText) tierLines(t tier) []string {
	if t == tierExact {
		return f.lines
	}
	if f.norm[t] == nil {
		n := make([]string, len(f.lines))
		for i, l := range f.lines {
			n[i] = normalize(t, l)
		}
		f.norm[t] = n
	}
	return f.norm[t]
}

// punctuation maps typographic characters models and editors substitute
// for ASCII ones.
var punctuation = strings.NewReplacer(
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'", "\u2032", "'",
	"\u201C", "\"", "\u201D", "\"", "\u201E", "\"", "\u201F", "\"", "\u2033", "\"",
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
	"\u2026", "...",
)

func foldPunctuation(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return punctuation.Replace(s)
		}
	}
	return s
}

// match is where a sequence of lines was found.
type match struct {
	at     int // first index, -1 when not found
	second int // a second index in the same tier, -1 when none
}

// seek looks for pat in f at or after from, tier by tier. With eof the
// lines must end the file. It stops at the first tier that finds them and
// reports a second occurrence in that tier, for ambiguity checks.
func (f *fileText) seek(pat []string, from int, eof, fold bool) match {
	if len(pat) == 0 {
		return match{at: -1, second: -1} // callers place empty hunks themselves
	}
	last := tierFold
	if !fold {
		last = tierTrimSpace
	}
	np := make([]string, len(pat))
	for t := tierExact; t <= last; t++ {
		for i, l := range pat {
			np[i] = normalize(t, l)
		}
		lines := f.tierLines(t)
		if eof {
			at := len(lines) - len(np)
			if at >= from && equalAt(lines, np, at) {
				return match{at: at, second: -1}
			}
			continue
		}
		m := match{at: -1, second: -1}
		// Candidates are where the first line occurs, from the index.
		cands := f.tierIndex(t)[np[0]]
		k, _ := slices.BinarySearch(cands, from)
		for _, i := range cands[k:] {
			if i+len(np) > len(lines) {
				break
			}
			if equalAt(lines, np, i) {
				if m.at < 0 {
					m.at = i
					continue
				}
				m.second = i
				break
			}
		}
		if m.at >= 0 {
			return m
		}
	}
	return match{at: -1, second: -1}
}

func (f *fileText) tierIndex(t tier) map[string][]int {
	if f.index[t] == nil {
		idx := make(map[string][]int, len(f.lines))
		for i, l := range f.tierLines(t) {
			idx[l] = append(idx[l], i)
		}
		f.index[t] = idx
	}
	return f.index[t]
}

func equalAt(lines, pat []string, at int) bool {
	for j, p := range pat {
		if lines[at+j] != p {
			return false
		}
	}
	return true
}
