package protocol

import (
	"encoding/json"
	jsonv2 "encoding/json/v2"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Decoding is two passes. The first walks the raw JSON along the target's
// Shape without building anything and reports the first problem the way the
// reference server (serde) words it; the second is encoding/json/v2, which
// matches names case-sensitively and ignores unknown fields, like serde.
// The first pass allocates almost nothing, so the pair costs about what
// encoding/json alone does (see BenchmarkDecodeParams).

// decodeError is a params problem worded like serde's messages, without the
// "Invalid request: " prefix that DecodeParams adds.
type decodeError struct{ msg string }

func (e *decodeError) Error() string { return e.msg }

// Unmarshal decodes data into v, a non-nil pointer to one of this package's
// types, checking first what the reference checks: required fields are
// present, types match, enum values and union tags are known. The error then
// names the problem as the reference does ("missing field `threadId`",
// "invalid type: integer `123`, expected a string"). Unknown fields are ignored.
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("protocol: Unmarshal needs a non-nil pointer")
	}
	if err := validate(data, ShapeOf(rv.Type().Elem())); err != nil {
		return err
	}
	if err := jsonv2.Unmarshal(data, v); err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			return de
		}
		return &decodeError{err.Error()}
	}
	return nil
}

// absent reports whether raw params are missing: empty, white space or null.
func absent(raw []byte) bool {
	d := scanner{data: raw}
	if d.atEnd() {
		return true
	}
	return d.peek() == 'n' && d.literal("null") == nil && d.atEnd()
}

func validate(data []byte, s *Shape) error {
	d := scanner{data: data}
	if err := d.value(s); err != nil {
		return err
	}
	d.ws()
	if d.pos != len(d.data) {
		return d.syntax("trailing characters")
	}
	return nil
}

// scanner walks JSON text. Its methods leave pos after what they read.
type scanner struct {
	data []byte
	pos  int
}

func (d *scanner) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// atEnd skips white space and reports whether the input is used up.
func (d *scanner) atEnd() bool {
	d.ws()
	return d.pos >= len(d.data)
}

// peek skips white space and returns the next byte, or 0 at the end.
func (d *scanner) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

func (d *scanner) syntax(what string) error {
	line, col := 1, 1
	for _, c := range d.data[:min(d.pos, len(d.data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &decodeError{fmt.Sprintf("%s at line %d column %d", what, line, col)}
}

func (d *scanner) expect(c byte) error {
	if d.peek() != c {
		return d.syntax(fmt.Sprintf("expected `%c`", c))
	}
	d.pos++
	return nil
}

// str reads a string and returns its raw contents and whether it has escapes.
func (d *scanner) str() ([]byte, bool, error) {
	if d.peek() != '"' {
		return nil, false, d.syntax("expected string")
	}
	d.pos++
	start, esc := d.pos, false
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; {
		case c == '"':
			d.pos++
			return d.data[start : d.pos-1], esc, nil
		case c == '\\':
			esc = true
			d.pos += 2
		case c < 0x20:
			return nil, false, d.syntax("control character in string")
		default:
			d.pos++
		}
	}
	return nil, false, d.syntax("EOF while parsing a string")
}

// text reads a string and returns it unescaped.
func (d *scanner) text() (string, error) {
	start := d.pos
	raw, esc, err := d.str()
	if err != nil || !esc {
		return string(raw), err
	}
	var s string
	if err := jsonv2.Unmarshal(d.data[start:d.pos], &s); err != nil {
		return "", d.syntax("invalid escape")
	}
	return s, nil
}

// key reads an object key and the colon after it.
func (d *scanner) key() ([]byte, error) {
	raw, esc, err := d.str()
	if err != nil {
		return nil, err
	}
	if esc {
		var s string
		if err := jsonv2.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s); err != nil {
			return nil, d.syntax("invalid escape")
		}
		raw = []byte(s)
	}
	return raw, d.expect(':')
}

// number reads a number and reports whether it has a fraction or exponent.
func (d *scanner) number() ([]byte, bool, error) {
	start, float := d.pos, false
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	digits := 0
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && float):
			float = true
		default:
			goto done
		}
		d.pos++
	}
done:
	if digits == 0 {
		return nil, false, d.syntax("invalid number")
	}
	return d.data[start:d.pos], float, nil
}

func (d *scanner) literal(word string) error {
	if !strings.HasPrefix(string(d.data[d.pos:min(len(d.data), d.pos+len(word))]), word) {
		return d.syntax("expected value")
	}
	d.pos += len(word)
	return nil
}

// skip reads one value of any kind.
func (d *scanner) skip() error {
	switch c := d.peek(); c {
	case '"':
		_, _, err := d.str()
		return err
	case '{', '[':
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		d.pos++
		if d.peek() == close {
			d.pos++
			return nil
		}
		for {
			if c == '{' {
				if _, err := d.key(); err != nil {
					return err
				}
			}
			if err := d.skip(); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.pos++
			case close:
				d.pos++
				return nil
			default:
				return d.syntax(fmt.Sprintf("expected `,` or `%c`", close))
			}
		}
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	default:
		if d.atEnd() {
			return d.syntax("EOF while parsing a value")
		}
		_, _, err := d.number()
		return err
	}
}

// unexpected reads the next value and describes it like serde's Unexpected
// (what the client sent is cut to MaxEcho bytes).
func (d *scanner) unexpected() (string, error) {
	switch c := d.peek(); c {
	case '"':
		s, err := d.text()
		return "string " + strconv.Quote(Cut(s)), err
	case '{':
		return "map", d.skip()
	case '[':
		return "sequence", d.skip()
	case 't', 'f':
		err := d.skip()
		return fmt.Sprintf("boolean `%v`", c == 't'), err
	case 'n':
		return "null", d.skip()
	default:
		lit, float, err := d.number()
		if err != nil {
			return "", err
		}
		if float {
			return "floating point `" + formatFloat(lit) + "`", nil
		}
		return "integer `" + Cut(string(lit)) + "`", nil
	}
}

// formatFloat prints a number the way serde_json's ryu does: 1.0, 1.5, 1e21.
func formatFloat(lit []byte) string {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return Cut(string(lit))
	}
	if a := math.Abs(f); a != 0 && (a < 1e-5 || a >= 1e16) {
		return strings.Replace(strconv.FormatFloat(f, 'e', -1, 64), "e+", "e", 1)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func (d *scanner) invalidType(expected string) error {
	what, err := d.unexpected()
	if err != nil {
		return err
	}
	return &decodeError{"invalid type: " + what + ", expected " + expected}
}

func unknownVariant(v string, names []string) error {
	v = Cut(v)
	if len(names) == 0 {
		return &decodeError{fmt.Sprintf("unknown variant `%s`, there are no variants", v)}
	}
	return &decodeError{fmt.Sprintf("unknown variant `%s`, expected %s", v, oneOf(names))}
}

// oneOf words a list of names like serde's OneOf.
func oneOf(names []string) string {
	switch len(names) {
	case 1:
		return "`" + names[0] + "`"
	case 2:
		return "`" + names[0] + "` or `" + names[1] + "`"
	}
	return "one of `" + strings.Join(names, "`, `") + "`"
}

// value checks one value against s.
func (d *scanner) value(s *Shape) error {
	c := d.peek()
	if d.atEnd() {
		return d.syntax("EOF while parsing a value")
	}
	if c == 'n' && s.Kind != KindCustom {
		if s.acceptsNull() {
			return d.literal("null")
		}
		return d.invalidType(s.expected())
	}
	switch s.Kind {
	case KindAny:
		return d.skip()
	case KindPointer:
		return d.value(s.Elem)
	case KindString, KindEnum:
		if c != '"' {
			return d.invalidType(s.expected())
		}
		if s.Kind == KindString && s.check == nil {
			_, _, err := d.str()
			return err
		}
		v, err := d.text()
		if err != nil {
			return err
		}
		if s.Kind == KindEnum && !contains(s.Values, v) {
			return unknownVariant(v, s.Values)
		}
		if s.check != nil {
			return s.check(v)
		}
		return nil
	case KindBool:
		if c != 't' && c != 'f' {
			return d.invalidType(s.expected())
		}
		return d.skip()
	case KindInt, KindUint, KindFloat:
		if c != '-' && (c < '0' || c > '9') {
			return d.invalidType(s.expected())
		}
		start := d.pos
		lit, float, err := d.number()
		if err != nil || s.Kind == KindFloat {
			return err
		}
		if float {
			d.pos = start
			return d.invalidType(s.expected())
		}
		if !intInRange(lit, s) {
			return &decodeError{"invalid value: integer `" + Cut(string(lit)) + "`, expected " + s.expected()}
		}
		return nil
	case KindSlice:
		if c != '[' {
			return d.invalidType(s.expected())
		}
		d.pos++
		if d.peek() == ']' {
			d.pos++
			return nil
		}
		for {
			if err := d.value(s.Elem); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.pos++
			case ']':
				d.pos++
				return nil
			default:
				return d.syntax("expected `,` or `]`")
			}
		}
	case KindMap:
		if c != '{' {
			return d.invalidType(s.expected())
		}
		d.pos++
		if d.peek() == '}' {
			d.pos++
			return nil
		}
		for {
			if _, err := d.key(); err != nil {
				return err
			}
			if err := d.value(s.Elem); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.pos++
			case '}':
				d.pos++
				return nil
			default:
				return d.syntax("expected `,` or `}`")
			}
		}
	case KindStruct:
		if c != '{' {
			return d.invalidType(s.expected())
		}
		return d.object(s, nil, "")
	case KindTagged:
		if c != '{' {
			return d.invalidType(s.expected())
		}
		v, err := d.variant(s)
		if err != nil {
			return err
		}
		return d.object(v.Shape, s, "type")
	case KindKeyed:
		return d.keyed(s, c)
	case KindCustom:
		start := d.pos
		if err := d.skip(); err != nil {
			return err
		}
		u := reflect.New(s.Type).Interface().(json.Unmarshaler)
		if err := u.UnmarshalJSON(d.data[start:d.pos]); err != nil {
			var de *decodeError
			if errors.As(err, &de) {
				return de
			}
			return &decodeError{err.Error()}
		}
		return nil
	}
	return fmt.Errorf("protocol: no decoder for %v", s.Type)
}

func (s *Shape) acceptsNull() bool {
	switch s.Kind {
	case KindPointer, KindAny:
		return true
	case KindSlice, KindMap:
		return !s.nonNull
	}
	return false
}

func intInRange(lit []byte, s *Shape) bool {
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	var mag uint64
	for _, c := range digits {
		if mag > (math.MaxUint64-uint64(c-'0'))/10 {
			return false
		}
		mag = mag*10 + uint64(c-'0')
	}
	bits := s.Bits
	if bits == 0 {
		bits = 64
	}
	if s.Kind == KindUint {
		if neg {
			return mag == 0
		}
		return bits == 64 || mag <= 1<<bits-1
	}
	if neg {
		return mag <= 1<<(bits-1)
	}
	return mag <= 1<<(bits-1)-1
}

// object checks an object (d at '{') against struct shape s; common adds the
// fields shared by a tagged union's variants, and skipKey is the union tag.
func (d *scanner) object(s, common *Shape, skipKey string) error {
	d.pos++
	var buf [64]bool
	n := len(s.Fields)
	if common != nil {
		n += len(common.Fields)
	}
	var seen []bool
	if n <= len(buf) {
		seen = buf[:n]
	} else {
		seen = make([]bool, n)
	}
	if d.peek() == '}' {
		d.pos++
	} else {
		for {
			k, err := d.key()
			if err != nil {
				return err
			}
			f, i, ok := s.field(k)
			if !ok && common != nil {
				f, i, ok = common.field(k)
				i += len(s.Fields)
			}
			switch {
			case ok && string(k) != skipKey:
				if seen[i] {
					return &decodeError{"duplicate field `" + f.Name + "`"}
				}
				seen[i] = true
				if d.peek() == 'n' && !f.Nullable && f.Shape.Kind != KindCustom {
					return d.invalidType(f.Shape.expected())
				}
				if err := d.value(f.Shape); err != nil {
					return err
				}
			default:
				if err := d.skip(); err != nil {
					return err
				}
			}
			switch d.peek() {
			case ',':
				d.pos++
				continue
			case '}':
				d.pos++
			default:
				return d.syntax("expected `,` or `}`")
			}
			break
		}
	}
	for i, f := range s.Fields {
		if f.Required && !seen[i] {
			return &decodeError{"missing field `" + f.Name + "`"}
		}
	}
	if common != nil {
		for i, f := range common.Fields {
			if f.Required && !seen[len(s.Fields)+i] {
				return &decodeError{"missing field `" + f.Name + "`"}
			}
		}
	}
	return nil
}

// variant finds the "type" of the tagged object at d and returns its
// variant, leaving d where it was.
func (d *scanner) variant(s *Shape) (*Variant, error) {
	start := d.pos
	defer func() { d.pos = start }()
	d.pos++
	if d.peek() != '}' {
		for {
			k, err := d.key()
			if err != nil {
				return nil, err
			}
			if string(k) == "type" {
				if d.peek() != '"' {
					return nil, d.invalidType("variant identifier")
				}
				tag, err := d.text()
				if err != nil {
					return nil, err
				}
				i, ok := s.byName[tag]
				if !ok {
					return nil, unknownVariant(tag, variantNames(s))
				}
				return &s.Variants[i], nil
			}
			if err := d.skip(); err != nil {
				return nil, err
			}
			if d.peek() != ',' {
				break
			}
			d.pos++
		}
	}
	if s.untagged != 0 {
		return &s.Variants[s.untagged-1], nil
	}
	return nil, &decodeError{"missing field `type`"}
}

// keyed checks a keyed union: a plain string or {"name": value}.
func (d *scanner) keyed(s *Shape, c byte) error {
	switch c {
	case '"':
		v, err := d.text()
		if err != nil {
			return err
		}
		if s.Unit == nil || (s.Unit.Kind == KindEnum && !contains(s.Unit.Values, v)) {
			return unknownVariant(v, variantNames(s))
		}
		return nil
	case '{':
		d.pos++
		if d.peek() == '}' {
			return &decodeError{"invalid value: map, expected map with a single key"}
		}
		k, err := d.key()
		if err != nil {
			return err
		}
		i, ok := s.byName[string(k)]
		if !ok {
			return unknownVariant(string(k), variantNames(s))
		}
		if err := d.value(s.Variants[i].Shape); err != nil {
			return err
		}
		if d.peek() != '}' {
			return &decodeError{"invalid value: map, expected map with a single key"}
		}
		d.pos++
		return nil
	}
	return d.invalidType(s.expected())
}
