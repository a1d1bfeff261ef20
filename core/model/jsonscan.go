package model

import (
	"errors"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small JSON scanner for the top level of one SSE event.
//
// Why not encoding/json: a text delta is about 150 bytes of JSON and the
// model sends hundreds of them a second; json.Unmarshal costs several
// allocations and a reflection walk per event. The scanner walks the object
// once, returns strings as substrings of the event data when they need no
// unescaping (the common case, so no allocation), and hands nested values
// ("item", "response") back as raw spans for encoding/json to decode, since
// those arrive a few times per response only.
//
// Semantics follow encoding/json where it matters: keys are matched
// exactly (a later duplicate wins), null leaves a field empty, invalid UTF-8
// in strings becomes U+FFFD, and lone surrogates in \u escapes become
// U+FFFD. Nested values that are skipped are checked only for balanced
// brackets and well-formed strings.

var (
	errJSONSyntax      = errors.New("malformed JSON")
	errJSONNotObject   = errors.New("event data is not a JSON object")
	errJSONNotString   = errors.New("expected a JSON string")
	errJSONNotInt      = errors.New("expected a JSON integer")
	errJSONUnterminate = errors.New("unterminated JSON string")
	errJSONControlChar = errors.New("control character in JSON string")
	errJSONTooDeep     = errors.New("JSON nested too deeply")
)

// maxJSONDepth bounds nesting in skipped values, as encoding/json does.
const maxJSONDepth = 10000

// objectIter walks the members of one JSON object. After next returns a key,
// the caller consumes the value starting at it.i and stores the index after it
// back into it.i.
type objectIter struct {
	s     string
	i     int
	err   error
	count int
}

// startObject positions an iterator after the opening brace at s[i].
func startObject(s string, i int) objectIter {
	i = skipSpace(s, i)
	if i >= len(s) || s[i] != '{' {
		return objectIter{s: s, i: i, err: errJSONNotObject}
	}
	return objectIter{s: s, i: i + 1}
}

// next returns the next key, or false at the closing brace or on error
// (it.err tells which).
func (it *objectIter) next() (string, bool) {
	if it.err != nil {
		return "", false
	}
	s := it.s
	i := skipSpace(s, it.i)
	if i >= len(s) {
		it.err = errJSONSyntax
		return "", false
	}
	if s[i] == '}' {
		it.i = i + 1
		return "", false
	}
	if it.count > 0 {
		if s[i] != ',' {
			it.err = errJSONSyntax
			return "", false
		}
		i = skipSpace(s, i+1)
	}
	if i >= len(s) || s[i] != '"' {
		it.err = errJSONSyntax
		return "", false
	}
	key, j, err := scanString(s, i)
	if err != nil {
		it.err = err
		return "", false
	}
	j = skipSpace(s, j)
	if j >= len(s) || s[j] != ':' {
		it.err = errJSONSyntax
		return "", false
	}
	it.i = skipSpace(s, j+1)
	it.count++
	return key, true
}

// stringValue consumes a string or null value.
func (it *objectIter) stringValue() string {
	if it.err != nil {
		return ""
	}
	s, i := it.s, it.i
	if i < len(s) && s[i] == '"' {
		v, j, err := scanString(s, i)
		it.i, it.err = j, err
		return v
	}
	if j, ok := scanLiteral(s, i, "null"); ok {
		it.i = j
		return ""
	}
	it.err = errJSONNotString
	return ""
}

// intValue consumes an integer or null value.
func (it *objectIter) intValue() int {
	if it.err != nil {
		return 0
	}
	if j, ok := scanLiteral(it.s, it.i, "null"); ok {
		it.i = j
		return 0
	}
	v, j, err := scanInt(it.s, it.i)
	it.i, it.err = j, err
	return v
}

// boolValue consumes a boolean or null value; null yields (false, false).
func (it *objectIter) boolValue() (v, ok bool) {
	if it.err != nil {
		return false, false
	}
	if j, isLit := scanLiteral(it.s, it.i, "true"); isLit {
		it.i = j
		return true, true
	}
	if j, isLit := scanLiteral(it.s, it.i, "false"); isLit {
		it.i = j
		return false, true
	}
	if j, isLit := scanLiteral(it.s, it.i, "null"); isLit {
		it.i = j
		return false, false
	}
	it.err = errJSONSyntax
	return false, false
}

// rawValue consumes any value and returns its text; null yields "".
func (it *objectIter) rawValue() string {
	if it.err != nil {
		return ""
	}
	start := it.i
	j, err := skipValue(it.s, start)
	it.i, it.err = j, err
	if err != nil {
		return ""
	}
	if v := it.s[start:j]; v != "null" {
		return v
	}
	return ""
}

// skip consumes any value.
func (it *objectIter) skip() {
	if it.err != nil {
		return
	}
	it.i, it.err = skipValue(it.s, it.i)
}

// end checks that only whitespace follows the object.
func (it *objectIter) end() error {
	if it.err != nil {
		return it.err
	}
	if skipSpace(it.s, it.i) != len(it.s) {
		return errJSONSyntax
	}
	return nil
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func scanLiteral(s string, i int, lit string) (int, bool) {
	if len(s)-i >= len(lit) && s[i:i+len(lit)] == lit {
		return i + len(lit), true
	}
	return i, false
}

// scanString decodes the string starting with the quote at s[i] and returns
// it with the index after the closing quote. Plain ASCII without escapes,
// the common case, is returned as a substring of s.
func scanString(s string, i int) (string, int, error) {
	for j := i + 1; j < len(s); j++ {
		if plain[s[j]] {
			continue
		}
		if s[j] == '"' {
			return s[i+1 : j], j + 1, nil
		}
		return scanStringSlow(s, i)
	}
	return "", len(s), errJSONUnterminate
}

// plain marks the bytes a string can hold as they are: printable ASCII
// other than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func scanStringSlow(s string, i int) (string, int, error) {
	escaped := false
	for j := i + 1; j < len(s); {
		switch c := s[j]; {
		case c == '"':
			raw := s[i+1 : j]
			if !escaped && utf8.ValidString(raw) {
				return raw, j + 1, nil
			}
			v, err := unquote(raw)
			return v, j + 1, err
		case c == '\\':
			escaped = true
			j += 2
		case c < 0x20:
			return "", j, errJSONControlChar
		default:
			j++
		}
	}
	return "", len(s), errJSONUnterminate
}

// skipString returns the index after the string starting at s[i].
func skipString(s string, i int) (int, error) {
	for j := i + 1; j < len(s); {
		switch c := s[j]; {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			j += 2
		case c < 0x20:
			return j, errJSONControlChar
		default:
			j++
		}
	}
	return len(s), errJSONUnterminate
}

// unquote decodes the escapes of a string body (without its quotes).
func unquote(raw string) (string, error) {
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 >= len(raw) {
				return "", errJSONSyntax
			}
			switch e := raw[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(raw, i+2)
				if r < 0 {
					return "", errJSONSyntax
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2 = hex4(raw, i+2)
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", errJSONSyntax
			}
			i += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(raw[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, raw[i:i+size]...)
			}
			i += size
		}
	}
	return string(b), nil
}

// hex4 decodes the four hex digits at s[i:], or returns -1.
func hex4(s string, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// scanInt reads a JSON integer at s[i]. Fractions and exponents are
// rejected, as encoding/json does for an int field.
func scanInt(s string, i int) (int, int, error) {
	j := i
	neg := false
	if j < len(s) && s[j] == '-' {
		neg = true
		j++
	}
	start := j
	var n uint64
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		d := uint64(s[j] - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, j, errJSONNotInt
		}
		n = n*10 + d
		j++
	}
	if j == start || (j < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E')) {
		return 0, j, errJSONNotInt
	}
	switch {
	case !neg && n <= math.MaxInt:
		return int(n), j, nil
	case neg && n <= -math.MinInt:
		return int(-n), j, nil
	}
	return 0, j, errJSONNotInt
}

// skipValue returns the index after the value starting at s[i].
func skipValue(s string, i int) (int, error) {
	if i >= len(s) {
		return i, errJSONSyntax
	}
	switch c := s[i]; c {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				k, err := skipString(s, j)
				if err != nil {
					return k, err
				}
				j = k - 1
			case '{', '[':
				depth++
				if depth > maxJSONDepth {
					return j, errJSONTooDeep
				}
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return len(s), errJSONSyntax
	case 't':
		if j, ok := scanLiteral(s, i, "true"); ok {
			return j, nil
		}
	case 'f':
		if j, ok := scanLiteral(s, i, "false"); ok {
			return j, nil
		}
	case 'n':
		if j, ok := scanLiteral(s, i, "null"); ok {
			return j, nil
		}
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			j := i + 1
			for j < len(s) {
				d := s[j]
				if ('0' <= d && d <= '9') || d == '.' || d == 'e' || d == 'E' || d == '+' || d == '-' {
					j++
					continue
				}
				break
			}
			return j, nil
		}
	}
	return i, errJSONSyntax
}
